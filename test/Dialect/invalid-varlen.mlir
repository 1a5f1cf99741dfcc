// RUN: attngen-opt %s -split-input-file -verify-diagnostics

func.func @varlen_rank4(%q: memref<?x?x?x64xf16>, %cu: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention' op operand 'q' must be a rank-3 memref [total, H, D] (a packed, variable-length batch), got 'memref<?x?x?x64xf16>'}}
  attn.attention %q, %q, %q, %q varlen(%cu, %cu : memref<?xi32>, memref<?xi32>) {scale = 0.125 : f32}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// -----

func.func @cu_seqlens_i64(%q: memref<?x?x64xf16>, %cu: memref<?xi64>) {
  // expected-error @+1 {{'attn.attention' op operand 'cu_seqlens_q' must be a rank-1 i32 memref [B + 1] (where each sequence starts), got 'memref<?xi64>'}}
  attn.attention %q, %q, %q, %q varlen(%cu, %cu : memref<?xi64>, memref<?xi64>) {scale = 0.125 : f32}
    : memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>
  return
}

// -----

func.func @cu_seqlens_rank2(%q: memref<?x?x64xf16>, %cu: memref<?xi32>, %cu2: memref<?x2xi32>) {
  // expected-error @+1 {{'attn.attention' op operand 'cu_seqlens_k' must be a rank-1 i32 memref [B + 1] (where each sequence starts), got 'memref<?x2xi32>'}}
  attn.attention %q, %q, %q, %q varlen(%cu, %cu2 : memref<?xi32>, memref<?x2xi32>) {scale = 0.125 : f32}
    : memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>
  return
}

// -----

func.func @cu_seqlens_strided(%q: memref<?x?x64xf16>, %cu: memref<?xi32, strided<[2]>>) {
  // expected-error @+1 {{'attn.attention' op operand 'cu_seqlens_q' must be contiguous (the identity layout), got 'memref<?xi32, strided<[2]>>'}}
  attn.attention %q, %q, %q, %q varlen(%cu, %cu : memref<?xi32, strided<[2]>>, memref<?xi32, strided<[2]>>) {scale = 0.125 : f32}
    : memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>
  return
}

// -----

func.func @cu_seqlens_q_only(%q: memref<?x?x64xf16>, %cu: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention' op a variable-length batch needs both cu_seqlens_q and cu_seqlens_k}}
  "attn.attention"(%q, %q, %q, %q, %cu) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0>, scale = 0.125 : f32}>
    : (memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?xi32>) -> ()
  return
}

// -----

func.func @cu_seqlens_lengths(%q: memref<?x?x64xf16>, %cq: memref<5xi32>, %ck: memref<4xi32>) {
  // expected-error @+1 {{'attn.attention' op number of sequences + 1 differs: operand 'cu_seqlens_k' has 4 (dim 0) but 'cu_seqlens_q' has 5 (dim 0)}}
  attn.attention %q, %q, %q, %q varlen(%cq, %ck : memref<5xi32>, memref<4xi32>) {scale = 0.125 : f32}
    : memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>
  return
}

// -----

func.func @varlen_lse_rank3(%q: memref<?x?x64xf16>, %lse: memref<?x?x?xf32>, %cu: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention' op operand 'lse' must be a rank-2 f32 memref [H, total_q] (a packed batch's layout, as flash_attn_varlen_func's), got 'memref<?x?x?xf32>'}}
  attn.attention %q, %q, %q, %q lse %lse varlen(%cu, %cu : memref<?xi32>, memref<?xi32>) {scale = 0.125 : f32}
    : memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x?xf32>
  return
}

// -----

func.func @varlen_total_rows(%q: memref<300x8x64xf16>, %k: memref<?x8x64xf16>, %o: memref<299x8x64xf16>, %cu: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention' op total query rows differs: operand 'o' has 299 (dim 0) but 'q' has 300 (dim 0)}}
  attn.attention %q, %k, %k, %o varlen(%cu, %cu : memref<?xi32>, memref<?xi32>) {scale = 0.125 : f32}
    : memref<300x8x64xf16>, memref<?x8x64xf16>, memref<?x8x64xf16>, memref<299x8x64xf16>
  return
}

