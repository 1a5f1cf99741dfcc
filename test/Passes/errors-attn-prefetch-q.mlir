// RUN: attngen-opt %s --attn-tile-pipeline -verify-diagnostics

// A schedule that asks for the second stage where it does not fit is an
// error, not a kernel that fails to launch.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @d256_asked(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>,
                        %v: memref<?x?x?x256xbf16>, %o: memref<?x?x?x256xbf16>) attributes {attn.schedule = #attn.schedule<block_skip = true, warp_specialize = true, intra_wg_overlap = true, pingpong = true, tma_store = false, persistent = true, flush_denormals = true, exp2_emulated_eighths = 0, bounded_softmax = false, longest_first = false, prefetch_q = true>, attn.tiling = #attn.tiling<block_m = 128, block_n = 80, num_warps = 8, stages = 2>} {
    // expected-error @+1 {{attn-prefetch-q: a second Q stage needs 296032 bytes of shared memory, more than the 232448 of a CTA; configure the kernel with prefetch_q = false}}
    attn.attention %q, %k, %v, %o {causal, scale = 0.0625 : f32}
      : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>,
        memref<?x?x?x256xbf16>
    return
  }
}
