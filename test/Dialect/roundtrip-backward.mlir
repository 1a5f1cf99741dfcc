// RUN: attngen-opt %s | attngen-opt | FileCheck %s

// The backward problem op and its tile ops print and parse back.
!t = memref<?x?x?x64xbf16>
!r = memref<?x?x?xf32>
// CHECK-LABEL: func.func @backward
// CHECK: attn.attention_backward %{{.*}} {backward = #attn.backward<dkdv>, causal, causal_align = #attn.causal_align<bottom_right>, scale = 1.250000e-01 : f32, softcap = 3.000000e+01 : f32}
func.func @backward(%q: !t, %l: !r) {
  attn.attention_backward %q, %q, %q, %q, %q, %l, %l, %q, %q, %q
      {backward = #attn.backward<dkdv>, causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32, softcap = 30.0 : f32}
    : !t, !t, !t, !t, !t, !r, !r, !t, !t, !t
  return
}

// CHECK-LABEL: func.func @tile_ops
// CHECK: attn.load_cols %{{.*}} : memref<?x?x?xf32> -> !attn.regs<32xf32, col>
// CHECK: attn.recompute_probs %{{.*}}, %{{.*}} {scale_log2e = 1.000000e+00 : f32} : !attn.regs<64x32xf32, acc>, !attn.regs<32xf32, col>
// CHECK: attn.softmax_grad %{{.*}}, %{{.*}}, %{{.*}} tanh %{{.*}} {scale = 5.000000e-01 : f32} : !attn.regs<64x32xf32, acc>, !attn.regs<32xf32, col>, !attn.regs<64x32xf32, acc>
// CHECK: attn.row_dot %{{.*}}, %{{.*}} : !attn.regs<64x32xf32, acc> -> !attn.regs<64xf32, row>
// CHECK: attn.load_cols %{{.*}} {exp2_bias} : memref<?x?x?xf32> -> !attn.regs<32xf32, col>
// CHECK: attn.recompute_probs %{{.*}}, %{{.*}} {biased, scale_log2e = 1.000000e+00 : f32}
// CHECK: attn.load_cols %{{.*}} : memref<?x?x?xf32> -> !attn.regs<64xf32, lanes>
// CHECK: attn.spread_cols %{{.*}} {exp2_bias} : !attn.regs<64xf32, lanes> -> !attn.regs<64xf32, col>
func.func @tile_ops(%src: memref<?x?x?xf32>, %i: index, %s: !attn.regs<64x32xf32, acc>) {
  %l = attn.load_cols %src[%i, %i, %i] : memref<?x?x?xf32> -> !attn.regs<32xf32, col>
  %p = attn.recompute_probs %s, %l {scale_log2e = 1.0 : f32}
    : !attn.regs<64x32xf32, acc>, !attn.regs<32xf32, col>
  %ds = attn.softmax_grad %p, %s, %l tanh %s {scale = 0.5 : f32}
    : !attn.regs<64x32xf32, acc>, !attn.regs<32xf32, col>, !attn.regs<64x32xf32, acc>
  %d = attn.row_dot %ds, %p : !attn.regs<64x32xf32, acc> -> !attn.regs<64xf32, row>
  %bias = attn.load_cols %src[%i, %i, %i] {exp2_bias} : memref<?x?x?xf32> -> !attn.regs<32xf32, col>
  %pb = attn.recompute_probs %s, %bias {biased, scale_log2e = 1.0 : f32}
    : !attn.regs<64x32xf32, acc>, !attn.regs<32xf32, col>
  %raw = attn.load_cols %src[%i, %i, %i] : memref<?x?x?xf32> -> !attn.regs<64xf32, lanes>
  %spread = attn.spread_cols %raw {exp2_bias} : !attn.regs<64xf32, lanes> -> !attn.regs<64xf32, col>
  return
}

// The one-kernel backward's dQ product and drain.
// CHECK-LABEL: func.func @dq_drain
// CHECK: %[[B:.*]] = attn.dq_mma %{{.*}}, %{{.*}} {async} : !attn.smem<128x128xbf16, swizzle = 128>, !attn.smem<128x64xbf16, swizzle = 128> -> !attn.regs<128x64xf32, acc>
// CHECK: %[[W:.*]] = attn.mma_wait %[[B]] {pending = 1 : i64}
// CHECK: attn.accumulate_dq %[[W]], %{{.*}} -> %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : !attn.regs<128x64xf32, acc>, memref<?x?x?x128xf32>, !attn.smem<128x64xf32, swizzle = 128>
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @dq_drain(%k: !attn.smem<128x128xbf16, swizzle = 128>, %ds: !attn.smem<128x64xbf16, swizzle = 128>,
                      %stage: !attn.smem<128x64xf32, swizzle = 128>, %dst: memref<?x?x?x128xf32>, %i: index) {
    %b = attn.dq_mma %k, %ds {async} : !attn.smem<128x128xbf16, swizzle = 128>, !attn.smem<128x64xbf16, swizzle = 128> -> !attn.regs<128x64xf32, acc>
    %w = attn.mma_wait %b {pending = 1} : !attn.regs<128x64xf32, acc>
    attn.accumulate_dq %w, %stage -> %dst[%i, %i, %i] : !attn.regs<128x64xf32, acc>, memref<?x?x?x128xf32>, !attn.smem<128x64xf32, swizzle = 128>
    return
  }
}