// -----

func.func @varlen_lse_heads(%q: memref<?x8x64xf16>, %lse: memref<4x?xf32>, %cu: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention' op number of heads differs: operand 'lse' has 4 (dim 0) but 'q' has 8 (dim 1)}}
  attn.attention %q, %q, %q, %q lse %lse varlen(%cu, %cu : memref<?xi32>, memref<?xi32>) {scale = 0.125 : f32}
    : memref<?x8x64xf16>, memref<?x8x64xf16>, memref<?x8x64xf16>, memref<?x8x64xf16>, memref<4x?xf32>
  return
}

// -----

func.func @sequence_f32(%cu: memref<?xf32>, %i: index) {
  // expected-error @+1 {{'attn.sequence' op 'cu_seqlens' must be a contiguous rank-1 i32 memref [B + 1], got 'memref<?xf32>'}}
  %s, %n = attn.sequence %cu[%i] rows %i : memref<?xf32>
  return
}

// -----

func.func @copy_packed_by_index(%t: memref<?x?x128xbf16>, %d: !attn.smem<64x128xbf16, swizzle = 128>, %i: index) {
  // expected-error @+1 {{'attn.copy_async' op operand 'src' must be a rank-4 memref [B, N, H, D], got 'memref<?x?x128xbf16>'}}
  "attn.copy_async"(%t, %i, %i, %i, %d) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>}> : (memref<?x?x128xbf16>, index, index, index, !attn.smem<64x128xbf16, swizzle = 128>) -> ()
  return
}

// -----

func.func @copy_dense_by_sequence(%t: memref<?x?x?x128xbf16>, %cu: memref<?xi32>, %d: !attn.smem<64x128xbf16, swizzle = 128>, %i: index) {
  %s, %n = attn.sequence %cu[%i] rows %i : memref<?xi32>
  // expected-error @+1 {{'attn.copy_async' op operand 'src' must be a rank-3 memref [total, H, D] (a packed, variable-length batch), got 'memref<?x?x?x128xbf16>'}}
  "attn.copy_async"(%t, %s, %i, %i, %d) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>}> : (memref<?x?x?x128xbf16>, !attn.seq, index, index, !attn.smem<64x128xbf16, swizzle = 128>) -> ()
  return
}

// -----

func.func @store_dense_by_sequence(%x: !attn.regs<64x128xf32, acc>, %t: memref<?x?x?x128xbf16>, %cu: memref<?xi32>, %i: index) {
  %s, %n = attn.sequence %cu[%i] rows %i : memref<?xi32>
  // expected-error @+1 {{'attn.store' op operand 'dst' must be a rank-3 memref [total, H, D] (a packed, variable-length batch), got 'memref<?x?x?x128xbf16>'}}
  "attn.store"(%x, %t, %s, %i, %i) : (!attn.regs<64x128xf32, acc>, memref<?x?x?x128xbf16>, !attn.seq, index, index) -> ()
  return
}

// -----

func.func @store_rows_packed_by_index(%x: !attn.regs<64xf32, row>, %t: memref<?x?xf32>, %i: index) {
  // expected-error @+1 {{'attn.store_rows' op 'dst' must be a rank-3 f32 memref [B, H, N], got 'memref<?x?xf32>'}}
  "attn.store_rows"(%x, %t, %i, %i, %i) : (!attn.regs<64xf32, row>, memref<?x?xf32>, index, index, index) -> ()
  return
}

// -----

func.func @store_rows_dense_by_sequence(%x: !attn.regs<64xf32, row>, %t: memref<?x?x?xf32>, %cu: memref<?xi32>, %i: index) {
  %s, %n = attn.sequence %cu[%i] rows %i : memref<?xi32>
  // expected-error @+1 {{'attn.store_rows' op 'dst' must be a rank-2 f32 memref [H, total] (a packed batch's rows), got 'memref<?x?x?xf32>'}}
  "attn.store_rows"(%x, %t, %s, %i, %i) : (!attn.regs<64xf32, row>, memref<?x?x?xf32>, !attn.seq, index, index) -> ()
  return
}

