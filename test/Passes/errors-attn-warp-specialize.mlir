// RUN: attngen-opt %s -attn-configure -attn-tile -attn-online-softmax -attn-warp-specialize -verify-diagnostics -split-input-file

// Without pipes the roles would have to share buffers through CTA barriers.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @no_pipes(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                      %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    // expected-error @+1 {{must become a pipe before warp specialization (run attn-multibuffer first): the warp roles share data only through pipes}}
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}

// -----

// A kernel function must carry its tiling.
module attributes {attn.target = #attn.target<sm_90a>} {
  // expected-error @+1 {{'func.func' op kernel has no 'attn.tiling' attribute; run attn-tile first}}
  func.func @untiled() attributes {attn.kernel} {
    return
  }
}
