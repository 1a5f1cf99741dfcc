// RUN: attngen-opt %s -split-input-file -attn-configure -attn-tile | FileCheck %s
// FP8 attention's tile program: the descales of the tile's (batch, kv head)
// as run-time factors of the softmax (q's times k's) and of the output
// (v's), P scaled by 2^8 before its e4m3 conversion (its LSE unscaled), and
// V copied in transposed (its K-major source) for a P V product that reads
// it K-major, as FP8 wgmma needs.

// CHECK-LABEL: func.func @fp8
// CHECK-DAG: %[[QK:.*]] = attn.descale %arg5, %arg6[%{{.*}}, %[[KVH:.*]]] : memref<?x?xf32>, memref<?x?xf32> -> !attn.regs<128xf32, row>
// CHECK-DAG: %[[VS:.*]] = attn.descale %arg7[%{{.*}}, %[[KVH]]] : memref<?x?xf32> -> !attn.regs<128xf32, row>
// CHECK: scf.for
// CHECK: attn.copy_async %arg2[{{.*}}] -> %[[VT:[0-9]+]] fill {{.*}} : memref<?x?x?x128xf8E4M3FN, strided<[?, 1, ?, ?]>>, !attn.smem<128x128xf8E4M3FN, swizzle = 128>
// CHECK: attn.online_softmax {{.*}} {probs_log2_scale = 8 : i64, scale = {{.*}} : f32} : !attn.regs<128x128xf32, acc>, !attn.regs<128xf32, row> factor %[[QK]] : !attn.regs<128xf32, row>
// CHECK: attn.convert {{.*}} -> !attn.regs<128x128xf8E4M3FN, operand_a>
// CHECK: attn.mma {{.*}}, %[[VT]], {{.*}} {transpose_b} : !attn.regs<128x128xf8E4M3FN, operand_a>, !attn.smem<128x128xf8E4M3FN, swizzle = 128>
// CHECK: attn.softmax_finalize {{.*}} {probs_log2_scale = 8 : i64, scale = {{.*}} : f32} : !attn.regs<128x128xf32, acc>, !attn.regs<128xf32, row> factor %[[QK]] : !attn.regs<128xf32, row> out_factor %[[VS]] : !attn.regs<128xf32, row>

!q8 = memref<?x?x?x128xf8E4M3FN>
!v8 = memref<?x?x?x128xf8E4M3FN, strided<[?, 1, ?, ?]>>
!o = memref<?x?x?x128xbf16>
!d = memref<?x?xf32>
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @fp8(%q: !q8, %k: !q8, %v: !v8, %o: !o, %lse: memref<?x?x?xf32>,
                 %qd: !d, %kd: !d, %vd: !d) {
    attn.attention %q, %k, %v, %o lse %lse descale(%qd, %kd, %vd : !d, !d, !d)
        {scale = 0.0883883 : f32} : !q8, !q8, !v8, !o, memref<?x?x?xf32>
    return
  }
}

// -----
// Block quantization (--block-scales): q's descale per query row's 128-row
// block; k's per key block, which the online softmax takes as its
// block_factor (with its inverse: no multiply per score); v's per key
// block: the accumulator is kept in units of the last V block's descale
// (alpha times s_{j-1} / s_j, s_j carried), which the finalize multiplies in.

// CHECK-LABEL: func.func @fp8_blocks
// CHECK: %[[Q:.*]] = attn.descale %arg5[%{{.*}}, %{{.*}}] rows %{{.*}} : memref<?x?x?xf32, strided<[?, ?, 1]>> -> !attn.regs<128xf32, row>
// CHECK: %[[ONE:.*]] = attn.splat 1.0{{.*}} -> !attn.regs<128xf32, row>
// CHECK: %[[LOOP:.*]]:4 = scf.for %[[J:[a-z0-9]+]] = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[PREV:.*]] = %[[ONE]])
// CHECK: %[[K:.*]] = attn.descale %arg6[%{{.*}}, %{{.*}}] block %[[J]] : memref<?x?x?xf32, strided<[?, ?, 1]>> -> !attn.regs<128xf32, row>
// CHECK: %[[KI:.*]] = attn.descale %arg6[%{{.*}}, %{{.*}}] block %[[J]] {reciprocal} : memref<?x?x?xf32, strided<[?, ?, 1]>> -> !attn.regs<128xf32, row>
// CHECK: %[[VS:.*]] = attn.descale %arg7[%{{.*}}, %{{.*}}] block %[[J]] : memref<?x?x?xf32, strided<[?, ?, 1]>> -> !attn.regs<128xf32, row>
// CHECK: %[[VI:.*]] = attn.descale %arg7[%{{.*}}, %{{.*}}] block %[[J]] {reciprocal} : memref<?x?x?xf32, strided<[?, ?, 1]>> -> !attn.regs<128xf32, row>
// CHECK: attn.wait
// CHECK: %[[S:.*]] = attn.mma
// CHECK-NOT: attn.rescale %[[S]]
// CHECK: %[[SM:.*]] = attn.mask %[[S]]
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[ALPHA:.*]] = attn.online_softmax %[[SM]], {{.*}} factor %[[Q]] : !attn.regs<128xf32, row> block_factor %[[K]], %[[KI]] : !attn.regs<128xf32, row>, !attn.regs<128xf32, row>
// CHECK: %[[A1:.*]] = attn.rescale %[[ALPHA]], %[[PREV]] : !attn.regs<128xf32, row>, !attn.regs<128xf32, row>
// CHECK: %[[A2:.*]] = attn.rescale %[[A1]], %[[VI]] : !attn.regs<128xf32, row>, !attn.regs<128xf32, row>
// CHECK: attn.rescale %[[ACC]], %[[A2]] : !attn.regs<128x128xf32, acc>, !attn.regs<128xf32, row>
// CHECK: scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %[[VS]]
// CHECK: attn.softmax_finalize {{.*}} factor %[[Q]] : !attn.regs<128xf32, row> out_factor %[[LOOP]]#3 : !attn.regs<128xf32, row>

!q8 = memref<?x?x?x128xf8E4M3FN>
!v8 = memref<?x?x?x128xf8E4M3FN, strided<[?, 1, ?, ?]>>
!o = memref<?x?x?x128xbf16>
!d = memref<?x?xf32>
!b = memref<?x?x?xf32, strided<[?, ?, 1]>>
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @fp8_blocks(%q: !q8, %k: !q8, %v: !v8, %o: !o, %lse: memref<?x?x?xf32>,
                        %qd: !b, %kd: !b, %vd: !b) {
    attn.attention %q, %k, %v, %o lse %lse descale(%qd, %kd, %vd : !b, !b, !b)
        {scale = 0.0883883 : f32} : !q8, !q8, !v8, !o, memref<?x?x?xf32>
    return
  }
}
