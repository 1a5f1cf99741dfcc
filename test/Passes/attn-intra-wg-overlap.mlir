// RUN: attngen-opt %s -attn-tile=warp-specialize=true -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-warp-specialize -attn-intra-wg-overlap -canonicalize -cse -split-input-file -verify-diagnostics | FileCheck %s

// The loop is rotated: a guarded prologue computes S_0 and its softmax;
// each iteration issues S_j and P_{j-1} V_{j-1} asynchronously, waits for
// S_j alone (1 group pending), runs the softmax under the P V product, then
// waits for it (0 pending), releases both buffers and rescales O; the
// epilogue adds the last P V.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @overlap
  // CHECK: } consumers {
  // CHECK: %[[R:.*]]:2 = scf.if
  // CHECK:   attn.mma {{.*}} {transpose_b}
  // CHECK:   %[[L:.*]]:4 = scf.for %[[J:.*]] = {{.*}} iter_args
  // CHECK:     %[[JM1:.*]] = arith.subi %[[J]], %c1
  // CHECK:     %[[K:.*]] = attn.pipe_wait %[[KP:.*]][%[[J]]]
  // CHECK-NEXT: %[[S:.*]] = attn.mma %{{.*}}, %[[K]] {async, transpose_b}
  // CHECK-NEXT: %[[V:.*]] = attn.pipe_wait %[[VP:.*]][%[[JM1]]]
  // CHECK-NEXT: %[[O:.*]] = attn.mma %{{.*}}, %[[V]], %{{.*}} {async}
  // CHECK-NEXT: %[[SW:.*]] = attn.mma_wait %[[S]] {pending = 1 : i64}
  // CHECK-NEXT: attn.pipe_release %[[KP]][%[[J]]]
  // CHECK:     attn.mask %[[SW]]
  // CHECK:     attn.convert
  // CHECK-NEXT: %[[OW:.*]] = attn.mma_wait %[[O]] {pending = 0 : i64}
  // CHECK-NEXT: attn.pipe_release %[[VP]][%[[JM1]]]
  // CHECK-NEXT: attn.rescale %[[OW]]
  // CHECK:   attn.pipe_wait %[[VP]]
  // CHECK:   attn.mma %[[L]]#3, %{{.*}}, %[[L]]#0 :
  // CHECK:   scf.yield
  // CHECK: } else {
  // CHECK:   scf.yield
  // CHECK: attn.normalize %[[R]]#0
  func.func @overlap(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                     %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}
