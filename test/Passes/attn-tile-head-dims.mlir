// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -split-input-file | FileCheck %s
// RUN: attngen-opt %s -attn-configure -attn-tile -split-input-file | FileCheck %s --check-prefix=FA3

// Head dims that are not 64, 128 or 256. The Q, K and V tiles carry D
// rounded up to the MMA's 16-column k step, in the widest swizzle that
// divides it; the copies zero-fill the padding, the store writes D columns.

// d40 on sm_80: 48-column tiles of three 32-byte panels; S reduces over the
// three k steps of the padded tiles, O is exactly 40 columns wide (five
// 8-column blocks); d64's 128x96 with 4 warps.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @d40_sm80
  // CHECK-SAME: attn.tiling = #attn.tiling<block_m = 128, block_n = 96, num_warps = 4{{[^>]*}}>
  // CHECK: %[[Q:.*]] = attn.alloc_smem : !attn.smem<128x48xbf16, swizzle = 32>
  // CHECK: %[[K:.*]] = attn.alloc_smem : !attn.smem<96x48xbf16, swizzle = 32>
  // CHECK: %[[V:.*]] = attn.alloc_smem : !attn.smem<96x48xbf16, swizzle = 32>
  // CHECK: attn.copy_async %arg0{{.*}} -> %[[Q]] {{.*}} : memref<?x?x?x40xbf16>, !attn.smem<128x48xbf16, swizzle = 32>
  // CHECK: scf.for {{.*}} -> (!attn.regs<128x40xf32, acc>, !attn.regs<128xf32, row>, !attn.regs<128xf32, row>)
  // CHECK: attn.mma %[[Q]], %[[K]] {transpose_b} : !attn.smem<128x48xbf16, swizzle = 32>, !attn.smem<96x48xbf16, swizzle = 32> -> !attn.regs<128x96xf32, acc>
  // CHECK: attn.mma %{{.*}}, %[[V]], %{{.*}} : !attn.regs<128x96xbf16, operand_a>, !attn.smem<96x48xbf16, swizzle = 32>, !attn.regs<128x40xf32, acc> -> !attn.regs<128x40xf32, acc>
  // CHECK: attn.store %{{.*}} -> %arg3{{.*}} : !attn.regs<128x40xf32, acc>, memref<?x?x?x40xbf16>
  func.func @d40_sm80(%q: memref<?x?x?x40xbf16>, %k: memref<?x?x?x40xbf16>,
                      %v: memref<?x?x?x40xbf16>, %o: memref<?x?x?x40xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.158 : f32}
      : memref<?x?x?x40xbf16>, memref<?x?x?x40xbf16>, memref<?x?x?x40xbf16>, memref<?x?x?x40xbf16>
    return
  }
}

// -----

// d40 on sm_90a: the same tiles; O is 48 columns wide (wgmma reads the
// N-major V in whole 16-column panels) and the store writes 40 of them.
// With warp specialization it takes d64's shape (three consumer
// warpgroups on 192 rows).
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @d40_sm90a
  // CHECK-SAME: attn.tiling = #attn.tiling<block_m = 64, block_n = 128, num_warps = 4{{[^>]*}}>
  // CHECK: attn.alloc_smem : !attn.smem<64x48xf16, swizzle = 32>
  // CHECK: attn.mma %{{.*}}, %{{.*}}, %{{.*}} : !attn.regs<64x128xf16, operand_a>, !attn.smem<128x48xf16, swizzle = 32>, !attn.regs<64x48xf32, acc> -> !attn.regs<64x48xf32, acc>
  // CHECK: attn.store %{{.*}} : !attn.regs<64x48xf32, acc>, memref<?x?x?x40xf16>
  // FA3-LABEL: func.func @d40_sm90a
  // FA3-SAME: attn.tiling = #attn.tiling<block_m = 192, block_n = 128, num_warps = 12{{[^>]*}}>
  func.func @d40_sm90a(%q: memref<?x?x?x40xf16>, %k: memref<?x?x?x40xf16>,
                       %v: memref<?x?x?x40xf16>, %o: memref<?x?x?x40xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.158 : f32}
      : memref<?x?x?x40xf16>, memref<?x?x?x40xf16>, memref<?x?x?x40xf16>, memref<?x?x?x40xf16>
    return
  }
}

// -----

