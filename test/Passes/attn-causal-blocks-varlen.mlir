// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -split-input-file | FileCheck %s

// A sliding window on a packed (varlen) batch: the band is each sequence's
// own. The bottom-right diagonal is shifted by the sequence's Nk - Nq (the
// lengths attn.sequence reads), the last key is the sequence's, and the loop
// bounds (hi, lo) and the first K copy follow from them as for a dense
// kernel; the loops stay inside the CTA's live-block guard, and an empty key
// sequence still visits its one masked block (hi >= 1).
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @varlen_window
  // CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %c128 : index
  // CHECK: %[[SQ:.*]], %[[LQ:.*]] = attn.sequence %arg4
  // CHECK: %[[SK:.*]], %[[LK:.*]] = attn.sequence %arg5
  // CHECK: %[[LIVE:.*]] = arith.cmpi ult, %[[ROW]], %[[LQ]] : index
  // CHECK-NEXT: scf.if %[[LIVE]] {
  // CHECK-NEXT: %[[NB:.*]] = arith.ceildivui %[[LK]], %c96 : index
  // CHECK-NEXT: %[[NB1:.*]] = arith.maxui %[[NB]], %c1 : index
  // CHECK: %[[OFF:.*]] = arith.subi %[[LK]], %[[LQ]] : index
  // CHECK-NEXT: %[[D0:.*]] = arith.addi %[[ROW]], %[[OFF]] : index
  // CHECK: %[[LASTKEY:.*]] = arith.subi %[[LK]], %{{.*}} : index
  // CHECK-NEXT: %[[R:.*]] = arith.constant 50 : index
  // CHECK-NEXT: %{{.*}} = arith.subi %[[LASTKEY]], %[[R]] : index
  // CHECK: %[[HI:.*]] = arith.minui %[[NB1]], %{{.*}} : index
  // CHECK: %[[L:.*]] = arith.constant 100 : index
  // CHECK-NEXT: %[[FIRSTMAX:.*]] = arith.maxsi %[[D0]], %[[L]] : index
  // CHECK: %[[LO:.*]] = arith.minui %{{.*}}, %{{.*}} : index
  // CHECK: %[[FIRSTROW:.*]] = arith.muli %[[LO]], %{{.*}} : index
  // CHECK-NEXT: attn.copy_async %arg1[%[[SK]], %[[FIRSTROW]], %{{.*}}] -> %{{.*}} fill %c0 :
  // CHECK: scf.for %{{.*}} = %[[LO]] to
  // CHECK: attn.mask %{{.*}}, %[[ROW]], %{{.*}}, %[[LK]] q_len %[[LQ]] {causal_align = #attn.causal_align<bottom_right>, window_left = 100 : i64, window_right = 50 : i64}
  // CHECK: scf.for
  // CHECK-NOT: attn.mask
  // CHECK: scf.yield
  // CHECK: scf.for %{{.*}} = %{{.*}} to %[[HI]]
  // CHECK: attn.mask %{{.*}}, %[[ROW]], %{{.*}}, %[[LK]] q_len %[[LQ]]
  // CHECK: attn.store %{{.*}} -> %arg3[%{{.*}}, %[[ROW]], %{{.*}}]
  // CHECK-NEXT: }
  // CHECK-NEXT: return
  func.func @varlen_window(%q: memref<?x?x64xf16>, %k: memref<?x?x64xf16>,
                           %v: memref<?x?x64xf16>, %o: memref<?x?x64xf16>,
                           %cq: memref<?xi32>, %ck: memref<?xi32>) {
    attn.attention %q, %k, %v, %o varlen(%cq, %ck : memref<?xi32>, memref<?xi32>)
        {causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32,
         window_left = 100, window_right = 50}
      : memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>
    return
  }
}

// -----

// A causal window of 256 keys on sm_90a (top-left, per sequence): only the
// left edge and the diagonal bound the band; the sequence's query length is
// not needed (no q_len on the mask).
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @varlen_causal_window
  // CHECK: %[[SK:.*]], %[[LK:.*]] = attn.sequence %arg5
  // CHECK: attn.mask %{{.*}}, %{{.*}}, %{{.*}}, %[[LK]] {causal, window_left = 256 : i64}
  // CHECK-NOT: q_len
  // CHECK: return
  func.func @varlen_causal_window(%q: memref<?x?x128xbf16>, %k: memref<?x?x128xbf16>,
                                  %v: memref<?x?x128xbf16>, %o: memref<?x?x128xbf16>,
                                  %cq: memref<?xi32>, %ck: memref<?xi32>) {
    attn.attention %q, %k, %v, %o varlen(%cq, %ck : memref<?xi32>, memref<?xi32>)
        {causal, scale = 0.0883883 : f32, window_left = 256}
      : memref<?x?x128xbf16>, memref<?x?x128xbf16>, memref<?x?x128xbf16>, memref<?x?x128xbf16>
    return
  }
}
