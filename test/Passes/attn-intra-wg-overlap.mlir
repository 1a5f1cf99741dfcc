// RUN: attngen-opt %s -attn-configure -attn-tile -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-warp-specialize -attn-intra-wg-overlap -canonicalize -cse -split-input-file -verify-diagnostics | FileCheck %s
// RUN: attngen-opt %s -attn-configure -attn-tile -attn-causal-blocks=peel=false -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-warp-specialize -attn-intra-wg-overlap -canonicalize -cse -split-input-file | FileCheck %s --check-prefix=WINDOW

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

// -----

// FP8: P's conversion into the next P V product's register operand (its
// quad shuffles) comes after that product's wait, so no register a wgmma
// in flight reads is written under it (ptxas would serialize every wgmma).
!q8 = memref<?x?x?x128xf8E4M3FN>
!v8 = memref<?x?x?x128xf8E4M3FN, strided<[?, 1, ?, ?]>>
!d = memref<?x?xf32>
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @fp8_overlap
  // CHECK:   scf.for
  // CHECK:     %[[O:.*]] = attn.mma %{{.*}}, %{{.*}}, %{{.*}} {async, transpose_b} : !attn.regs<128x128xf8E4M3FN, operand_a>
  // CHECK:     attn.exp2_diff
  // CHECK-NOT: attn.convert
  // CHECK:     attn.mma_wait %[[O]] {pending = 0 : i64}
  // CHECK-NEXT: attn.pipe_release
  // CHECK-NEXT: attn.convert {{.*}} -> !attn.regs<128x128xf8E4M3FN, operand_a>
  func.func @fp8_overlap(%q: !q8, %k: !q8, %v: !v8, %o: memref<?x?x?x128xbf16>,
                         %qd: !d, %kd: !d, %vd: !d) {
    attn.attention %q, %k, %v, %o descale(%qd, %kd, %vd : !d, !d, !d) {scale = 0.125 : f32}
      : !q8, !q8, !v8, memref<?x?x?x128xbf16>
    return
  }
}

// -----

// A window starts the loop at block lo and numbers fills j - lo: the loop
// starts at lo + 1 (the prologue handled block lo), issues S_j for fill
// j - lo, and B's value fill (computed in A) travels to the next iteration
// as an index iter_arg, starting at fill 0; the epilogue's is the last one.
module attributes {attn.target = #attn.target<sm_90a>} {
  // WINDOW-LABEL: func.func @overlap_window
  // WINDOW: } consumers {
  // WINDOW:   %[[LO1:.*]] = arith.addi %[[LO:.*]], %c1 : index
  // WINDOW-NEXT: %[[L:.*]]:5 = scf.for %[[J:.*]] = %[[LO1]] to %{{.*}} step %{{.*}} iter_args(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[VF:[^ ]*]] = %c0, %{{[^,]*}}) -> (!attn.regs<128x128xf32, acc>, !attn.regs<128xf32, row>, !attn.regs<128xf32, row>, index, !attn.regs<128x128xbf16, operand_a>)
  // WINDOW-NEXT: %[[FJ:.*]] = arith.subi %[[J]], %[[LO]] : index
  // WINDOW:     attn.pipe_wait %[[KP:.*]][%[[FJ]]]
  // WINDOW:     attn.pipe_wait %[[VP:.*]][%[[VF]]]
  // WINDOW:     attn.pipe_release %[[KP]][%[[FJ]]]
  // WINDOW:     attn.pipe_release %[[VP]][%[[VF]]]
  // WINDOW:     scf.yield %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[FJ]], %{{.*}} :
  // WINDOW:   attn.pipe_wait %[[VP]][%[[L]]#3]
  func.func @overlap_window(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                            %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32, window_left = 512, window_right = 0}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}
