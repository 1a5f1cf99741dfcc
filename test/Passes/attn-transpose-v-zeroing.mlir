// RUN: attngen-opt %s -attn-transpose-v | FileCheck %s

// The dense loop over a paged cache computes a fill's index once for V's
// copy and again for its zeroing wait (two equal arith.addi): the zeroing
// still moves onto the transpose of that fill, its count computed before
// the copy, and the wait of the transposed pipe zeroes nothing.
!vp = !attn.pipe<2, !attn.smem<128x128xf8E4M3FN, swizzle = 128>>
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @recomputed_fill(%V: memref<?x64x?x128xf8E4M3FN>, %table: memref<?x?xi32>,
                             %base: index, %j: index, %col: index, %n: index) {
    %vp = attn.create_pipe : !vp
    %rows = arith.subi %n, %col : index
    %f = arith.addi %base, %j : index
    attn.pipe_acquire %vp[%f] : !vp
    attn.pipe_load %V[%j, %col, %j] -> %vp[%f] pages %table {transpose} : memref<?x64x?x128xf8E4M3FN>, !vp, memref<?x?xi32>
    %g = arith.addi %base, %j : index
    %v = attn.pipe_wait %vp[%g] zero_from %rows : !vp -> !attn.smem<128x128xf8E4M3FN, swizzle = 128>
    return
  }
}
// CHECK-LABEL: func.func @recomputed_fill
// CHECK: %[[ROWS:.*]] = arith.subi
// CHECK: attn.pipe_transpose %{{.*}} -> %{{.*}}[%{{.*}}] zero_from %[[ROWS]]
// CHECK: attn.pipe_wait %{{.*}}[%{{.*}}] : !attn.pipe<2, <128x128xf8E4M3FN, swizzle = 128>> -> !attn.smem
