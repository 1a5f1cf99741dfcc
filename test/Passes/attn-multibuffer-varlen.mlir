// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -attn-online-softmax -canonicalize -cse \
// RUN:   -attn-multibuffer=stages=2 | FileCheck %s --check-prefix=RING

// sm_80 rings in a varlen kernel: the schedule stays inside the scf.if that
// lets only CTAs whose query block lies in their sequence run the program,
// with the prologue fills, wait counts and barriers of a dense kernel.
module attributes {attn.target = #attn.target<sm_80>} {
  // RING-LABEL: func.func @varlen
  // RING: %[[SQ:.*]], %{{.*}} = attn.sequence %arg5
  // RING: %[[SK:.*]], %{{.*}} = attn.sequence %arg6
  // RING: scf.if
  // RING: attn.pipe_load %arg0[%[[SQ]], %{{.*}}] -> %{{.*}}[%c0] : memref<?x?x128xbf16>, !attn.pipe<1
  // RING: attn.pipe_load %arg1[%[[SK]], %{{.*}}] -> %{{.*}}[%c0{{.*}}] : memref<?x?x128xbf16>, !attn.pipe<2
  // RING: attn.pipe_load %arg2[%[[SK]], %{{.*}}] -> %{{.*}}[%c0{{.*}}] : memref<?x?x128xbf16>, !attn.pipe<2
  // RING: attn.pipe_load %arg1[%[[SK]], %{{.*}}] -> %{{.*}}[%c1{{.*}}] if %{{.*}} : memref<?x?x128xbf16>, !attn.pipe<2
  // RING: attn.pipe_wait %{{.*}}[%c0] {pending = 3 : i64}
  // RING-NEXT: attn.barrier
  // RING: scf.for
  // RING: attn.pipe_wait %{{.*}} {pending = 2 : i64}
  // RING-NEXT: attn.barrier
  func.func @varlen(%q: memref<?x?x128xbf16>, %k: memref<?x?x128xbf16>,
                    %v: memref<?x?x128xbf16>, %o: memref<?x?x128xbf16>,
                    %lse: memref<?x?xf32>, %cq: memref<?xi32>, %ck: memref<?xi32>) {
    attn.attention %q, %k, %v, %o lse %lse varlen(%cq, %ck : memref<?xi32>, memref<?xi32>)
        {scale = 0.0883883 : f32}
      : memref<?x?x128xbf16>, memref<?x?x128xbf16>, memref<?x?x128xbf16>,
        memref<?x?x128xbf16>, memref<?x?xf32>
    return
  }
}

