// RUN: attngen-opt %s -attn-configure -attn-tile -split-input-file | FileCheck %s

// A value head dim of its own (DeepSeek's 192/128): Q and K tiles are 192
// columns wide, the V tile and O's accumulator 128; the kernel takes the
// tiles of the wider head dim, d192's, and its problem says head_dim_v.

// sm_80: the PV GEMM's N is V's 128 columns, the store writes 128.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @d192v128_sm80
  // CHECK-SAME: attn.problem = #attn.problem<{{.*}}head_dim = 192,{{.*}} head_dim_v = 128,
  // CHECK: %[[Q:.*]] = attn.alloc_smem : !attn.smem<[[M:[0-9]+]]x192xbf16, swizzle = 128>
  // CHECK: %[[K:.*]] = attn.alloc_smem : !attn.smem<[[N:[0-9]+]]x192xbf16, swizzle = 128>
  // CHECK: %[[V:.*]] = attn.alloc_smem : !attn.smem<[[N]]x128xbf16, swizzle = 128>
  // CHECK: scf.for {{.*}} -> (!attn.regs<[[M]]x128xf32, acc>,
  // CHECK: attn.mma %[[Q]], %[[K]] {transpose_b} : !attn.smem<[[M]]x192xbf16, swizzle = 128>, !attn.smem<[[N]]x192xbf16, swizzle = 128> -> !attn.regs<[[M]]x[[N]]xf32, acc>
  // CHECK: attn.mma %{{.*}}, %[[V]], %{{.*}} : !attn.regs<[[M]]x[[N]]xbf16, operand_a>, !attn.smem<[[N]]x128xbf16, swizzle = 128>, !attn.regs<[[M]]x128xf32, acc> -> !attn.regs<[[M]]x128xf32, acc>
  // CHECK: attn.store %{{.*}} -> %arg3{{.*}} : !attn.regs<[[M]]x128xf32, acc>, memref<?x?x?x128xbf16>
  func.func @d192v128_sm80(%q: memref<?x?x?x192xbf16>, %k: memref<?x?x?x192xbf16>,
                           %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.0721688 : f32}
      : memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}

// -----

// sm_90a, varlen, V wider than Q (64/128): the V tile and the accumulator
// are 128 columns, Q and K 64.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @d64v128_sm90a_varlen
  // CHECK-SAME: head_dim = 64,{{.*}} varlen = true,{{.*}} head_dim_v = 128,
  // CHECK: attn.alloc_smem : !attn.smem<{{[0-9]+}}x64xbf16, swizzle = 128>
  // CHECK: attn.alloc_smem : !attn.smem<{{[0-9]+}}x64xbf16, swizzle = 128>
  // CHECK: %[[V:.*]] = attn.alloc_smem : !attn.smem<[[N:[0-9]+]]x128xbf16, swizzle = 128>
  // CHECK: attn.mma %{{.*}}, %[[V]], %{{.*}} : !attn.regs<{{[0-9]+}}x[[N]]xbf16, operand_a>, !attn.smem<[[N]]x128xbf16, swizzle = 128>, !attn.regs<{{[0-9]+}}x128xf32, acc>
  func.func @d64v128_sm90a_varlen(%q: memref<?x?x64xbf16>, %k: memref<?x?x64xbf16>,
                                  %v: memref<?x?x128xbf16>, %o: memref<?x?x128xbf16>,
                                  %cu_q: memref<?xi32>, %cu_k: memref<?xi32>) {
    attn.attention %q, %k, %v, %o varlen(%cu_q, %cu_k : memref<?xi32>, memref<?xi32>)
        {scale = 0.125 : f32}
      : memref<?x?x64xbf16>, memref<?x?x64xbf16>, memref<?x?x128xbf16>, memref<?x?x128xbf16>
    return
  }
}

// -----

// 96/64 on sm_90a: d96's tiles have 64-byte panels, a 64-column V would have
// 128-byte ones; the runtime encodes a kernel's TMA descriptors with one
// panel width, so every tile takes the one that divides both.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @d96v64_sm90a
  // CHECK: attn.alloc_smem : !attn.smem<{{[0-9]+}}x96xbf16, swizzle = 64>
  // CHECK: attn.alloc_smem : !attn.smem<{{[0-9]+}}x96xbf16, swizzle = 64>
  // CHECK: attn.alloc_smem : !attn.smem<{{[0-9]+}}x64xbf16, swizzle = 64>
  func.func @d96v64_sm90a(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>,
                          %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.102 : f32}
      : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
    return
  }
}
