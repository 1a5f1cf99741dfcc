// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -attn-online-softmax -canonicalize -cse -attn-multibuffer=stages=2 -canonicalize -cse -split-input-file | FileCheck %s
// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -attn-online-softmax -canonicalize -cse -attn-multibuffer=stages=3 -canonicalize -cse -split-input-file | FileCheck %s --check-prefix=S3
// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -attn-online-softmax -canonicalize -cse -attn-multibuffer=stages=1 -canonicalize -cse -split-input-file | FileCheck %s --check-prefix=S1

// sm_80 rings: every fill runs stages - 1 blocks ahead of attn-tile's
// single-buffer order, predicated on the block existing; the prologue
// issues the blocks the loop skips in the loop's order (K_0, V_0, K_1); each
// wait leaves the younger groups in flight (Q: the three fills after it; K
// and V: 2 (stages - 1)) and is followed by the CTA barrier that makes the
// other threads' chunks visible and frees the stage the next fill reuses.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @ring
  // CHECK-DAG: %[[QP:.*]] = attn.create_pipe : !attn.pipe<1, <128x128xbf16, swizzle = 128>>
  // CHECK-DAG: %[[KP:.*]] = attn.create_pipe : !attn.pipe<2, <64x128xbf16, swizzle = 128>>
  // CHECK-DAG: %[[VP:.*]] = attn.create_pipe : !attn.pipe<2, <64x128xbf16, swizzle = 128>>
  // CHECK-DAG: %[[N:.*]] = arith.ceildivui
  // CHECK: attn.pipe_acquire %[[QP]][%c0]
  // CHECK-NEXT: attn.pipe_load %arg0[{{.*}}] -> %[[QP]][%c0] :
  // CHECK-NEXT: attn.pipe_acquire %[[KP]][%c0]
  // CHECK-NEXT: attn.pipe_load %arg1[%{{.*}}, %c0, %{{.*}}] -> %[[KP]][%c0] :
  // CHECK-NEXT: attn.pipe_acquire %[[VP]][%c0]
  // CHECK-NEXT: attn.pipe_load %arg2[%{{.*}}, %c0, %{{.*}}] -> %[[VP]][%c0] :
  // CHECK-NEXT: %[[HAS1:.*]] = arith.cmpi ugt, %[[N]], %c1
  // CHECK-NEXT: attn.pipe_acquire %[[KP]][%c1]
  // CHECK-NEXT: attn.pipe_load %arg1[%{{.*}}, %c64, %{{.*}}] -> %[[KP]][%c1] if %[[HAS1]] :
  // CHECK-NEXT: %[[Q:.*]] = attn.pipe_wait %[[QP]][%c0] {pending = 3 : i64}
  // CHECK-NEXT: attn.barrier
  // Two loops (unmasked blocks, then the ragged tail) with one schedule; the
  // second is shown.
  // CHECK-COUNT-2: scf.for
  // CHECK-SAME: {
  // CHECK-NEXT: arith.muli
  // CHECK-NEXT: %[[K:.*]] = attn.pipe_wait %[[KP]][%[[J:.*]]] {pending = 2 : i64}
  // CHECK-NEXT: attn.barrier
  // CHECK-NEXT: %[[J1:.*]] = arith.addi %[[J]], %c1
  // CHECK-NEXT: %[[HASV:.*]] = arith.cmpi ult, %[[J1]], %[[N]]
  // CHECK-NEXT: %[[ROWV:.*]] = arith.muli %[[J1]], %c64
  // CHECK-NEXT: attn.pipe_acquire %[[VP]][%[[J1]]]
  // CHECK-NEXT: attn.pipe_load %arg2[%{{.*}}, %[[ROWV]], %{{.*}}] -> %[[VP]][%[[J1]]] if %[[HASV]] :
  // CHECK-NEXT: attn.mma %[[Q]], %[[K]] {transpose_b}
  // CHECK-NEXT: attn.pipe_release %[[KP]][%[[J]]]
  // CHECK: %[[V:.*]] = attn.pipe_wait %[[VP]][%[[J]]] {pending = 2 : i64}
  // CHECK-NEXT: attn.barrier
  // CHECK-NEXT: %[[J2:.*]] = arith.addi %[[J]], %c2
  // CHECK-NEXT: %[[HASK:.*]] = arith.cmpi ult, %[[J2]], %[[N]]
  // CHECK-NEXT: %[[ROWK:.*]] = arith.muli %[[J2]], %c64
  // CHECK-NEXT: attn.pipe_acquire %[[KP]][%[[J2]]]
  // CHECK-NEXT: attn.pipe_load %arg1[%{{.*}}, %[[ROWK]], %{{.*}}] -> %[[KP]][%[[J2]]] if %[[HASK]] :
  // CHECK-NEXT: attn.mma %{{.*}}, %[[V]], %{{.*}} :
  // CHECK-NEXT: attn.pipe_release %[[VP]][%[[J]]]
  // CHECK-NEXT: scf.yield
  // CHECK-NOT: attn.wait
  // CHECK-NOT: scf.if
  // CHECK-NOT: attn.copy_async

  // Three stages: five fills ahead of the first wait, two blocks ahead in
  // the loop, four groups left in flight.
  // S3: attn.pipe_load %arg0
  // S3-NEXT: attn.pipe_acquire %[[KP:.*]][%c0]
  // S3-NEXT: attn.pipe_load %arg1{{.*}}[%c0] :
  // S3-NEXT: attn.pipe_acquire %[[VP:.*]][%c0]
  // S3-NEXT: attn.pipe_load %arg2{{.*}}[%c0] :
  // S3: attn.pipe_load %arg1{{.*}}[%c1] if
  // S3: attn.pipe_load %arg2{{.*}}[%c1] if
  // S3: attn.pipe_load %arg1{{.*}}[%c2] if
  // S3-NEXT: attn.pipe_wait {{.*}}[%c0] {pending = 5 : i64}
  // S3-NEXT: attn.barrier
  // S3: scf.for %[[J:[a-z0-9]+]] =
  // S3: attn.pipe_wait %[[KP]][%[[J]]] {pending = 4 : i64}
  // S3-NEXT: attn.barrier
  // S3-NEXT: %[[J2:.*]] = arith.addi %[[J]], %c2
  // S3: attn.pipe_load %arg2{{.*}} -> %[[VP]][%[[J2]]] if
  // S3: attn.pipe_wait %[[VP]][%[[J]]] {pending = 4 : i64}
  // S3-NEXT: attn.barrier
  // S3-NEXT: %[[J3:.*]] = arith.addi %[[J]], %c3
  // S3: attn.pipe_load %arg1{{.*}} -> %[[KP]][%[[J3]]] if

  // One stage: attn-tile's order with explicit counts (every wait drains).
  // S1: attn.pipe_load %arg1{{.*}}[%c0] :
  // S1-NEXT: attn.pipe_wait {{.*}}[%c0] {pending = 1 : i64}
  // S1: scf.for %[[J:[a-z0-9]+]] =
  // S1: attn.pipe_wait %{{.*}}[%[[J]]] {pending = 0 : i64}
  // S1-NEXT: attn.barrier
  // S1-NEXT: arith.cmpi ult, %[[J]]
  // S1: attn.pipe_load %arg2{{.*}}[%[[J]]] if
  // S1: attn.pipe_wait %{{.*}}[%[[J]]] {pending = 0 : i64}
  // S1-NEXT: attn.barrier
  // S1-NEXT: %[[J1:.*]] = arith.addi %[[J]], %c1
  // S1: attn.pipe_load %arg1{{.*}}[%[[J1]]] if
  func.func @ring(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                  %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}

