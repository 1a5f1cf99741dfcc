// RUN: attngen-opt %s -attn-configure -attn-tile -attn-causal-blocks -attn-online-softmax -canonicalize -cse -attn-persistent -attn-multibuffer -attn-transpose-v | FileCheck %s --check-prefix=SPLIT
// RUN: attngen-opt %s -attn-configure -attn-tile -attn-causal-blocks -attn-online-softmax -canonicalize -cse -attn-persistent -attn-multibuffer -attn-transpose-v -attn-warp-specialize | FileCheck %s --check-prefix=ROLES
// RUN: attngen-opt %s -attn-configure -attn-tile -attn-causal-blocks -attn-online-softmax -canonicalize -cse -attn-persistent -attn-multibuffer -attn-transpose-v=interleave-keys=false | FileCheck %s --check-prefix=PLAIN

// FP8 with V stored row-major: attn-tile copies it in transposed all the
// same (`transpose`), attn-multibuffer keeps that on the fill, and
// attn-transpose-v splits the fill: the TMA lands V row-major in a staging
// pipe (keys x D) whose stages the transposing warps release, and an
// attn.pipe_transpose completes the fills of the pipe the consumers read
// (D x keys, one arrival per transposing warp).

// SPLIT-LABEL: func.func @fp8_v_row_major
// SPLIT: %[[VT:.*]] = attn.create_pipe {fill_arrivals = 3 : i64} : !attn.pipe<2, <128x128xf8E4M3FN, swizzle = 128>>
// SPLIT-NEXT: %[[VS:.*]] = attn.create_pipe {release_arrivals = 3 : i64} : !attn.pipe<2, <128x128xf8E4M3FN, swizzle = 128>>
// SPLIT-NOT: transpose}
// SPLIT: attn.pipe_acquire %[[VS]][%[[F:.*]]] :
// SPLIT-NEXT: attn.pipe_load %arg2[{{.*}}] -> %[[VS]][%[[F]]] : memref<?x?x?x128xf8E4M3FN>,
// SPLIT-NEXT: attn.pipe_transpose %[[VS]] -> %[[VT]][%[[F]]] {interleave_keys}
// SPLIT: %[[P:.*]] = attn.convert %{{.*}} {interleaved_keys} : !attn.regs<128x128xf32, acc> -> !attn.regs<128x128xf8E4M3FN, operand_a>
// SPLIT: %[[V:.*]] = attn.pipe_wait %[[VT]][
// SPLIT: attn.mma %[[P]], %[[V]], %{{.*}} {transpose_b}
// SPLIT: attn.pipe_release %[[VT]][

// The P V product reads P straight from its conversion, so the transposes
// store V's keys in the accumulator's order and the conversion keeps P's
// bytes where they are ({interleave_keys}, {interleaved_keys}); without the
// option, neither.
// PLAIN-LABEL: func.func @fp8_v_row_major
// PLAIN-NOT: interleave
// PLAIN: attn.pipe_transpose
// PLAIN-NOT: interleave

// The transposes get a region of their own on the producer warpgroup's
// other warps; the TMA thread and the consumers keep their programs, and
// the producer warpgroup keeps 40 registers for the transposes (232 for
// the consumers: the 168 each of 384 threads start with, moved).
// ROLES-LABEL: func.func @fp8_v_row_major
// ROLES: attn.warp_specialize producer {
// ROLES-NOT: attn.pipe_transpose
// ROLES: attn.pipe_load %arg2
// ROLES: } transposer {
// ROLES-NOT: attn.pipe_load
// ROLES-NOT: attn.pipe_acquire
// ROLES: attn.pipe_transpose
// ROLES-NOT: attn.mma
// ROLES: } consumers {
// ROLES-NOT: attn.pipe_transpose
// ROLES: attn.mma
// ROLES: } {consumer_regs = 232 : i64, consumer_warpgroups = 2 : i64, producer_regs = 40 : i64, producer_warps = 4 : i64

!q8 = memref<?x?x?x128xf8E4M3FN>
!o = memref<?x?x?x128xbf16>
!d = memref<?x?xf32>
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @fp8_v_row_major(%q: !q8, %k: !q8, %v: !q8, %o: !o, %lse: memref<?x?x?xf32>,
                             %qd: !d, %kd: !d, %vd: !d) {
    attn.attention %q, %k, %v, %o lse %lse descale(%qd, %kd, %vd : !d, !d, !d)
        {scale = 0.0883883 : f32} : !q8, !q8, !q8, !o, memref<?x?x?xf32>
    return
  }
}
