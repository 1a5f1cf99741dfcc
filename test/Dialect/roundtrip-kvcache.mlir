// RUN: attngen-opt %s | attngen-opt | FileCheck %s

// The KV-cache problem ops and the decoding tile ops print and parse back.
module attributes {attn.target = #attn.target<sm_90a>} {
// CHECK-LABEL: func.func @kvcache
// CHECK: attn.attention_kvcache %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lse %{{.*}} partials %{{.*}}, %{{.*}} {causal, head_pack = 4 : i64, scale = 8.838830e-02 : f32}
func.func @kvcache(%q: memref<?x?x?x128xbf16>, %kc: memref<?x?x?x128xbf16>, %vc: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>, %lse: memref<?x?x?xf32>, %op: memref<?x?x?x128xf32>, %lp: memref<?x?x?xf32>) {
  attn.attention_kvcache %q, %kc, %vc, %o, %s lse %lse partials %op, %lp {causal, head_pack = 4 : i64, scale = 0.0883883 : f32}
    : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>, memref<?x?x?xf32>, memref<?x?x?x128xf32>, memref<?x?x?xf32>
  return
}

// CHECK-LABEL: func.func @paged
// CHECK: attn.attention_kvcache %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} block_table %{{.*}} {scale = 1.250000e-01 : f32} : memref<?x?x?x64xf16>, memref<?x64x?x64xf16>, memref<?x64x?x64xf16>, memref<?x?x?x64xf16>, memref<?xi32>, memref<?x?xi32>
func.func @paged(%q: memref<?x?x?x64xf16>, %kc: memref<?x64x?x64xf16>, %vc: memref<?x64x?x64xf16>, %o: memref<?x?x?x64xf16>, %s: memref<?xi32>, %bt: memref<?x?xi32>) {
  attn.attention_kvcache %q, %kc, %vc, %o, %s block_table %bt {scale = 0.125 : f32}
    : memref<?x?x?x64xf16>, memref<?x64x?x64xf16>, memref<?x64x?x64xf16>, memref<?x?x?x64xf16>, memref<?xi32>, memref<?x?xi32>
  return
}

// CHECK-LABEL: func.func @combine
// CHECK: attn.combine_splits %{{.*}}, %{{.*}}, %{{.*}} lse %{{.*}} {head_pack = 4 : i64} : memref<?x?x?x128xf32>, memref<?x?x?xf32>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>
func.func @combine(%op: memref<?x?x?x128xf32>, %lp: memref<?x?x?xf32>, %o: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>) {
  attn.combine_splits %op, %lp, %o lse %lse {head_pack = 4 : i64} : memref<?x?x?x128xf32>, memref<?x?x?xf32>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>
  return
}

// CHECK-LABEL: func.func @tile_ops
// CHECK: attn.load_index %{{.*}}[%{{.*}}] fallback %{{.*}} : memref<?xi32>
// CHECK: attn.problem_size  num_splits
// CHECK: attn.copy_async %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] -> %{{.*}} fill %{{.*}} {head_pack = 4 : i64}
// CHECK: attn.copy_async %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] -> %{{.*}} fill %{{.*}} pages %{{.*}} : memref<?x64x?x128xbf16>, !attn.smem<128x128xbf16, swizzle = 128>, memref<?x?xi32>
// CHECK: attn.wait %{{.*}}, %{{.*}} zero_from %{{.*}} : !attn.smem<128x128xbf16, swizzle = 128>
// CHECK: attn.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] {head_pack = 4 : i64} : memref<?x?x?x128xf32> -> !attn.regs<64x128xf32, acc>
// CHECK: attn.load_rows %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] {head_pack = 4 : i64} : memref<?x?x?xf32> -> !attn.regs<64xf32, row>
// CHECK: attn.elementwise  max %{{.*}}, %{{.*}} : !attn.regs<64xf32, row>
// CHECK: attn.elementwise  sum %{{.*}}, %{{.*}} : !attn.regs<64x128xf32, acc>
// CHECK: attn.mask %{{.*}} q_len %{{.*}} {causal, causal_align = #attn.causal_align<bottom_right>, head_pack = 4 : i64}
// CHECK: attn.store %{{.*}} -> %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] {head_pack = 4 : i64} : !attn.regs<64x128xf32, acc>, memref<?x?x?x128xf32>
// CHECK: attn.store_rows %{{.*}} -> %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] {head_pack = 4 : i64}
func.func @tile_ops(%q: memref<?x?x?x128xbf16>, %kc: memref<?x64x?x128xbf16>, %s: memref<?xi32>, %bt: memref<?x?xi32>, %op: memref<?x?x?x128xf32>, %lp: memref<?x?x?xf32>, %i: index) {
  %n = attn.load_index %s[%i] fallback %i : memref<?xi32>
  %ns = attn.problem_size num_splits
  %qs = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
  %ks = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
  attn.copy_async %q[%i, %i, %i] -> %qs fill %i {head_pack = 4 : i64} : memref<?x?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
  attn.copy_async %kc[%i, %i, %i] -> %ks fill %i pages %bt : memref<?x64x?x128xbf16>, !attn.smem<128x128xbf16, swizzle = 128>, memref<?x?xi32>
  attn.wait %ks, %i zero_from %n : !attn.smem<128x128xbf16, swizzle = 128>
  %o = attn.load %op[%i, %i, %i] {head_pack = 4 : i64} : memref<?x?x?x128xf32> -> !attn.regs<64x128xf32, acc>
  %l = attn.load_rows %lp[%i, %i, %i] {head_pack = 4 : i64} : memref<?x?x?xf32> -> !attn.regs<64xf32, row>
  %m = attn.elementwise max %l, %l : !attn.regs<64xf32, row>
  %a = attn.elementwise sum %o, %o : !attn.regs<64x128xf32, acc>
  %mk = attn.mask %a, %i, %i, %n q_len %i {causal, causal_align = #attn.causal_align<bottom_right>, head_pack = 4 : i64} : !attn.regs<64x128xf32, acc>
  attn.store %mk -> %op[%i, %i, %i] {head_pack = 4 : i64} : !attn.regs<64x128xf32, acc>, memref<?x?x?x128xf32>
  attn.store_rows %m -> %lp[%i, %i, %i] {head_pack = 4 : i64} : !attn.regs<64xf32, row>, memref<?x?x?xf32>
  return
}

// CHECK-LABEL: func.func @pipes
// CHECK: attn.pipe_load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] -> %{{.*}}[%{{.*}}] pages %{{.*}} : memref<?x64x?x128xbf16>, !attn.pipe<2, <128x128xbf16, swizzle = 128>>, memref<?x?xi32>
// CHECK: attn.pipe_wait %{{.*}}[%{{.*}}] zero_from %{{.*}} : !attn.pipe<2, <128x128xbf16, swizzle = 128>> -> !attn.smem<128x128xbf16, swizzle = 128>
func.func @pipes(%kc: memref<?x64x?x128xbf16>, %bt: memref<?x?xi32>, %i: index) {
  %p = attn.create_pipe : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
  attn.pipe_load %kc[%i, %i, %i] -> %p[%i] pages %bt : memref<?x64x?x128xbf16>, !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>, memref<?x?xi32>
  %b = attn.pipe_wait %p[%i] zero_from %i : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>> -> !attn.smem<128x128xbf16, swizzle = 128>
  return
}

// CHECK-LABEL: func.func @grid
// CHECK-SAME: #attn.grid_dim<size = nq, tile = 16, times = num_splits>
func.func @grid() attributes {attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 16, times = num_splits>, #attn.grid_dim<size = num_heads, tile = 4>, #attn.grid_dim<size = batch, tile = 1>], ctas_per_sm = 0>} {
  return
}
}
