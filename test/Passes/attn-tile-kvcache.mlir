// RUN: attngen-opt %s -split-input-file -attn-configure=warp-specialize=false -attn-tile | FileCheck %s

// A split-KV decoding kernel: rows = (head in pack, position), the split
// folded into program_id 0, the key range of split s, at least one block,
// fills from 0 with rows from the split's base, the V wait zeroing rows past
// the sequence, the outputs or the partials by num_splits.
module attributes {attn.target = #attn.target<sm_90a>} {
// CHECK-LABEL: func.func @split
// CHECK-SAME: attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 16, times = num_splits>, #attn.grid_dim<size = num_heads, tile = 4>, #attn.grid_dim<size = batch, tile = 1>], ctas_per_sm = 0>
// CHECK-SAME: causal = true,{{.*}} causal_align = bottom_right,{{.*}} kv_cache = true, page_size = 0, split_kv = true, head_pack = 4, backward = none, alibi = false, head_dim_v = 0, block_scales = false, v_row_major = false, combine = false>
// CHECK-SAME: attn.tensors = ["q", "k", "v", "o", "cache_seqlens", "lse", "o_partial", "lse_partial"]
// CHECK-SAME: attn.tiling = #attn.tiling<block_m = 64, block_n = 128, num_warps = 4{{[^>]*}}>
// CHECK:      %[[X:.*]] = attn.program_id 0
// CHECK:      %[[NS:.*]] = attn.problem_size num_splits
// CHECK:      %[[QT:.*]] = arith.ceildivui %{{.*}}, %[[C16:.*]] : index
// CHECK-NEXT: %[[QB:.*]] = arith.remui %[[X]], %[[QT]] : index
// CHECK-NEXT: %[[SPLIT:.*]] = arith.divui %[[X]], %[[QT]] : index
// CHECK:      %[[STORED:.*]] = attn.load_index %{{.*}}[%{{.*}}] fallback %[[CAP:.*]] : memref<?xi32>
// CHECK-NEXT: %[[POS:.*]] = arith.maxsi %[[STORED]], %{{.*}} : index
// CHECK-NEXT: %[[KVLEN:.*]] = arith.minsi %[[POS]], %[[CAP]] : index
// CHECK:      %[[PER:.*]] = arith.ceildivui %[[TOTAL:.*]], %[[NS]] : index
// CHECK:      %[[LO:.*]] = arith.minui %{{.*}}, %[[TOTAL]] : index
// CHECK:      %[[N:.*]] = arith.maxui %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[BASE:.*]] = arith.muli %[[LO]], %{{.*}} : index
// CHECK:      attn.copy_async %arg0[%{{.*}}, %{{.*}}, %{{.*}}] -> %{{.*}} fill %{{.*}} {head_pack = 4 : i64}
// CHECK:      attn.copy_async %arg1[%{{.*}}, %[[BASE]], %{{.*}}] -> %{{.*}} fill %{{.*}} :
// CHECK:      scf.for %[[J:.*]] = %{{.*}} to %[[N]] step
// CHECK:        %[[COL:.*]] = arith.addi %{{.*}}, %[[BASE]] : index
// CHECK-NEXT:   %[[ZF:.*]] = arith.subi %[[KVLEN]], %[[COL]] : index
// CHECK:        attn.copy_async %arg2[%{{.*}}, %[[COL]], %{{.*}}] -> %{{.*}} fill %[[J]]
// CHECK:        scf.if %{{.*}} -> (!attn.regs<64x128xf32, acc>) {
// CHECK-NEXT:     attn.mask %{{.*}}, %{{.*}}, %[[COL]], %[[KVLEN]] q_len %{{.*}} {causal, causal_align = #attn.causal_align<bottom_right>, head_pack = 4 : i64}
// CHECK:        attn.wait %{{.*}}, %[[J]] zero_from %[[ZF]]
// CHECK:      %[[ONE:.*]] = arith.cmpi eq, %[[NS]], %{{.*}} : index
// CHECK:      scf.if %[[ONE]] {
// CHECK-NEXT:   attn.store %{{.*}} -> %arg3[{{.*}}] {head_pack = 4 : i64} : !attn.regs<64x128xf32, acc>, memref<?x?x?x128xbf16>
// CHECK-NEXT:   attn.store_rows %{{.*}} -> %arg5[{{.*}}] {head_pack = 4 : i64}
// CHECK:      } else {
// CHECK:        %[[PB:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:   attn.store %{{.*}} -> %arg6[%[[PB]], {{.*}}] {head_pack = 4 : i64} : !attn.regs<64x128xf32, acc>, memref<?x?x?x128xf32>
// CHECK-NEXT:   attn.store_rows %{{.*}} -> %arg7[%[[PB]], {{.*}}] {head_pack = 4 : i64}
func.func @split(%q: memref<?x?x?x128xbf16>, %kc: memref<?x?x?x128xbf16>, %vc: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>, %lse: memref<?x?x?xf32>, %op: memref<?x?x?x128xf32>, %lp: memref<?x?x?xf32>) {
  attn.attention_kvcache %q, %kc, %vc, %o, %s lse %lse partials %op, %lp {causal, head_pack = 4 : i64, scale = 0.0883883 : f32}
    : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>, memref<?x?x?xf32>, memref<?x?x?x128xf32>, memref<?x?x?xf32>
  return
}
}

