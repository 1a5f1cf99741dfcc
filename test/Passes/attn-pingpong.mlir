// RUN: attngen-opt %s -attn-configure -attn-tile -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-warp-specialize -attn-intra-wg-overlap -attn-pingpong -canonicalize -cse -split-input-file | FileCheck %s
// RUN: attngen-opt %s -attn-configure -attn-tile -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-warp-specialize -attn-intra-wg-overlap -attn-pingpong | grep -c attn.named_barrier_sync | FileCheck %s --check-prefix=SYNCS

// Consumer warpgroup w waits on barrier 1 + w before each GEMM phase and
// arrives on barrier 1 + (w + 1) % 2 after it; the last warpgroup opens the
// first turn. Three phases here: the prologue's S, the loop's S + P V, the
// epilogue's P V.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @pingpong
  // CHECK: } consumers {
  // CHECK-NEXT: %[[WG:.*]] = attn.warpgroup_id
  // CHECK-NEXT: %[[MINE:.*]] = arith.addi %[[WG]], %c1
  // CHECK-NEXT: %[[MOD:.*]] = arith.remui %[[MINE]], %c2
  // CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[MOD]], %c1
  // CHECK-NEXT: %[[LAST:.*]] = arith.cmpi eq, %[[WG]], %c1
  // CHECK-NEXT: scf.if %[[LAST]] {
  // CHECK-NEXT:   attn.named_barrier_arrive %c1 {threads = 256 : i64}
  // CHECK:      attn.named_barrier_sync %[[MINE]] {threads = 256 : i64}
  // CHECK-NEXT: attn.mma
  // CHECK-NEXT: attn.named_barrier_arrive %[[NEXT]] {threads = 256 : i64}
  // CHECK:      scf.for
  // CHECK:        attn.named_barrier_sync %[[MINE]] {threads = 256 : i64}
  // CHECK-NEXT:   attn.mma {{.*}} {async, transpose_b}
  // CHECK-NEXT:   attn.pipe_wait
  // CHECK-NEXT:   attn.mma {{.*}} {async}
  // CHECK-NEXT:   attn.named_barrier_arrive %[[NEXT]] {threads = 256 : i64}
  // CHECK:      attn.named_barrier_sync %[[MINE]] {threads = 256 : i64}
  // CHECK-NEXT: attn.mma
  // CHECK-NEXT: attn.named_barrier_arrive %[[NEXT]] {threads = 256 : i64}
  // Exactly three phases, each waited for once:
  // SYNCS: 3
  func.func @pingpong(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                      %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}
