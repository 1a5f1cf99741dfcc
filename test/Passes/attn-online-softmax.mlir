// RUN: attngen-opt %s -attn-online-softmax | FileCheck %s
// RUN: attngen-opt %s -attn-online-softmax=exp2-emulate=3 | FileCheck %s --check-prefix=EMU
// RUN: not attngen-opt %s -attn-online-softmax=exp2-emulate=9 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not attngen-opt %s -attn-online-softmax=exp2-emulate=-1 2>&1 | FileCheck %s --check-prefix=NEG

// exp2-emulate marks P's exponentials only; alpha (one per row) stays on MUFU.
// EMU-LABEL: func.func @step
// EMU: %[[M1:.*]] = attn.row_reduce max
// EMU-NEXT: attn.exp2_diff %{{.*}}, %[[M1]] {emulated_eighths = 3 : i64, scale_log2e = 0.180336878 : f32} : !attn.regs<64x64xf32, acc>
// EMU-NEXT: attn.exp2_diff %{{.*}}, %[[M1]] {scale_log2e = 0.180336878 : f32} : !attn.regs<64xf32, row>
// EMU-NOT: emulated_eighths
// EMU-LABEL: func.func @block_step
// RANGE: error: attn-online-softmax: exp2-emulate=9 is out of range; use 0 (all on MUFU) to 8 (eighths of the score blocks)
// NEG: error: attn-online-softmax: exp2-emulate=-1 is out of range; use 0 (all on MUFU) to 8 (eighths of the score blocks)

// scale 0.125 * log2(e) = 0.180336878 is folded into the exponent.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[S:.*]]: !attn.regs<64x64xf32, acc>, %[[M:.*]]: !attn.regs<64xf32, row>, %[[L:.*]]: !attn.regs<64xf32, row>, %[[O:.*]]: !attn.regs<64x128xf32, acc>)
// CHECK: %[[M1:.*]] = attn.row_reduce max %[[S]], %[[M]]
// CHECK: %[[P:.*]] = attn.exp2_diff %[[S]], %[[M1]] {scale_log2e = 0.180336878 : f32}
// CHECK: %[[A:.*]] = attn.exp2_diff %[[M]], %[[M1]] {scale_log2e = 0.180336878 : f32}
// CHECK: %[[LS:.*]] = attn.rescale %[[L]], %[[A]]
// CHECK: %[[L1:.*]] = attn.row_reduce sum %[[P]], %[[LS]]
// CHECK: %[[O1:.*]] = attn.rescale %[[O]], %[[A]]
// CHECK: %[[OUT:.*]] = attn.normalize %[[O1]], %[[L1]]
// CHECK: %[[LSE:.*]] = attn.lse %[[M1]], %[[L1]] {scale = 1.250000e-01 : f32}
// CHECK: return %[[P]], %[[OUT]], %[[LSE]]
func.func @step(%s: !attn.regs<64x64xf32, acc>, %m: !attn.regs<64xf32, row>,
                %l: !attn.regs<64xf32, row>, %o: !attn.regs<64x128xf32, acc>)
    -> (!attn.regs<64x64xf32, acc>, !attn.regs<64x128xf32, acc>, !attn.regs<64xf32, row>) {
  %p, %m1, %l1, %alpha = attn.online_softmax %s, %m, %l {scale = 0.125 : f32}
    : !attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row>
  %o1 = attn.rescale %o, %alpha : !attn.regs<64x128xf32, acc>, !attn.regs<64xf32, row>
  %out, %lse = attn.softmax_finalize %o1, %m1, %l1 {scale = 0.125 : f32}
    : !attn.regs<64x128xf32, acc>, !attn.regs<64xf32, row>
  return %p, %out, %lse : !attn.regs<64x64xf32, acc>, !attn.regs<64x128xf32, acc>, !attn.regs<64xf32, row>
}

// FP8 block quantization: the key block's descale %k scales the scores
// without a multiply per score. The raw row max against m / k is P's offset,
// times k the new max; k joins the run-time factor; alpha stays in true units.
// CHECK-LABEL: func.func @block_step
// CHECK-SAME: (%[[S:.*]]: !attn.regs<64x64xf32, acc>, %[[M:.*]]: !attn.regs<64xf32, row>, %[[L:.*]]: !attn.regs<64xf32, row>, %[[F:.*]]: !attn.regs<64xf32, row>, %[[K:.*]]: !attn.regs<64xf32, row>, %[[KI:.*]]: !attn.regs<64xf32, row>)
// CHECK: %[[MK:.*]] = attn.rescale %[[M]], %[[KI]]
// CHECK: %[[RAW:.*]] = attn.row_reduce max %[[S]], %[[MK]]
// CHECK: %[[M1:.*]] = attn.rescale %[[RAW]], %[[K]]
// CHECK: %[[FK:.*]] = attn.rescale %[[F]], %[[K]]
// CHECK: %[[P:.*]] = attn.exp2_diff %[[S]], %[[RAW]] {offset = 8.000000e+00 : f32, scale_log2e = 0.180336878 : f32} : !attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row> factor %[[FK]]
// CHECK: %[[A:.*]] = attn.exp2_diff %[[M]], %[[M1]] {scale_log2e = 0.180336878 : f32} : !attn.regs<64xf32, row>, !attn.regs<64xf32, row> factor %[[F]]
// CHECK: return %[[P]], %[[M1]], %[[A]]
func.func @block_step(%s: !attn.regs<64x64xf32, acc>, %m: !attn.regs<64xf32, row>,
                      %l: !attn.regs<64xf32, row>, %f: !attn.regs<64xf32, row>,
                      %k: !attn.regs<64xf32, row>, %ki: !attn.regs<64xf32, row>)
    -> (!attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row>, !attn.regs<64xf32, row>) {
  %p, %m1, %l1, %alpha = attn.online_softmax %s, %m, %l {probs_log2_scale = 8 : i64, scale = 0.125 : f32}
    : !attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row> factor %f : !attn.regs<64xf32, row>
      block_factor %k, %ki : !attn.regs<64xf32, row>, !attn.regs<64xf32, row>
  return %p, %m1, %alpha : !attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row>, !attn.regs<64xf32, row>
}
