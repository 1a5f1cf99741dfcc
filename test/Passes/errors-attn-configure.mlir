// RUN: attngen-opt %s -attn-configure="tma-store=maybe" -split-input-file -verify-diagnostics

// An option value that is none of its own.
module attributes {attn.target = #attn.target<sm_80>} {
  // expected-error @+1 {{option tma-store=maybe is none of auto, true, false}}
  func.func @tma_maybe(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                       %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}
