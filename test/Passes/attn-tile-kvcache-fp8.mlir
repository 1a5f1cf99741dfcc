// RUN: attngen-opt %s -attn-configure -attn-tile | FileCheck %s --check-prefix=TILE
// RUN: attngen-opt %s -attn-configure -attn-tile -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-transpose-v | FileCheck %s --check-prefix=MOVED
// RUN: attngen-opt %s -attn-configure -attn-tile -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-transpose-v -attn-warp-specialize -attn-expand-zero-rows | FileCheck %s --check-prefix=ROLES
// RUN: not attngen-opt %s -attn-configure -attn-tile -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-transpose-v -attn-warp-specialize=consumer-regs=240 2>&1 | FileCheck %s --check-prefix=ASKED

// FP8 decoding over a paged cache: the program is the bf16 one with
// attn.attention's FP8 pieces. The descales of (batch, kv head) are the
// softmax's and the finalize's run-time factors, P is scaled by 2^8, and
// the row-major value cache is copied in transposed (a 128 x 128 D x keys
// tile) for a P V product that reads it K-major. The value rows past the
// sequence are counted before the copy of V, so that attn-transpose-v can
// move their zeroing from the consumers' wait onto the transpose.

// TILE-LABEL: func.func @fp8_paged
// TILE-SAME: dtype = e4m3
// TILE-SAME: kv_cache = true, page_size = 64
// TILE-SAME: v_row_major = true
// TILE-SAME: attn.tensors = ["q", "k", "v", "o", "cache_seqlens", "block_table", "q_descale", "k_descale", "v_descale"]
// TILE-SAME: attn.tiling = #attn.tiling<block_m = 64, block_n = 128, num_warps = 4
// TILE-DAG:  %[[QK:.*]] = attn.descale %arg6, %arg7[%{{.*}}, %[[KVH:.*]]] : memref<?x?xf32>, memref<?x?xf32> -> !attn.regs<64xf32, row>
// TILE-DAG:  %[[VS:.*]] = attn.descale %arg8[%{{.*}}, %[[KVH]]] : memref<?x?xf32> -> !attn.regs<64xf32, row>
// TILE:      scf.for %[[J:[a-z0-9]+]] = 
// TILE:        %[[ROWS:.*]] = arith.subi %{{.*}}, %[[COL:.*]] : index
// TILE:        attn.copy_async %arg2[%{{.*}}, %[[COL]], %{{.*}}] -> %[[VT:.*]] fill %[[J]] pages %arg5 {transpose} : memref<?x64x?x128xf8E4M3FN>, !attn.smem<128x128xf8E4M3FN, swizzle = 128>
// TILE:        attn.online_softmax {{.*}} {probs_log2_scale = 8 : i64, scale = {{.*}} : f32} : !attn.regs<64x128xf32, acc>, !attn.regs<64xf32, row> factor %[[QK]]
// TILE:        attn.convert {{.*}} -> !attn.regs<64x128xf8E4M3FN, operand_a>
// TILE:        attn.wait %[[VT]], %[[J]] zero_from %[[ROWS]]
// TILE:        attn.mma {{.*}}, %[[VT]], {{.*}} {transpose_b} : !attn.regs<64x128xf8E4M3FN, operand_a>, !attn.smem<128x128xf8E4M3FN, swizzle = 128>
// TILE:      attn.softmax_finalize {{.*}} factor %[[QK]] : !attn.regs<64xf32, row> out_factor %[[VS]] : !attn.regs<64xf32, row>
// TILE:      attn.store {{.*}} -> %arg3[{{.*}}] : !attn.regs<64x128xf32, acc>, memref<?x?x?x128xbf16>

// The TMA lands V's pages row-major in the staging pipe, the transpose
// zeroes the keys past the sequence, and the consumers' wait no longer
// zeroes anything.
// MOVED-LABEL: func.func @fp8_paged
// MOVED:      scf.for %[[J:[a-z0-9]+]] =
// MOVED:        %[[ROWS:.*]] = arith.subi
// MOVED:        attn.pipe_load %arg2[{{.*}}] -> %[[VS:.*]][%[[J]]] pages %arg5 :
// MOVED-NEXT:   attn.pipe_transpose %[[VS]] -> %{{.*}}[%[[J]]] zero_from %[[ROWS]] {interleave_keys}
// MOVED-NOT:    zero_from
// MOVED:        attn.mma

// Two CTAs share an SM up to d128 (min_ctas_per_sm = 2): the consumers get
// what half the register file leaves beside the producer warpgroup's 40,
// (128 x 256 - 40 x 128) / 128 = 216.
// ROLES-LABEL: func.func @fp8_paged
// ROLES-SAME: min_ctas_per_sm = 2
// ROLES: attn.warp_specialize producer {
// ROLES: } transposer {
// ROLES: attn.pipe_transpose %{{.*}} -> %{{.*}}[%{{.*}}] zero_from %{{.*}} {interleave_keys}
// ROLES: } consumers {
// ROLES-NOT: zero_from
// ROLES-NOT: attn.zero_rows
// ROLES: } {consumer_regs = 216 : i64, consumer_warpgroups = 1 : i64, producer_regs = 40 : i64

// A budget asked for is kept as asked, and refused when the CTA's share
// of the register file cannot hold it.
// ASKED: 'attn.warp_specialize' op register budgets need 35840 registers, more than the 32768 the CTA's 256 threads start with (128 each at 2 CTAs per SM; setmaxnreg.inc would wait forever); lower producer_regs or consumer_regs

!q8 = memref<?x?x?x128xf8E4M3FN>
!c8 = memref<?x64x?x128xf8E4M3FN>
!o = memref<?x?x?x128xbf16>
!d = memref<?x?xf32>
module attributes {attn.target = #attn.target<sm_90a>} {
func.func @fp8_paged(%q: !q8, %kc: !c8, %vc: !c8, %o: !o, %s: memref<?xi32>, %bt: memref<?x?xi32>, %qd: !d, %kd: !d, %vd: !d) {
  attn.attention_kvcache %q, %kc, %vc, %o, %s block_table %bt descale(%qd, %kd, %vd) {scale = 0.0883883 : f32}
    : !q8, !c8, !c8, !o, memref<?xi32>, memref<?x?xi32>, !d, !d, !d
  return
}
}
