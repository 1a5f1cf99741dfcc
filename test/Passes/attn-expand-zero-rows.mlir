// RUN: attngen-opt %s --attn-tile-pipeline -attn-expand-zero-rows | FileCheck %s
// RUN: attngen-opt %s --attn-tile-pipeline | FileCheck %s --check-prefix=BEFORE

// A KV-cache kernel zeroes the value rows past its sequence after their
// wait; in warp-specialized consumers the pass writes the warpgroup's
// zeroing and its named barrier (id 4 + warpgroup) into the IR, under the
// test that rows remain, and the wait keeps no zero_from.
module attributes {attn.target = #attn.target<sm_90a>} {
  // BEFORE: attn.pipe_wait {{.*}} zero_from
  // CHECK-LABEL: func.func @decode
  // CHECK-NOT: zero_from
  // CHECK: attn.pipe_wait
  // CHECK: %[[ROWS:.*]] = arith.constant 128 : index
  // CHECK-NEXT: %[[PENDING:.*]] = arith.cmpi slt, %[[FROM:.*]], %[[ROWS]] : index
  // CHECK-NEXT: scf.if %[[PENDING]] {
  // CHECK-NEXT:   attn.zero_rows %[[V:[0-9]+]] from %[[FROM]] {threads = 128 : i64} : !attn.smem<128x64xbf16, swizzle = 128>
  // CHECK-NEXT:   %[[WG:.*]] = attn.warpgroup_id
  // CHECK-NEXT:   %[[FIRST:.*]] = arith.constant 4 : index
  // CHECK-NEXT:   %[[ID:.*]] = arith.addi %[[WG]], %[[FIRST]] : index
  // CHECK-NEXT:   attn.named_barrier_sync %[[ID]] {threads = 128 : i64}
  // CHECK-NEXT: }
  // CHECK-NEXT: attn.mma %{{.*}}, %[[V]]
  func.func @decode(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>,
                    %seqlens: memref<?xi32>, %lse: memref<?x?x?xf32>) {
    attn.attention_kvcache %q, %k, %v, %o, %seqlens lse %lse {scale = 0.125 : f32}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>,
        memref<?x?x?x64xbf16>, memref<?xi32>, memref<?x?x?xf32>
    return
  }
}