// -----

// A paged cache: the capacity is max_blocks * page_size, every K/V copy reads
// pages, the key block of 128 rows covers two pages of 64.
module attributes {attn.target = #attn.target<sm_90a>} {
// CHECK-LABEL: func.func @paged
// CHECK-SAME: kv_cache = true, page_size = 64,
// CHECK-SAME: attn.tensors = ["q", "k", "v", "o", "cache_seqlens", "block_table"]
// CHECK:      %[[MB:.*]] = memref.dim %arg5, %{{.*}} : memref<?x?xi32>
// CHECK-NEXT: %[[CAP:.*]] = arith.muli %[[MB]], %{{.*}} : index
// CHECK-NEXT: attn.load_index %arg4[%{{.*}}] fallback %[[CAP]]
// CHECK-COUNT-1: attn.copy_async %arg1[{{.*}}] -> %{{.*}} fill %{{.*}} pages %arg5
// CHECK:      scf.for
// CHECK:        attn.copy_async %arg2[{{.*}}] -> %{{.*}} fill %{{.*}} pages %arg5
// CHECK:        attn.copy_async %arg1[{{.*}}] -> %{{.*}} fill %{{.*}} pages %arg5
func.func @paged(%q: memref<?x?x?x64xf16>, %kc: memref<?x64x?x64xf16>, %vc: memref<?x64x?x64xf16>, %o: memref<?x?x?x64xf16>, %s: memref<?xi32>, %bt: memref<?x?xi32>) {
  attn.attention_kvcache %q, %kc, %vc, %o, %s block_table %bt {scale = 0.125 : f32}
    : memref<?x?x?x64xf16>, memref<?x64x?x64xf16>, memref<?x64x?x64xf16>, memref<?x?x?x64xf16>, memref<?xi32>, memref<?x?xi32>
  return
}
}

// -----

// The combine program: one pass over the splits merging (lse_s, O_s) into
// the running max, sum and output, then O = acc / l, LSE = m + log(l).
module attributes {attn.target = #attn.target<sm_90a>} {
// CHECK-LABEL: func.func @combine
// CHECK-SAME: attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 16>, #attn.grid_dim<size = num_heads, tile = 4>, #attn.grid_dim<size = batch, tile = 1>], ctas_per_sm = 0>
// CHECK-SAME: combine = true>
// CHECK-SAME: attn.tensors = ["o_partial", "lse_partial", "o", "lse"]
// CHECK:      %[[NS:.*]] = attn.problem_size num_splits
// CHECK:      scf.for %{{.*}} = %{{.*}} to %[[NS]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %[[M:.*]] = %{{.*}}, %[[L:.*]] = %{{.*}})
// CHECK:        %[[LSES:.*]] = attn.load_rows %arg1
// CHECK-NEXT:   %[[OS:.*]] = attn.load %arg0
// CHECK-NEXT:   %[[M1:.*]] = attn.elementwise max %[[M]], %[[LSES]]
// CHECK-NEXT:   %[[ALPHA:.*]] = attn.exp2_diff %[[M]], %[[M1]] {scale_log2e = 1.44269502 : f32}
// CHECK-NEXT:   %[[W:.*]] = attn.exp2_diff %[[LSES]], %[[M1]] {scale_log2e = 1.44269502 : f32}
// CHECK-NEXT:   %[[LA:.*]] = attn.rescale %[[L]], %[[ALPHA]]
// CHECK-NEXT:   %[[L1:.*]] = attn.elementwise sum %[[LA]], %[[W]]
// CHECK-NEXT:   %[[AA:.*]] = attn.rescale %[[ACC]], %[[ALPHA]]
// CHECK-NEXT:   %[[OW:.*]] = attn.rescale %[[OS]], %[[W]]
// CHECK-NEXT:   %[[ACC1:.*]] = attn.elementwise sum %[[AA]], %[[OW]]
// CHECK-NEXT:   scf.yield %[[ACC1]], %[[M1]], %[[L1]]
// CHECK:      attn.normalize
// CHECK:      attn.store {{.*}} -> %arg2
// CHECK:      attn.lse {{.*}} {scale = 1.000000e+00 : f32}
// CHECK:      attn.store_rows {{.*}} -> %arg3
func.func @combine(%op: memref<?x?x?x128xf32>, %lp: memref<?x?x?xf32>, %o: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>) {
  attn.combine_splits %op, %lp, %o lse %lse {head_pack = 4 : i64} : memref<?x?x?x128xf32>, memref<?x?x?xf32>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>
  return
}
}

