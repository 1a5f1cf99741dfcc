// RUN: attngen-opt %s -attn-tile="block-m=96" -verify-diagnostics

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @bad_block_m(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                         %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    // expected-error @+1 {{'attn.attention' op invalid tile configuration: block-m = 96 must be a positive multiple of 16 * num-warps = 64}}
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}
