// RUN: attngen-opt %s -attn-configure="tma-store=true" -split-input-file -verify-diagnostics

// attn-configure checks the request the problem and its options make, as
// attngen's flags and the C API are checked.
module attributes {attn.target = #attn.target<sm_80>} {
  // expected-error @+1 {{cannot configure this kernel: --tma-store needs the sm_90a warp-specialized schedule, whose consumer warpgroups each store their rows; leave it out or drop --no-warp-specialize}}
  func.func @tma_on_sm80(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                         %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// expected-error @+1 {{attn-configure needs the module attribute 'attn.target' (#attn.target<sm_80> or #attn.target<sm_90a>)}}
module {
  func.func @no_target(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                       %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}
