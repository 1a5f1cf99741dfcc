// RUN: attngen-opt %s -attn-configure -split-input-file | FileCheck %s
// RUN: attngen-opt %s -attn-configure="pingpong=false tma-store=false block-m=64 num-warps=4 stages=3" -split-input-file | FileCheck %s --check-prefix=ASKED

// sm_90a d128 causal: FlashAttention-3's tiles and every technique that
// applies (a persistent grid of causal units, the TMA epilogue); the masked
// blocks stay in the rotated loop. The options turn techniques off and
// override the tiles.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @causal
  // CHECK-SAME: attn.schedule = #attn.schedule<block_skip = true, warp_specialize = true, intra_wg_overlap = true, pingpong = true, tma_store = true, persistent = true, flush_denormals = true, exp2_emulated_eighths = 0, bounded_softmax = false, longest_first = false, prefetch_q = true>
  // CHECK-SAME: attn.tiling = #attn.tiling<block_m = 128, block_n = 128, num_warps = 8, stages = 2, peel_masked_blocks = false>
  // CHECK-NEXT: attn.attention
  // ASKED-LABEL: func.func @causal
  // ASKED-SAME: attn.schedule = #attn.schedule<block_skip = true, warp_specialize = true, intra_wg_overlap = true, pingpong = false, tma_store = false, persistent = true,
  // ASKED-SAME: attn.tiling = #attn.tiling<block_m = 64, block_n = 128, num_warps = 4, stages = 3, peel_masked_blocks = false>
  func.func @causal(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                    %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.0883883 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}

// -----

// sm_80: FlashAttention-2's tiles, two-stage K/V rings at d64, none of
// sm_90a's techniques; a soft cap of 30 on bf16 takes the fixed max.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @softcap
  // CHECK-SAME: attn.schedule = #attn.schedule<block_skip = true, warp_specialize = false, intra_wg_overlap = false, pingpong = false, tma_store = false, persistent = false, flush_denormals = true, exp2_emulated_eighths = 0, bounded_softmax = true, longest_first = false, prefetch_q = false>
  // CHECK-SAME: attn.tiling = #attn.tiling<block_m = 128, block_n = 96, num_warps = 4, stages = 2>
  func.func @softcap(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                     %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32, softcap = 30.0 : f32}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
    return
  }
}

// -----

// A function already configured keeps its choice; one without a problem op
// is not a kernel.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @chosen
  // CHECK-SAME: attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>
  // CHECK-NOT: attn.schedule
  func.func @chosen(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                    %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>)
      attributes {attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
  // CHECK-LABEL: func.func @helper()
  // CHECK-NOT: attn.
  func.func @helper() {
    return
  }
}
