// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -split-input-file | FileCheck %s
// RUN: attngen-opt %s -attn-configure="warp-specialize=false block-m=64 block-n=32 num-warps=4" -attn-tile -split-input-file | FileCheck %s --check-prefix=OVERRIDE

// FA2 tiling on sm_80 d128 (128 x 64, 4 warps): a grid over (query block, head, batch), Q copied
// once, a loop over key/value blocks with V_j and K_{j+1} copies overlapped. Each copy names
// its fill (block j is fill j; K_{j+1} fill j + 1), as each wait does.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @fwd
  // CHECK-SAME: attn.kernel
  // CHECK-SAME: attn.tiling = #attn.tiling<block_m = 128, block_n = 64, num_warps = 4{{[^>]*}}>
  // CHECK-DAG: %[[QB:.*]] = attn.program_id 0
  // CHECK-DAG: %[[H:.*]] = attn.program_id 1
  // CHECK-DAG: %[[B:.*]] = attn.program_id 2
  // CHECK: %[[Q:.*]] = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
  // CHECK: %[[K:.*]] = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
  // CHECK: %[[V:.*]] = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
  // CHECK: attn.copy_async %arg0[%[[B]], %{{.*}}, %[[H]]] -> %[[Q]] fill %[[C0:[^ ]*]] :
  // CHECK: attn.copy_async %arg1[%[[B]], %[[C0]], %{{.*}}] -> %[[K]] fill %[[C0]] :
  // CHECK: attn.wait %[[Q]], %[[C0]]
  // CHECK: scf.for %[[J:.*]] = {{.*}} iter_args({{.*}}) -> (!attn.regs<128x128xf32, acc>, !attn.regs<128xf32, row>, !attn.regs<128xf32, row>)
  // CHECK:   attn.wait %[[K]], %[[J]]
  // CHECK:   attn.copy_async %arg2{{.*}} -> %[[V]] fill %[[J]] :
  // CHECK:   %[[S:.*]] = attn.mma %[[Q]], %[[K]] {transpose_b} {{.*}} -> !attn.regs<128x64xf32, acc>
  // CHECK:   %[[SM:.*]] = attn.mask %[[S]]
  // CHECK-NOT: causal
  // CHECK:   attn.online_softmax %[[SM]]
  // CHECK:   attn.rescale
  // CHECK:   attn.convert {{.*}} -> !attn.regs<128x64xbf16, operand_a>
  // CHECK:   attn.wait %[[V]], %[[J]]
  // CHECK:   %[[NEXT:.*]] = arith.addi %[[J]], %{{.*}} : index
  // CHECK:   scf.if
  // CHECK:     attn.copy_async %arg1{{.*}} -> %[[K]] fill %[[NEXT]] :
  // CHECK:   attn.mma %{{.*}}, %[[V]], %{{.*}} : !attn.regs<128x64xbf16, operand_a>
  // CHECK: attn.softmax_finalize
  // CHECK: attn.store %{{.*}} -> %arg3[%[[B]], %{{.*}}, %[[H]]]
  // CHECK: attn.store_rows %{{.*}} -> %arg4[%[[B]], %[[H]], %{{.*}}]
  // OVERRIDE-LABEL: func.func @fwd
  // OVERRIDE-SAME: attn.tiling = #attn.tiling<block_m = 64, block_n = 32, num_warps = 4{{[^>]*}}>
  func.func @fwd(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                 %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>,
                 %lse: memref<?x?x?xf32>) {
    attn.attention %q, %k, %v, %o lse %lse {scale = 0.0883883 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>,
        memref<?x?x?x128xbf16>, memref<?x?x?xf32>
    return
  }
}

// -----

// sm_90a d64: one warpgroup, 64x128 tiles; the causal flag reaches the mask.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @causal
  // CHECK-SAME: attn.problem = #attn.problem<dtype = f16, head_dim = 64, causal = true, scale = 0.125, with_lse = false, causal_align = top_left,
  // CHECK-SAME: attn.tiling = #attn.tiling<block_m = 64, block_n = 128, num_warps = 4{{[^>]*}}>
  // CHECK: attn.mask {{.*}} {causal} : !attn.regs<64x128xf32, acc>
  // CHECK-NOT: attn.store_rows
  // OVERRIDE-LABEL: func.func @causal
  func.func @causal(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                    %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// Bottom-right causal: the query length reaches the mask, the alignment the
// kernel's attributes.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @bottom_right
  // CHECK-SAME: attn.problem = #attn.problem<dtype = f16, head_dim = 64, causal = true, scale = 0.125, with_lse = false, causal_align = bottom_right,
  // CHECK: %[[NQ:.*]] = memref.dim %arg0, %c1{{(_[0-9]+)?}} : memref<?x?x?x64xf16>
  // CHECK: attn.mask {{.*}} q_len %[[NQ]] {causal, causal_align = #attn.causal_align<bottom_right>}
  // OVERRIDE-LABEL: func.func @bottom_right
  func.func @bottom_right(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                          %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// Soft cap c = 30 with scale 0.125: attn.softcap takes tanh(s * 0.125 / 30)
// before the mask, and c replaces the scale in the online softmax and the
// LSE, so the softmax and the LSE see c * tanh(scale * s / c).
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @softcap
  // CHECK-SAME: scale = 0.125, with_lse = false, causal_align = top_left, softcap = 30.0,
  // CHECK: %[[S:.*]] = attn.mma
  // CHECK-NEXT: %[[T:.*]] = attn.softcap %[[S]] {scale = 0.00416666688 : f32}
  // CHECK-NEXT: %[[SM:.*]] = attn.mask %[[T]], {{.*}} {causal}
  // CHECK-NEXT: attn.online_softmax %[[SM]], {{.*}} {scale = 3.000000e+01 : f32}
  // CHECK: attn.softmax_finalize {{.*}} {scale = 3.000000e+01 : f32}
  // OVERRIDE-LABEL: func.func @softcap
  func.func @softcap(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                     %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.125 : f32, softcap = 30.0 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// A sliding window: the mask carries it (and the alignment with the query
// length, bottom-right), the kernel function carries it for the metadata.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @window
  // CHECK-SAME: causal_align = bottom_right, softcap = 0.0, window_left = 100, window_right = 50,
  // CHECK: %[[NQ:.*]] = memref.dim %arg0, %c1{{(_[0-9]+)?}} : memref<?x?x?x128xbf16>
  // CHECK: attn.mask %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} q_len %[[NQ]] {causal_align = #attn.causal_align<bottom_right>, window_left = 100 : i64, window_right = 50 : i64}
  func.func @window(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                    %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {causal_align = #attn.causal_align<bottom_right>, scale = 0.0883883 : f32,
                                   window_left = 100, window_right = 50}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}