// d96: three 64-byte panels, no padding. sm_80 keeps FlashAttention-2's
// 128x64; sm_90a warp-specialized takes 128x144 with two consumer
// warpgroups (FlashAttention-3's 192x144 spills with P in registers).
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @d96_sm80
  // CHECK-SAME: attn.tiling = #attn.tiling<block_m = 128, block_n = 64, num_warps = 4{{[^>]*}}>
  // CHECK: attn.alloc_smem : !attn.smem<128x96xbf16, swizzle = 64>
  // CHECK: attn.alloc_smem : !attn.smem<64x96xbf16, swizzle = 64>
  // CHECK: attn.store %{{.*}} : !attn.regs<128x96xf32, acc>, memref<?x?x?x96xbf16>
  func.func @d96_sm80(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>,
                      %v: memref<?x?x?x96xbf16>, %o: memref<?x?x?x96xbf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.102 : f32}
      : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  // FA3-LABEL: func.func @d96_sm90a
  // FA3-SAME: attn.tiling = #attn.tiling<block_m = 128, block_n = 144, num_warps = 8{{[^>]*}}>
  // FA3: attn.alloc_smem : !attn.smem<128x96xbf16, swizzle = 64>
  // FA3: attn.alloc_smem : !attn.smem<144x96xbf16, swizzle = 64>
  // FA3: attn.mma %{{.*}}, %{{.*}}, %{{.*}} : !attn.regs<128x144xbf16, operand_a>, !attn.smem<144x96xbf16, swizzle = 64>, !attn.regs<128x96xf32, acc> -> !attn.regs<128x96xf32, acc>
  func.func @d96_sm90a(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>,
                       %v: memref<?x?x?x96xbf16>, %o: memref<?x?x?x96xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.102 : f32}
      : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>
    return
  }
}

// -----

// d192: three 128-byte panels. sm_80 takes FlashAttention-2's 8 warps x one
// slice; sm_90a warp-specialized 128x96 (128x128 would need 240 KB of
// shared memory with two K/V stages, FlashAttention-3's 128x112 spills).
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @d192_sm80
  // CHECK-SAME: attn.tiling = #attn.tiling<block_m = 128, block_n = 64, num_warps = 8{{[^>]*}}>
  // CHECK: attn.alloc_smem : !attn.smem<128x192xbf16, swizzle = 128>
  func.func @d192_sm80(%q: memref<?x?x?x192xbf16>, %k: memref<?x?x?x192xbf16>,
                       %v: memref<?x?x?x192xbf16>, %o: memref<?x?x?x192xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.072 : f32}
      : memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @d192_sm90a
  // CHECK-SAME: attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4{{[^>]*}}>
  // FA3-LABEL: func.func @d192_sm90a
  // FA3-SAME: attn.tiling = #attn.tiling<block_m = 128, block_n = 96, num_warps = 8{{[^>]*}}>
  // FA3: attn.alloc_smem : !attn.smem<96x192xbf16, swizzle = 128>
  func.func @d192_sm90a(%q: memref<?x?x?x192xbf16>, %k: memref<?x?x?x192xbf16>,
                        %v: memref<?x?x?x192xbf16>, %o: memref<?x?x?x192xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.072 : f32}
      : memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>
    return
  }
}

// -----

// d112 on sm_90a: seven 32-byte panels; warp-specialized it takes d128's
// shape, and on sm_80 d112 and d120 d128's 128x64.
module attributes {attn.target = #attn.target<sm_90a>} {
  // FA3-LABEL: func.func @d112_sm90a
  // FA3-SAME: attn.tiling = #attn.tiling<block_m = 128, block_n = 128, num_warps = 8{{[^>]*}}>
  // FA3: attn.alloc_smem : !attn.smem<128x112xbf16, swizzle = 32>
  func.func @d112_sm90a(%q: memref<?x?x?x112xbf16>, %k: memref<?x?x?x112xbf16>,
                        %v: memref<?x?x?x112xbf16>, %o: memref<?x?x?x112xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.0945 : f32}
      : memref<?x?x?x112xbf16>, memref<?x?x?x112xbf16>, memref<?x?x?x112xbf16>, memref<?x?x?x112xbf16>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @d120_sm80
  // CHECK-SAME: attn.tiling = #attn.tiling<block_m = 128, block_n = 64, num_warps = 4{{[^>]*}}>
  // CHECK-LABEL: func.func @d112_sm80
  // CHECK-SAME: attn.tiling = #attn.tiling<block_m = 128, block_n = 64, num_warps = 4{{[^>]*}}>
  func.func @d120_sm80(%q: memref<?x?x?x120xbf16>, %k: memref<?x?x?x120xbf16>,
                       %v: memref<?x?x?x120xbf16>, %o: memref<?x?x?x120xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.0913 : f32}
      : memref<?x?x?x120xbf16>, memref<?x?x?x120xbf16>, memref<?x?x?x120xbf16>, memref<?x?x?x120xbf16>
    return
  }
  func.func @d112_sm80(%q: memref<?x?x?x112xbf16>, %k: memref<?x?x?x112xbf16>,
                       %v: memref<?x?x?x112xbf16>, %o: memref<?x?x?x112xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.0945 : f32}
      : memref<?x?x?x112xbf16>, memref<?x?x?x112xbf16>, memref<?x?x?x112xbf16>, memref<?x?x?x112xbf16>
    return
  }
}
