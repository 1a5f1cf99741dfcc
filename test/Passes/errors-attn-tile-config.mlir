// RUN: attngen-opt %s -split-input-file -attn-configure="block-m=96" -attn-tile -verify-diagnostics

// attn-configure checks the tiles it is asked for, as attngen's flags are.
module attributes {attn.target = #attn.target<sm_80>} {
  // expected-error @+1 {{cannot configure this kernel: block-m = 96 must be a positive multiple of 16 * num-warps = 64}}
  func.func @bad_block_m(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                         %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// attn-tile checks the tiles it is given (here written by hand).
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @bad_tiling(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                        %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>)
      attributes {attn.tiling = #attn.tiling<block_m = 96, block_n = 64, num_warps = 4>} {
    // expected-error @+1 {{'attn.attention' op invalid tile configuration: block-m = 96 must be a positive multiple of 16 * num-warps = 64}}
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}
