// RUN: attngen-opt %s -split-input-file -attn-configure=warp-specialize=false -attn-tile -attn-online-softmax -canonicalize -cse -attn-multibuffer=stages=2 | FileCheck %s

// sm_80 rings over a split's key range: every fill reads rows
// fill * block_n + base (the split's first row), the prologue issues
// blocks 0 and 1 of the range, the V wait keeps its zero_from and gets a
// pending count like any other.
module attributes {attn.target = #attn.target<sm_80>} {
// CHECK-LABEL: func.func @split
// CHECK:      attn.pipe_load %arg0[{{.*}}] -> %{{.*}}[%c0]
// CHECK:      %[[K0:.*]] = arith.addi %{{.*}}, %[[BASE:.*]] : index
// CHECK-NEXT: attn.pipe_acquire %[[KP:.*]][%{{.*}}]
// CHECK-NEXT: attn.pipe_load %arg1[%{{.*}}, %[[K0]], %{{.*}}] -> %[[KP]][%{{.*}}]
// CHECK:      attn.pipe_load %arg2[%{{.*}}, %{{.*}}, %{{.*}}] -> %[[VP:.*]][%{{.*}}]
// CHECK:      attn.pipe_load %arg1[{{.*}}] -> %[[KP]][%{{.*}}] if %{{.*}}
// CHECK:      attn.pipe_wait %{{.*}}[%c0] {pending = 3 : i64}
// CHECK:      scf.for %[[J:.*]] = %c0 to
// CHECK:        attn.pipe_wait %[[KP]][%[[J]]] {pending = 2 : i64}
// CHECK-NEXT:   attn.barrier
// CHECK:        %[[VROW:.*]] = arith.addi %{{.*}}, %[[BASE]] : index
// CHECK:        attn.pipe_load %arg2[%{{.*}}, %[[VROW]], %{{.*}}] -> %[[VP]][%{{.*}}] if %{{.*}}
// CHECK:        attn.pipe_wait %[[VP]][%[[J]]] zero_from %{{.*}} {pending = 2 : i64}
// CHECK-NEXT:   attn.barrier
// CHECK:        %[[KROW:.*]] = arith.addi %{{.*}}, %[[BASE]] : index
// CHECK:        attn.pipe_load %arg1[%{{.*}}, %[[KROW]], %{{.*}}] -> %[[KP]][%{{.*}}] if %{{.*}}
func.func @split(%q: memref<?x?x?x128xbf16>, %kc: memref<?x?x?x128xbf16>, %vc: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>, %op: memref<?x?x?x128xf32>, %lp: memref<?x?x?xf32>) {
  attn.attention_kvcache %q, %kc, %vc, %o, %s partials %op, %lp {scale = 0.0883883 : f32}
    : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>, memref<?x?x?x128xf32>, memref<?x?x?xf32>
  return
}
}

// -----

// sm_90a: copies become pipe loads keeping their pages, waits pipe waits
// keeping zero_from.
module attributes {attn.target = #attn.target<sm_90a>} {
// CHECK-LABEL: func.func @paged
// CHECK: attn.pipe_load %arg1[{{.*}}] -> %{{.*}}[%c0] pages %arg5
// CHECK: scf.for
// CHECK:   attn.pipe_load %arg2[{{.*}}] pages %arg5
// CHECK:   attn.pipe_wait %{{.*}}[%{{.*}}] zero_from %{{.*}} : !attn.pipe<2, <128x64xf16, swizzle = 128>>
// CHECK:   attn.pipe_load %arg1[{{.*}}] pages %arg5
func.func @paged(%q: memref<?x?x?x64xf16>, %kc: memref<?x64x?x64xf16>, %vc: memref<?x64x?x64xf16>, %o: memref<?x?x?x64xf16>, %s: memref<?xi32>, %bt: memref<?x?xi32>) {
  attn.attention_kvcache %q, %kc, %vc, %o, %s block_table %bt {scale = 0.125 : f32}
    : memref<?x?x?x64xf16>, memref<?x64x?x64xf16>, memref<?x64x?x64xf16>, memref<?x?x?x64xf16>, memref<?xi32>, memref<?x?xi32>
  return
}
}
