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
