// A packed (varlen) batch as attngen reads it: [total, H, D] tensors, LSE
// [H, total_q] and the int32 vectors of sequence starts.
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @fwd_varlen(%q: memref<?x?x64xf16>, %k: memref<?x?x64xf16>,
                        %v: memref<?x?x64xf16>, %o: memref<?x?x64xf16>,
                        %lse: memref<?x?xf32>, %cq: memref<?xi32>, %ck: memref<?xi32>) {
    attn.attention %q, %k, %v, %o lse %lse varlen(%cq, %ck : memref<?xi32>, memref<?xi32>)
        {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32}
      : memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>,
        memref<?x?xf32>
    return
  }
}
