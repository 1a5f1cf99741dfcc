// RUN: attngen-opt %s -split-input-file -verify-diagnostics

// One case per chunk: the KV-cache ops' verifier errors, whole messages.
module attributes {attn.target = #attn.target<sm_90a>} {
func.func @seqlens_not_i32(%q: memref<?x?x?x128xbf16>, %kc: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi64>) {
  // expected-error @+1 {{'attn.attention_kvcache' op operand 'cache_seqlens' must be a rank-1 'i32' memref [B], got 'memref<?xi64>'}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s {scale = 0.125 : f32}
    : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi64>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @dynamic_page(%q: memref<?x?x?x128xbf16>, %kc: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>, %bt: memref<?x?xi32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op a paged cache needs a static page size (k_cache dimension 1) that is a positive multiple of 16, got ?}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s block_table %bt {scale = 0.125 : f32}
    : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>, memref<?x?xi32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @page_of_24(%q: memref<?x?x?x128xbf16>, %kc: memref<?x24x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>, %bt: memref<?x?xi32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op a paged cache needs a static page size (k_cache dimension 1) that is a positive multiple of 16, got 24}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s block_table %bt {scale = 0.125 : f32}
    : memref<?x?x?x128xbf16>, memref<?x24x?x128xbf16>, memref<?x24x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>, memref<?x?xi32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @block_table_not_i32(%q: memref<?x?x?x128xbf16>, %kc: memref<?x64x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>, %bt: memref<?x?xf32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op operand 'block_table' must be a rank-2 'i32' memref [B, max_blocks], got 'memref<?x?xf32>'}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s block_table %bt {scale = 0.125 : f32}
    : memref<?x?x?x128xbf16>, memref<?x64x?x128xbf16>, memref<?x64x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>, memref<?x?xf32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @pack_not_dividing(%q: memref<?x?x8x128xbf16>, %kc: memref<?x?x2x128xbf16>, %o: memref<?x?x8x128xbf16>, %s: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op head_pack = 8 must divide the 4 query heads that share a key/value head}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s {head_pack = 8 : i64, scale = 0.125 : f32}
    : memref<?x?x8x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x8x128xbf16>, memref<?xi32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @heads_not_grouped(%q: memref<?x?x8x128xbf16>, %kc: memref<?x?x3x128xbf16>, %o: memref<?x?x8x128xbf16>, %s: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op number of heads 8 must be a multiple of the number of key/value heads, 3}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s {scale = 0.125 : f32}
    : memref<?x?x8x128xbf16>, memref<?x?x3x128xbf16>, memref<?x?x3x128xbf16>, memref<?x?x8x128xbf16>, memref<?xi32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @scale_not_positive(%q: memref<?x?x?x128xbf16>, %kc: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op softmax scale -1 must be positive and finite}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s {scale = -1.0 : f32}
    : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @softcap_not_positive(%q: memref<?x?x?x128xbf16>, %kc: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op softcap 0 must be positive and finite; leave it out for no capping}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s {scale = 0.125 : f32, softcap = 0.0 : f32}
    : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @partial_not_f32(%q: memref<?x?x?x128xbf16>, %kc: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>, %op: memref<?x?x?x128xbf16>, %lp: memref<?x?x?xf32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op operand 'o_partial' must be a rank-4 'f32' memref [S * B, Nq, H, D], got 'memref<?x?x?x128xbf16>'}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s partials %op, %lp {scale = 0.125 : f32}
    : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @cache_dtype(%q: memref<?x?x?x128xbf16>, %kc: memref<?x?x?x128xf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op operand 'k_cache' has element type 'f16' but 'q' has 'bf16'}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s {scale = 0.125 : f32}
    : memref<?x?x?x128xbf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xbf16>, memref<?xi32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @combine_head_dims(%op: memref<?x?x?x64xf32>, %lp: memref<?x?x?xf32>, %o: memref<?x?x?x128xbf16>) {
  // expected-error @+1 {{'attn.combine_splits' op operand 'o_partial' has head dimension 64 but the output has 128}}
  attn.combine_splits %op, %lp, %o : memref<?x?x?x64xf32>, memref<?x?x?xf32>, memref<?x?x?x128xbf16>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @pack_rows(%q: memref<?x?x?x128xbf16>, %i: index) {
  %qs = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
  // expected-error @+1 {{'attn.copy_async' op packs 16 heads into 64 rows; each head needs a multiple of 8 rows (rows / head_pack)}}
  attn.copy_async %q[%i, %i, %i] -> %qs fill %i {head_pack = 16 : i64} : memref<?x?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @tile_across_pages(%kc: memref<?x48x?x128xbf16>, %bt: memref<?x?xi32>, %i: index) {
  %ks = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
  // expected-error @+1 {{'attn.copy_async' op copies 128-row tiles from pages of 48 rows; a tile must lie in one page or cover whole pages}}
  attn.copy_async %kc[%i, %i, %i] -> %ks fill %i pages %bt : memref<?x48x?x128xbf16>, !attn.smem<128x128xbf16, swizzle = 128>, memref<?x?xi32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @packed_pages(%kc: memref<?x64x?x128xbf16>, %bt: memref<?x?xi32>, %i: index) {
  %ks = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
  // expected-error @+1 {{'attn.copy_async' op packs heads and reads pages; only query tiles pack heads and only key/value tiles are paged}}
  attn.copy_async %kc[%i, %i, %i] -> %ks fill %i pages %bt {head_pack = 2 : i64} : memref<?x64x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>, memref<?x?xi32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @load_not_acc(%op: memref<?x?x?x128xf32>, %i: index) {
  // expected-error @+1 {{'attn.load' op result must be an 'acc' register tile, got '!attn.regs<64x128xbf16, operand_a>'}}
  %o = attn.load %op[%i, %i, %i] : memref<?x?x?x128xf32> -> !attn.regs<64x128xbf16, operand_a>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @load_rows_not_f32(%lp: memref<?x?x?xf16>, %i: index) {
  // expected-error @+1 {{'attn.load_rows' op operand 'src' must be a rank-3 'f32' memref [B, H, N], got 'memref<?x?x?xf16>'}}
  %l = attn.load_rows %lp[%i, %i, %i] : memref<?x?x?xf16> -> !attn.regs<64xf32, row>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @load_index_rank(%s: memref<?x?xi32>, %i: index) {
  // expected-error @+1 {{'attn.load_index' op operand 'src' must be a rank-1 'i32' memref [N], got 'memref<?x?xi32>'}}
  %n = attn.load_index %s[%i] fallback %i : memref<?x?xi32>
  return
}
}

// -----

// expected-error @+2 {{grid_dim of num_splits cannot be multiplied by itself (times = num_splits)}}
// expected-error @+1 {{failed to parse Attn_GridAttr parameter 'tiles'}}
func.func @times_itself() attributes {attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = num_splits, tile = 1, times = num_splits>], ctas_per_sm = 0>} {
  return
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @head_dim_not_multiple_of_8(%q: memref<?x?x?x36xbf16>, %kc: memref<?x?x?x36xbf16>, %o: memref<?x?x?x36xbf16>, %s: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op head dimension 36 is not supported: use a multiple of 8 (the kernels copy rows in 16-byte chunks): pad q, k and v with zero columns to 40 and drop the extra output columns}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s {scale = 0.125 : f32}
    : memref<?x?x?x36xbf16>, memref<?x?x?x36xbf16>, memref<?x?x?x36xbf16>, memref<?x?x?x36xbf16>, memref<?xi32>
  return
}
}

// -----

// FP8 caches come with their three descales.
module attributes {attn.target = #attn.target<sm_90a>} {
func.func @fp8_no_descales(%q: memref<?x?x?x128xf8E4M3FN>, %kc: memref<?x?x?x128xf8E4M3FN>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op has f8E4M3FN inputs but no 'q_descale': FP8 decoding takes descale(q_descale, k_descale, v_descale), f32 [B, Hkv]}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s {scale = 0.125 : f32}
    : memref<?x?x?x128xf8E4M3FN>, memref<?x?x?x128xf8E4M3FN>, memref<?x?x?x128xf8E4M3FN>, memref<?x?x?x128xbf16>, memref<?xi32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @fp8_output_not_bf16(%q: memref<?x?x?x128xf8E4M3FN>, %kc: memref<?x?x?x128xf8E4M3FN>, %o: memref<?x?x?x128xf16>, %s: memref<?xi32>, %d: memref<?x?xf32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op operand 'o' of FP8 attention must hold bf16, got 'f16'}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s descale(%d, %d, %d) {scale = 0.125 : f32}
    : memref<?x?x?x128xf8E4M3FN>, memref<?x?x?x128xf8E4M3FN>, memref<?x?x?x128xf8E4M3FN>, memref<?x?x?x128xf16>, memref<?xi32>, memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @fp8_block_descales(%q: memref<?x?x?x128xf8E4M3FN>, %kc: memref<?x?x?x128xf8E4M3FN>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>, %d: memref<?x?x?xf32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op operand 'q_descale' must be a rank-2 'f32' memref [B, Hkv], got 'memref<?x?x?xf32>'}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s descale(%d, %d, %d) {scale = 0.125 : f32}
    : memref<?x?x?x128xf8E4M3FN>, memref<?x?x?x128xf8E4M3FN>, memref<?x?x?x128xf8E4M3FN>, memref<?x?x?x128xbf16>, memref<?xi32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @fp8_mixed_cache(%q: memref<?x?x?x128xf8E4M3FN>, %kc: memref<?x?x?x128xf8E4M3FN>, %vc: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>, %d: memref<?x?xf32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op operand 'v_cache' must hold f8E4M3FN as 'q' does, got 'bf16'}}
  attn.attention_kvcache %q, %kc, %vc, %o, %s descale(%d, %d, %d) {scale = 0.125 : f32}
    : memref<?x?x?x128xf8E4M3FN>, memref<?x?x?x128xf8E4M3FN>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>, memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>
  return
}
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
func.func @descales_without_fp8(%q: memref<?x?x?x128xbf16>, %kc: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>, %d: memref<?x?xf32>) {
  // expected-error @+1 {{'attn.attention_kvcache' op has descales but its q and caches are not FP8: descales come with f8E4M3FN q, k_cache and v_cache; drop them}}
  attn.attention_kvcache %q, %kc, %kc, %o, %s descale(%d, %d, %d) {scale = 0.125 : f32}
    : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>, memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>
  return
}
}
