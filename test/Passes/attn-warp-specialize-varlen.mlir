// RUN: attngen-opt %s -attn-configure -attn-tile -attn-causal-blocks=peel=false \
// RUN:   -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-warp-specialize \
// RUN:   -attn-intra-wg-overlap -attn-pingpong -canonicalize -cse | FileCheck %s --check-prefix=FA3

// The FlashAttention-3 schedule of a varlen kernel: both warp roles read the
// sequences and run the guard (one uniform branch per CTA); the producer
// loads through the sequences, and only the consumers read the query
// sequence again for the epilogue.
module attributes {attn.target = #attn.target<sm_90a>} {
  // FA3-LABEL: func.func @varlen_causal
  // FA3: attn.warp_specialize producer {
  // FA3-NEXT: %[[SQ:.*]], %[[LQ:.*]] = attn.sequence %arg4
  // FA3-NEXT: %[[SK:.*]], %{{.*}} = attn.sequence %arg5
  // FA3-NEXT: %[[LIVE:.*]] = arith.cmpi ult, %{{.*}}, %[[LQ]] : index
  // FA3-NEXT: scf.if %[[LIVE]] {
  // FA3:        attn.pipe_load %arg0[%[[SQ]], %{{.*}}, %{{.*}}] -> %{{.*}}[%c0]
  // FA3:        attn.pipe_load %arg1[%[[SK]], %c0, %{{.*}}] -> %{{.*}}[%c0]
  // FA3-NOT:  attn.store
  // FA3:      } consumers {
  // FA3:        attn.sequence %arg4
  // FA3:        attn.sequence %arg5
  // FA3:        scf.if
  // FA3:          attn.mask {{.*}} q_len
  // FA3:          %[[SO:.*]], %{{.*}} = attn.sequence %arg4
  // FA3-NEXT:     attn.store %{{.*}} -> %arg3[%[[SO]],
  func.func @varlen_causal(%q: memref<?x?x128xbf16>, %k: memref<?x?x128xbf16>,
                              %v: memref<?x?x128xbf16>, %o: memref<?x?x128xbf16>,
                              %cq: memref<?xi32>, %ck: memref<?xi32>) {
    attn.attention %q, %k, %v, %o varlen(%cq, %ck : memref<?xi32>, memref<?xi32>)
        {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.0883883 : f32}
      : memref<?x?x128xbf16>, memref<?x?x128xbf16>, memref<?x?x128xbf16>,
        memref<?x?x128xbf16>
    return
  }
}
