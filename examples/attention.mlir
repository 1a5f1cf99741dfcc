// A sample input for attngen and attngen-opt: causal bf16 attention with head
// dim 128 and a log-sum-exp output, for sm_90a (H100/H200). attngen-opt needs
// the module's attn.target; attngen takes --arch instead when it is missing.
//
//   build/bin/attngen examples/attention.mlir -o attention.ptx   # + attention.json
//   build/bin/attngen-opt examples/attention.mlir --attn-pipeline   # what attngen runs
//   build/bin/attngen-opt examples/attention.mlir -attn-configure -attn-tile \
//       -attn-causal-blocks -attn-online-softmax      # a few passes, one by one
//
// Q [B, Nq, H, 128], K and V [B, Nk, Hkv, 128], O like Q, LSE [B, H, Nq] f32;
// sizes and strides are dynamic (the last dim contiguous), scale = 1/sqrt(128).
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @attention(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                       %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>,
                       %lse: memref<?x?x?xf32>) {
    attn.attention %q, %k, %v, %o lse %lse {causal, scale = 0.0883883 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>,
        memref<?x?x?x128xbf16>, memref<?x?x?xf32>
    return
  }
}
