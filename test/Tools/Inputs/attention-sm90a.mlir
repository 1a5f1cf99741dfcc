// A problem-level module that fixes everything but the tile sizes: sm_90a,
// head dim 64, bf16, causal, scale 0.2, with LSE.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @fixed(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                   %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>,
                   %lse: memref<?x?x?xf32>) {
    attn.attention %q, %k, %v, %o lse %lse {causal, scale = 0.2 : f32}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?xf32>
    return
  }
}