// -----

func.func @pages_without_varlen(%q: memref<?x?x?x64xf16>, %k: memref<?x64x?x64xf16>, %t: memref<?x?xi32>) {
  // expected-error @+1 {{'attn.attention' op reads pages (a block table) without varlen: a paged K/V is read by a packed batch of queries here, or by attn.attention_kvcache}}
  attn.attention %q, %k, %k, %q pages(%t : memref<?x?xi32>) {scale = 0.125 : f32}
    : memref<?x?x?x64xf16>, memref<?x64x?x64xf16>, memref<?x64x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// -----

func.func @pages_dynamic_size(%q: memref<?x?x64xf16>, %k: memref<?x?x?x64xf16>, %cu: memref<?xi32>, %t: memref<?x?xi32>) {
  // expected-error @+1 {{'attn.attention' op reads pages: k must be [num_blocks, page_size, Hkv, D] with a static page size that is a positive multiple of 16, got 'memref<?x?x?x64xf16>'}}
  attn.attention %q, %k, %k, %q varlen(%cu, %cu : memref<?xi32>, memref<?xi32>) pages(%t : memref<?x?xi32>) {scale = 0.125 : f32}
    : memref<?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x64xf16>
  return
}

// -----

func.func @pages_of_24(%q: memref<?x?x64xf16>, %k: memref<?x24x?x64xf16>, %cu: memref<?xi32>, %t: memref<?x?xi32>) {
  // expected-error @+1 {{'attn.attention' op reads pages: k must be [num_blocks, page_size, Hkv, D] with a static page size that is a positive multiple of 16, got 'memref<?x24x?x64xf16>'}}
  attn.attention %q, %k, %k, %q varlen(%cu, %cu : memref<?xi32>, memref<?xi32>) pages(%t : memref<?x?xi32>) {scale = 0.125 : f32}
    : memref<?x?x64xf16>, memref<?x24x?x64xf16>, memref<?x24x?x64xf16>, memref<?x?x64xf16>
  return
}

// -----

func.func @pages_table_i64(%q: memref<?x?x64xf16>, %k: memref<?x64x?x64xf16>, %cu: memref<?xi32>, %t: memref<?x?xi64>) {
  // expected-error @+1 {{'attn.attention' op operand 'block_table' must be a rank-2 'i32' memref [B, max_blocks] (the block table), got 'memref<?x?xi64>'}}
  attn.attention %q, %k, %k, %q varlen(%cu, %cu : memref<?xi32>, memref<?xi32>) pages(%t : memref<?x?xi64>) {scale = 0.125 : f32}
    : memref<?x?x64xf16>, memref<?x64x?x64xf16>, memref<?x64x?x64xf16>, memref<?x?x64xf16>
  return
}

// -----

func.func @pages_v_other_size(%q: memref<?x?x64xf16>, %k: memref<?x64x?x64xf16>, %v: memref<?x32x?x64xf16>, %cu: memref<?xi32>, %t: memref<?x?xi32>) {
  // expected-error @+1 {{page size}}
  attn.attention %q, %k, %v, %q varlen(%cu, %cu : memref<?xi32>, memref<?xi32>) pages(%t : memref<?x?xi32>) {scale = 0.125 : f32}
    : memref<?x?x64xf16>, memref<?x64x?x64xf16>, memref<?x32x?x64xf16>, memref<?x?x64xf16>
  return
}

// -----

func.func @pages_packed_k(%q: memref<?x?x64xf16>, %k: memref<?x?x64xf16>, %cu: memref<?xi32>, %t: memref<?x?xi32>) {
  // expected-error @+1 {{'attn.attention' op reads pages: k must be [num_blocks, page_size, Hkv, D]}}
  attn.attention %q, %k, %k, %q varlen(%cu, %cu : memref<?xi32>, memref<?xi32>) pages(%t : memref<?x?xi32>) {scale = 0.125 : f32}
    : memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>
  return
}