// -----

// Causal: the prologue's predicates and the loops' use the causal block
// bound (one past the last visible block), hoisted above the prologue.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @causal_bound
  // CHECK: %[[HI:.*]] = arith.minui
  // CHECK: attn.pipe_load %arg1{{.*}}[%c0] :
  // CHECK: %[[HAS1:.*]] = arith.cmpi ugt, %[[HI]], %c1
  // CHECK: attn.pipe_load %arg1{{.*}}[%c1] if %[[HAS1]] :
  // CHECK: scf.for
  // CHECK: arith.cmpi ult, %{{.*}}, %[[HI]]
  // CHECK: scf.for {{.*}} to %[[HI]]
  // CHECK: attn.mask
  func.func @causal_bound(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                          %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// A window's nest starts at block lo and numbers fills from 0 there: the
// prologue fills blocks lo (K and V, fill 0) and lo + 1 (K, fill 1, if it is
// visited), and each iteration j fills V of block j + 1 and K of block
// j + 2 as fills (block - lo), rows block * 96, predicated on block < hi.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @window_nest
  // CHECK: %[[HI:.*]] = arith.minui %{{.*}}, %{{.*}} : index
  // CHECK: %[[LASTV:.*]] = arith.subi %[[HI]], %c1 : index
  // CHECK-NEXT: %[[LO:.*]] = arith.minui %{{.*}}, %[[LASTV]] : index
  // CHECK: %[[ROW0:.*]] = arith.muli %[[LO]], %c96 : index
  // CHECK: attn.pipe_load %arg1[%{{.*}}, %[[ROW0]], %{{.*}}] -> %[[KP:.*]][%c0] :
  // CHECK: attn.pipe_load %arg2[%{{.*}}, %[[ROW0]], %{{.*}}] -> %[[VP:.*]][%c0] :
  // CHECK: %[[B1:.*]] = arith.addi %[[LO]], %c1 : index
  // CHECK: %[[HAS1:.*]] = arith.cmpi ult, %[[B1]], %[[HI]] : index
  // CHECK: %[[ROW1:.*]] = arith.muli %[[B1]], %c96 : index
  // CHECK: attn.pipe_load %arg1[%{{.*}}, %[[ROW1]], %{{.*}}] -> %[[KP]][%c1] if %[[HAS1]] :
  // CHECK: scf.for %[[J:.*]] = %[[LO]] to
  // CHECK:   %[[F:.*]] = arith.subi %[[J]], %[[LO]] : index
  // CHECK:   attn.pipe_wait %[[KP]][%[[F]]] {pending = 2 : i64}
  // CHECK:   %[[BV:.*]] = arith.addi %[[J]], %c1 : index
  // CHECK:   %[[FV:.*]] = arith.subi %[[BV]], %[[LO]] : index
  // CHECK:   %[[HASV:.*]] = arith.cmpi ult, %[[BV]], %[[HI]] : index
  // CHECK:   %[[ROWV:.*]] = arith.muli %[[BV]], %c96 : index
  // CHECK:   attn.pipe_load %arg2[%{{.*}}, %[[ROWV]], %{{.*}}] -> %[[VP]][%[[FV]]] if %[[HASV]] :
  // CHECK:   attn.pipe_wait %[[VP]][%[[F]]] {pending = 2 : i64}
  // CHECK:   %[[BK:.*]] = arith.addi %[[J]], %c2 : index
  // CHECK:   %[[FK:.*]] = arith.subi %[[BK]], %[[LO]] : index
  // CHECK:   attn.pipe_load %arg1[%{{.*}}] -> %[[KP]][%[[FK]]] if %{{.*}} :
  func.func @window_nest(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                         %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32, window_left = 200, window_right = 0}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}
