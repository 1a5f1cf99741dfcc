// RUN: attngen-opt %s -attn-configure -attn-tile -attn-online-softmax -canonicalize -cse -attn-multibuffer=stages=1 -attn-intra-wg-overlap -verify-diagnostics -split-input-file

// One stage: the next K could only be loaded once this V is released, which
// the rotated loop does after issuing the next S: refuse.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @one_stage(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                       %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    // expected-error @+1 {{attn-intra-wg-overlap cannot pipeline this key/value loop: the value pipe has one stage; intra-warpgroup overlap needs two (attn-multibuffer stages=2)}}
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}
