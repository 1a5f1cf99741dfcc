// RUN: attngen-opt %s -attn-tile -split-input-file -verify-diagnostics

// The tiles are chosen once, by attn-configure (or attngen's driver, which
// runs the same choice): attn-tile reads them and chooses none.
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @unconfigured(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                          %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    // expected-error @+1 {{'attn.attention' op needs its function's 'attn.tiling', which attn-configure chooses: run attn-configure (or attn-pipeline) before attn-tile}}
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}
