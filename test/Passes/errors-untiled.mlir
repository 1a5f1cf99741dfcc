// A tile-level pass run on a problem op that is not tiled yet says so,
// instead of changing nothing and exiting 0.
// RUN: attngen-opt %s -attn-online-softmax -verify-diagnostics
// RUN: attngen-opt %s -attn-causal-blocks -verify-diagnostics
// RUN: attngen-opt %s -attn-pingpong -verify-diagnostics
// RUN: attngen-opt %s -attn-multibuffer -verify-diagnostics
// RUN: attngen-opt %s -attn-allocate-smem -verify-diagnostics
// RUN: attngen-opt %s -attn-to-nvvm -verify-diagnostics

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @k(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
               %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
    // expected-error-re @+1 {{'attn-{{[a-z-]+}}' runs on tile programs, but this 'attn.attention' is not tiled yet: run attn-tile first (after attn-configure), or the whole --attn-pipeline}}
    attn.attention %q, %k, %v, %o {causal, scale = 0.125 : f32}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
    return
  }
}
