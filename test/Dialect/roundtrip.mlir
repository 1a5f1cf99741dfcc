// RUN: attngen-opt %s | attngen-opt | FileCheck %s

// CHECK-LABEL: func.func @attention
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lse %{{.*}} {causal, scale = 1.250000e-01 : f32}
func.func @attention(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                     %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>,
                     %lse: memref<?x?x?xf32>) {
  attn.attention %q, %k, %v, %o lse %lse {causal, scale = 0.125 : f32}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>,
      memref<?x?x?x64xf16>, memref<?x?x?xf32>
  return
}

// CHECK-LABEL: func.func @attention_bottom_right
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal, causal_align = #attn.causal_align<bottom_right>, scale = 1.250000e-01 : f32}
func.func @attention_bottom_right(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                                  %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  attn.attention %q, %k, %v, %o {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// An explicit top-left alignment is kept as written.
// CHECK-LABEL: func.func @attention_top_left
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal, causal_align = #attn.causal_align<top_left>, scale = 1.250000e-01 : f32}
func.func @attention_top_left(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                              %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  attn.attention %q, %k, %v, %o {causal, causal_align = #attn.causal_align<top_left>, scale = 0.125 : f32}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// CHECK-LABEL: func.func @mask_bottom_right
// CHECK: attn.mask %[[S:.*]], %[[R:.*]], %[[C:.*]], %[[NK:.*]] q_len %[[NQ:.*]] {causal, causal_align = #attn.causal_align<bottom_right>} : !attn.regs<64x64xf32, acc>
func.func @mask_bottom_right(%s: !attn.regs<64x64xf32, acc>, %row: index, %col: index,
                             %nk: index, %nq: index) -> !attn.regs<64x64xf32, acc> {
  %m = attn.mask %s, %row, %col, %nk q_len %nq {causal, causal_align = #attn.causal_align<bottom_right>} : !attn.regs<64x64xf32, acc>
  return %m : !attn.regs<64x64xf32, acc>
}

// A sliding window: both sides, one side, a causal window; the alignment
// places a window's diagonal as it does a causal one.
// CHECK-LABEL: func.func @attention_window
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f32, window_left = 100 : i64, window_right = 50 : i64}
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal_align = #attn.causal_align<bottom_right>, scale = 1.250000e-01 : f32, window_right = 64 : i64}
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal, causal_align = #attn.causal_align<bottom_right>, scale = 1.250000e-01 : f32, window_left = 256 : i64, window_right = 0 : i64}
func.func @attention_window(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                            %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32, window_left = 100, window_right = 50}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  attn.attention %q, %k, %v, %o {causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32, window_right = 64}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  attn.attention %q, %k, %v, %o {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32, window_left = 256, window_right = 0}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// CHECK-LABEL: func.func @mask_window
// CHECK: attn.mask %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {window_left = 100 : i64, window_right = 50 : i64} : !attn.regs<64x64xf32, acc>
// CHECK: attn.mask %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} q_len %{{.*}} {causal, causal_align = #attn.causal_align<bottom_right>, window_left = 256 : i64} : !attn.regs<64x64xf32, acc>
func.func @mask_window(%s: !attn.regs<64x64xf32, acc>, %row: index, %col: index,
                       %nk: index, %nq: index) -> !attn.regs<64x64xf32, acc> {
  %m = attn.mask %s, %row, %col, %nk {window_left = 100, window_right = 50} : !attn.regs<64x64xf32, acc>
  %n = attn.mask %m, %row, %col, %nk q_len %nq {causal, causal_align = #attn.causal_align<bottom_right>, window_left = 256} : !attn.regs<64x64xf32, acc>
  return %n : !attn.regs<64x64xf32, acc>
}

// CHECK-LABEL: func.func @attention_softcap
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f32, softcap = 3.000000e+01 : f32}
func.func @attention_softcap(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                             %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32, softcap = 30.0 : f32}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// CHECK-LABEL: func.func @softcap_op
// CHECK: attn.softcap %{{.*}} {scale = 4.000000e-03 : f32} : !attn.regs<64x64xf32, acc>
func.func @softcap_op(%s: !attn.regs<64x64xf32, acc>) -> !attn.regs<64x64xf32, acc> {
  %t = attn.softcap %s {scale = 0.004 : f32} : !attn.regs<64x64xf32, acc>
  return %t : !attn.regs<64x64xf32, acc>
}

// CHECK-LABEL: func.func @attention_alibi
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} alibi(%{{.*}} : memref<?x?xf32>) {causal, scale = 1.250000e-01 : f32}
func.func @attention_alibi(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                           %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>,
                           %slopes: memref<?x?xf32>) {
  attn.attention %q, %k, %v, %o alibi(%slopes : memref<?x?xf32>) {causal, scale = 0.125 : f32}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// CHECK-LABEL: func.func @alibi_op
// CHECK: attn.alibi %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}, %{{.*}}, %{{.*}} {scale = 8.000000e+00 : f32} : memref<?x?xf32>, !attn.regs<64x64xf32, acc>
func.func @alibi_op(%s: !attn.regs<64x64xf32, acc>, %slopes: memref<?x?xf32>, %i: index) -> !attn.regs<64x64xf32, acc> {
  %t = attn.alibi %s, %slopes[%i, %i], %i, %i, %i {scale = 8.0 : f32} : memref<?x?xf32>, !attn.regs<64x64xf32, acc>
  return %t : !attn.regs<64x64xf32, acc>
}

// CHECK-LABEL: func.func @tile_ops
// CHECK: attn.program_id 0
// CHECK: attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
// CHECK: attn.copy_async %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] -> %{{.*}} fill %{{.*}} : memref<?x?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
// CHECK: attn.wait %{{.*}}, %{{.*}} : !attn.smem<64x128xbf16, swizzle = 128>
// CHECK: attn.splat 0xFF800000 -> !attn.regs<64xf32, row>
// CHECK: attn.mma %{{.*}}, %{{.*}} {transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
// CHECK: attn.mask %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal} : !attn.regs<64x64xf32, acc>
// CHECK: attn.online_softmax
// CHECK: attn.row_reduce max
// CHECK: attn.exp2_diff
// CHECK: attn.exp2_diff %{{.*}}, %{{.*}} {emulated_eighths = 3 : i64, scale_log2e = 1.800000e-01 : f32} : !attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row>
// CHECK: attn.rescale
// CHECK: attn.convert %{{.*}} : !attn.regs<64x64xf32, acc> -> !attn.regs<64x64xbf16, operand_a>
// CHECK: attn.mma %{{.*}}, %{{.*}}, %{{.*}} : !attn.regs<64x64xbf16, operand_a>, !attn.smem<64x128xbf16, swizzle = 128>, !attn.regs<64x128xf32, acc> -> !attn.regs<64x128xf32, acc>
// CHECK: attn.normalize
// CHECK: attn.lse
// CHECK: attn.store
// CHECK: attn.store_rows
func.func @tile_ops(%q: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>, %i: index) {
  %qb = attn.program_id 0
  %buf = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
  attn.copy_async %q[%i, %i, %i] -> %buf fill %i : memref<?x?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
  attn.wait %buf, %i : !attn.smem<64x128xbf16, swizzle = 128>
  %m = attn.splat 0xFF800000 -> !attn.regs<64xf32, row>
  %l = attn.splat 0.0 -> !attn.regs<64xf32, row>
  %acc = attn.splat 0.0 -> !attn.regs<64x128xf32, acc>
  %s = attn.mma %buf, %buf {transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
  %sm = attn.mask %s, %qb, %i, %i {causal} : !attn.regs<64x64xf32, acc>
  %p, %m1, %l1, %alpha = attn.online_softmax %sm, %m, %l {scale = 0.125 : f32} : !attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row>
  %mx = attn.row_reduce max %sm, %m : !attn.regs<64x64xf32, acc> -> !attn.regs<64xf32, row>
  %e = attn.exp2_diff %sm, %mx {scale_log2e = 0.18 : f32} : !attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row>
  %e3 = attn.exp2_diff %sm, %mx {emulated_eighths = 3, scale_log2e = 0.18 : f32} : !attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row>
  %acc1 = attn.rescale %acc, %alpha : !attn.regs<64x128xf32, acc>, !attn.regs<64xf32, row>
  %pa = attn.convert %p : !attn.regs<64x64xf32, acc> -> !attn.regs<64x64xbf16, operand_a>
  %acc2 = attn.mma %pa, %buf, %acc1 : !attn.regs<64x64xbf16, operand_a>, !attn.smem<64x128xbf16, swizzle = 128>, !attn.regs<64x128xf32, acc> -> !attn.regs<64x128xf32, acc>
  %out = attn.normalize %acc2, %l1 : !attn.regs<64x128xf32, acc>, !attn.regs<64xf32, row>
  %lse_rows = attn.lse %m1, %l1 {scale = 0.125 : f32} : !attn.regs<64xf32, row>
  attn.store %out -> %q[%i, %i, %i] : !attn.regs<64x128xf32, acc>, memref<?x?x?x128xbf16>
  attn.store_rows %lse_rows -> %lse[%i, %i, %i] : !attn.regs<64xf32, row>, memref<?x?x?xf32>
  return
}

// Head dims that are multiples of 8 but not of 16 or 64 (8, 40, 96, 192).
// CHECK-LABEL: func.func @attention_head_dims
// CHECK-COUNT-4: attn.attention
func.func @attention_head_dims(%q8: memref<?x?x?x8xbf16>, %q40: memref<?x?x?x40xf16>,
                               %q96: memref<?x?x?x96xbf16>, %q192: memref<?x?x?x192xbf16>) {
  attn.attention %q8, %q8, %q8, %q8 {scale = 0.35 : f32}
    : memref<?x?x?x8xbf16>, memref<?x?x?x8xbf16>, memref<?x?x?x8xbf16>, memref<?x?x?x8xbf16>
  attn.attention %q40, %q40, %q40, %q40 {scale = 0.158 : f32}
    : memref<?x?x?x40xf16>, memref<?x?x?x40xf16>, memref<?x?x?x40xf16>, memref<?x?x?x40xf16>
  attn.attention %q96, %q96, %q96, %q96 {causal, scale = 0.102 : f32}
    : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>
  attn.attention %q192, %q192, %q192, %q192 {scale = 0.072 : f32}
    : memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>
  return
}

// Narrower swizzles: a d96 tile in three 64-byte panels, a d40 one padded to
// 48 columns in three 32-byte panels; P V reads the first 40 of them and the
// store writes 40 columns of a 48-column output.
// CHECK-LABEL: func.func @narrow_swizzles
// CHECK: attn.alloc_smem : !attn.smem<144x96xbf16, swizzle = 64>
// CHECK: attn.copy_async %{{.*}} -> %{{.*}} : memref<?x?x?x96xbf16>, !attn.smem<144x96xbf16, swizzle = 64>
// CHECK: attn.alloc_smem : !attn.smem<64x48xf16, swizzle = 32>
// CHECK: attn.copy_async %{{.*}} -> %{{.*}} : memref<?x?x?x40xf16>, !attn.smem<64x48xf16, swizzle = 32>
// CHECK: attn.mma %{{.*}}, %{{.*}} : !attn.regs<64x64xf16, operand_a>, !attn.smem<64x48xf16, swizzle = 32> -> !attn.regs<64x40xf32, acc>
// CHECK: attn.store %{{.*}} -> %{{.*}} : !attn.regs<64x48xf32, acc>, memref<?x?x?x40xf16>
func.func @narrow_swizzles(%k96: memref<?x?x?x96xbf16>, %v40: memref<?x?x?x40xf16>,
                           %p: !attn.regs<64x64xf16, operand_a>, %o48: !attn.regs<64x48xf32, acc>,
                           %i: index) {
  %k = attn.alloc_smem : !attn.smem<144x96xbf16, swizzle = 64>
  attn.copy_async %k96[%i, %i, %i] -> %k : memref<?x?x?x96xbf16>, !attn.smem<144x96xbf16, swizzle = 64>
  %v = attn.alloc_smem : !attn.smem<64x48xf16, swizzle = 32>
  attn.copy_async %v40[%i, %i, %i] -> %v : memref<?x?x?x40xf16>, !attn.smem<64x48xf16, swizzle = 32>
  %o = attn.mma %p, %v : !attn.regs<64x64xf16, operand_a>, !attn.smem<64x48xf16, swizzle = 32> -> !attn.regs<64x40xf32, acc>
  attn.store %o48 -> %v40[%i, %i, %i] : !attn.regs<64x48xf32, acc>, memref<?x?x?x40xf16>
  return
}

// A kernel's typed problem: the parser takes any subset of the fields (the
// others keep spec_fields.def's defaults), the printer writes them all.
// CHECK-LABEL: func.func @problem
// CHECK-SAME: attn.problem = #attn.problem<dtype = f16, head_dim = 64, causal = true, scale = 0.125, with_lse = true, causal_align = bottom_right, softcap = 30.0, window_left = 256, window_right = -1, varlen = false, kv_cache = false, page_size = 0, split_kv = false, head_pack = 1, backward = none, alibi = false, head_dim_v = 0, block_scales = false, v_row_major = false, combine = false>
func.func @problem() attributes {attn.problem = #attn.problem<head_dim = 64, dtype = f16, causal = true, scale = 0.125, causal_align = bottom_right, softcap = 30.0, window_left = 256>} {
  return
}
