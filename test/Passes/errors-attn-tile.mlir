// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -split-input-file -verify-diagnostics

// expected-error @+1 {{attn-configure needs the module attribute 'attn.target' (#attn.target<sm_80> or #attn.target<sm_90a>)}}
module {
  func.func @no_target(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                       %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @argument_order(%k: memref<?x?x?x64xf16>, %q: memref<?x?x?x64xf16>,
                            %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    // expected-error @+1 {{'attn.attention' op the enclosing function's arguments must be q, k, v, o[, lse][, cu_seqlens_q, cu_seqlens_k][, alibi_slopes] in this order}}
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @not_alone(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                       %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    // expected-error @+1 {{'attn.attention' op must be the only operation of its function besides the return}}
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}