// -----

// A key block must fit the pages: 48-row pages take 96-row blocks.
module attributes {attn.target = #attn.target<sm_90a>} {
// CHECK-LABEL: func.func @page48
// CHECK-SAME: attn.tiling = #attn.tiling<block_m = 64, block_n = 96, num_warps = 4{{[^>]*}}>
func.func @page48(%q: memref<?x?x?x128xbf16>, %kc: memref<?x48x?x128xbf16>, %vc: memref<?x48x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>, %bt: memref<?x?xi32>) {
  attn.attention_kvcache %q, %kc, %vc, %o, %s block_table %bt {scale = 0.125 : f32}
    : memref<?x?x?x128xbf16>, memref<?x48x?x128xbf16>, memref<?x48x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>, memref<?x?xi32>
  return
}
}

// -----

// A sliding window (left 100, right 50): the key range starts at the block
// of the first row's diagonal minus 100 (max(d, 100) - 100, no underflow),
// ends at the last row's diagonal plus min(50, kv_len - d - 1), every block
// is masked, and the mask carries both sides, bottom-right.
module attributes {attn.target = #attn.target<sm_90a>} {
// CHECK-LABEL: func.func @window
// CHECK-SAME: causal = false,{{.*}} causal_align = bottom_right,{{.*}} window_left = 100, window_right = 50,
// CHECK:      %[[KVLEN:.*]] = arith.minsi %{{.*}}, %{{.*}} : index
// CHECK:      %[[OFF:.*]] = arith.subi %[[KVLEN]], %{{.*}} : index
// CHECK:      %[[ROOM:.*]] = arith.subi %[[KVLEN]], %{{.*}} : index
// CHECK:      %[[R:.*]] = arith.minsi %{{.*}}, %[[ROOM]] : index
// CHECK:      %[[D0:.*]] = arith.addi %{{.*}}, %[[OFF]] : index
// CHECK:      %[[MAXL:.*]] = arith.maxsi %[[D0]], %[[L:.*]] : index
// CHECK-NEXT: %[[FIRST:.*]] = arith.subi %[[MAXL]], %[[L]] : index
// CHECK:      %[[FB:.*]] = arith.divui %[[FIRST]], %{{.*}} : index
// CHECK:      scf.for
// CHECK:        scf.if %{{.*}} -> (!attn.regs<64x128xf32, acc>) {
// CHECK-NEXT:     attn.mask %{{.*}}, %{{.*}}, %{{.*}}, %[[KVLEN]] q_len %{{.*}} {causal_align = #attn.causal_align<bottom_right>, window_left = 100 : i64, window_right = 50 : i64}
func.func @window(%q: memref<?x?x?x128xbf16>, %kc: memref<?x?x?x128xbf16>, %vc: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>) {
  attn.attention_kvcache %q, %kc, %vc, %o, %s {window_left = 100 : i64, window_right = 50 : i64, scale = 0.0883883 : f32}
    : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>
  return
}
}