// sm_80: the whole dQ^T, synchronous, added from registers (no stage).
// CHECK-LABEL: func.func @dq_drain_sm80
// CHECK: attn.store_smem %{{.*}} -> %{{.*}} : !attn.regs<64x32xf32, acc>, !attn.smem<64x32xbf16, swizzle = 64>
// CHECK: %[[B:.*]] = attn.dq_mma %{{.*}}, %{{.*}} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x32xbf16, swizzle = 64> -> !attn.regs<128x32xf32, acc>
// CHECK: attn.accumulate_dq %[[B]] -> %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : !attn.regs<128x32xf32, acc>, memref<?x?x?x128xf32>
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @dq_drain_sm80(%k: !attn.smem<64x128xbf16, swizzle = 128>, %ds: !attn.smem<64x32xbf16, swizzle = 64>,
                           %dst: !attn.regs<64x32xf32, acc>, %acc: memref<?x?x?x128xf32>, %i: index) {
    attn.store_smem %dst -> %ds : !attn.regs<64x32xf32, acc>, !attn.smem<64x32xbf16, swizzle = 64>
    %b = attn.dq_mma %k, %ds : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x32xbf16, swizzle = 64> -> !attn.regs<128x32xf32, acc>
    attn.accumulate_dq %b -> %acc[%i, %i, %i] : !attn.regs<128x32xf32, acc>, memref<?x?x?x128xf32>
    return
  }
}

// CHECK-LABEL: func.func @post
// CHECK: attn.convert_rows %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] -> %{{.*}} {rows = 64 : i64} : memref<?x?x?x128xf32>, memref<?x?x?x128xbf16>
func.func @post(%acc: memref<?x?x?x128xf32>, %dq: memref<?x?x?x128xbf16>, %i: index) {
  attn.convert_rows %acc[%i, %i, %i] -> %dq {rows = 64 : i64} : memref<?x?x?x128xf32>, memref<?x?x?x128xbf16>
  return
}

// CHECK-LABEL: func.func @pre
// CHECK: attn.dot_rows %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] -> %{{.*}} {rows = 64 : i64} : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>
// CHECK: attn.clear_rows %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] {rows = 64 : i64} : memref<?x?x?x128xf32>
func.func @pre(%do: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %delta: memref<?x?x?xf32>,
               %acc: memref<?x?x?x128xf32>, %i: index) {
  attn.dot_rows %do, %o[%i, %i, %i] -> %delta {rows = 64 : i64} : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>
  attn.clear_rows %acc[%i, %i, %i] {rows = 64 : i64} : memref<?x?x?x128xf32>
  return
}
