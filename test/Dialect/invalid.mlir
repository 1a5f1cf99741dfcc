// RUN: attngen-opt %s -split-input-file -verify-diagnostics

func.func @attention_head_dim_mismatch(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x128xbf16>,
                                       %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op operand 'k' has head dimension 128 but 'q' has 64}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x?x64xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
  return
}

// -----

// V and O may have a head dim of their own (head_dim_v), but the same one.
func.func @attention_value_head_dim_mismatch(%q: memref<?x?x?x192xbf16>, %k: memref<?x?x?x192xbf16>,
                                             %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x192xbf16>) {
  // expected-error @+1 {{'attn.attention' op operand 'o' has head dimension 192 but 'v' has 128}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x192xbf16>
  return
}

// -----

func.func @attention_value_head_dim_not_multiple_of_8(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                                                      %v: memref<?x?x?x60xbf16>, %o: memref<?x?x?x60xbf16>) {
  // expected-error @+1 {{'attn.attention' op value head dimension 60 is not supported: use a multiple of 8}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x60xbf16>, memref<?x?x?x60xbf16>
  return
}

// -----

func.func @attention_head_dim_not_multiple_of_8(%q: memref<?x?x?x59xbf16>, %k: memref<?x?x?x59xbf16>,
                                                %v: memref<?x?x?x59xbf16>, %o: memref<?x?x?x59xbf16>) {
  // expected-error @+1 {{'attn.attention' op head dimension 59 is not supported: use a multiple of 8 (the kernels copy rows in 16-byte chunks): pad q, k and v with zero columns to 64 and drop the extra output columns}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x?x59xbf16>, memref<?x?x?x59xbf16>, memref<?x?x?x59xbf16>, memref<?x?x?x59xbf16>
  return
}

// -----

func.func @attention_head_dim_too_large(%q: memref<?x?x?x264xbf16>, %k: memref<?x?x?x264xbf16>,
                                        %v: memref<?x?x?x264xbf16>, %o: memref<?x?x?x264xbf16>) {
  // expected-error @+1 {{'attn.attention' op head dimension 264 is not supported: the largest is 256}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x?x264xbf16>, memref<?x?x?x264xbf16>, memref<?x?x?x264xbf16>, memref<?x?x?x264xbf16>
  return
}

// -----

func.func @attention_head_dim_small(%q: memref<?x?x?x4xbf16>, %k: memref<?x?x?x4xbf16>,
                                    %v: memref<?x?x?x4xbf16>, %o: memref<?x?x?x4xbf16>) {
  // expected-error @+1 {{'attn.attention' op head dimension 4 is not supported: use a multiple of 8 (the kernels copy rows in 16-byte chunks): pad q, k and v with zero columns to 8 and drop the extra output columns}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x?x4xbf16>, memref<?x?x?x4xbf16>, memref<?x?x?x4xbf16>, memref<?x?x?x4xbf16>
  return
}

// -----

func.func @attention_head_dim_zero(%q: memref<?x?x?x0xbf16>, %k: memref<?x?x?x0xbf16>,
                                   %v: memref<?x?x?x0xbf16>, %o: memref<?x?x?x0xbf16>) {
  // expected-error @+1 {{'attn.attention' op head dimension 0 is not supported: it must be a positive multiple of 8 up to 256}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x?x0xbf16>, memref<?x?x?x0xbf16>, memref<?x?x?x0xbf16>, memref<?x?x?x0xbf16>
  return
}

// -----

func.func @attention_element_type(%q: memref<?x?x?x64xf32>, %k: memref<?x?x?x64xf32>,
                                  %v: memref<?x?x?x64xf32>, %o: memref<?x?x?x64xf32>) {
  // expected-error @+1 {{'attn.attention' op operand 'q' must hold f16 or bf16, got 'f32'}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x?x64xf32>, memref<?x?x?x64xf32>, memref<?x?x?x64xf32>, memref<?x?x?x64xf32>
  return
}

// -----

func.func @attention_mixed_types(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xbf16>,
                                 %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  // expected-error @+1 {{'attn.attention' op operand 'k' has element type 'bf16' but 'q' has 'f16'}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// -----

func.func @attention_rank(%q: memref<?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                          %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  // expected-error @+1 {{'attn.attention' op operand 'q' must be a rank-4 memref [B, N, H, D], got 'memref<?x?x64xf16>'}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// -----

func.func @attention_negative_scale(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                                    %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  // expected-error @+1 {{'attn.attention' op softmax scale -1 must be positive and finite}}
  attn.attention %q, %k, %v, %o {scale = -1.0 : f32}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// -----

func.func @attention_lse_type(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                              %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>, %lse: memref<?x?xf32>) {
  // expected-error @+1 {{'attn.attention' op operand 'lse' must be a rank-3 f32 memref [B, H, Nq], got 'memref<?x?xf32>'}}
  attn.attention %q, %k, %v, %o lse %lse {scale = 0.125 : f32}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?xf32>
  return
}

// -----

func.func @attention_batch_mismatch(
    %q: memref<2x128x8x64xbf16>, %k: memref<3x256x2x64xbf16>,
    %v: memref<2x256x2x64xbf16>, %o: memref<2x128x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op batch size differs: operand 'k' has 3 (dim 0) but 'q' has 2 (dim 0)}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<2x128x8x64xbf16>, memref<3x256x2x64xbf16>, memref<2x256x2x64xbf16>, memref<2x128x8x64xbf16>
  return
}

// -----

func.func @attention_query_length_mismatch(
    %q: memref<2x128x8x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %o: memref<2x127x8x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op query length differs: operand 'o' has 127 (dim 1) but 'q' has 128 (dim 1)}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<2x128x8x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<2x127x8x64xbf16>
  return
}

// -----

func.func @attention_key_length_mismatch(
    %q: memref<?x?x?x64xbf16>, %k: memref<?x256x2x64xbf16>,
    %v: memref<?x255x2x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op key length differs: operand 'v' has 255 (dim 1) but 'k' has 256 (dim 1)}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x?x64xbf16>, memref<?x256x2x64xbf16>, memref<?x255x2x64xbf16>, memref<?x?x?x64xbf16>
  return
}

// -----

func.func @attention_heads_mismatch(
    %q: memref<?x?x8x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x4x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op number of heads differs: operand 'o' has 4 (dim 2) but 'q' has 8 (dim 2)}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x8x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x4x64xbf16>
  return
}

// -----

func.func @attention_kv_heads_mismatch(
    %q: memref<?x?x?x64xbf16>, %k: memref<?x?x3x64xbf16>,
    %v: memref<?x?x2x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op number of key/value heads differs: operand 'v' has 2 (dim 2) but 'k' has 3 (dim 2)}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x?x64xbf16>, memref<?x?x3x64xbf16>, memref<?x?x2x64xbf16>, memref<?x?x?x64xbf16>
  return
}

// -----

func.func @attention_head_ratio(
    %q: memref<?x?x8x64xbf16>, %k: memref<?x?x3x64xbf16>,
    %v: memref<?x?x3x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op number of heads 8 must be a multiple of the number of key/value heads, 3}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x8x64xbf16>, memref<?x?x3x64xbf16>, memref<?x?x3x64xbf16>, memref<?x?x?x64xbf16>
  return
}

// -----

func.func @attention_lse_batch(
    %q: memref<4x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>, %lse: memref<2x?x?xf32>) {
  // expected-error @+1 {{'attn.attention' op batch size differs: operand 'lse' has 2 (dim 0) but 'q' has 4 (dim 0)}}
  attn.attention %q, %k, %v, %o lse %lse {scale = 0.125 : f32}
    : memref<4x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<2x?x?xf32>
  return
}

// -----

func.func @attention_lse_heads(
    %q: memref<?x?x8x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>, %lse: memref<?x4x?xf32>) {
  // expected-error @+1 {{'attn.attention' op number of heads differs: operand 'lse' has 4 (dim 1) but 'q' has 8 (dim 2)}}
  attn.attention %q, %k, %v, %o lse %lse {scale = 0.125 : f32}
    : memref<?x?x8x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x4x?xf32>
  return
}

// -----

func.func @attention_lse_queries(
    %q: memref<?x100x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>, %lse: memref<?x?x128xf32>) {
  // expected-error @+1 {{'attn.attention' op query length differs: operand 'lse' has 128 (dim 2) but 'q' has 100 (dim 1)}}
  attn.attention %q, %k, %v, %o lse %lse {scale = 0.125 : f32}
    : memref<?x100x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x128xf32>
  return
}

// -----

func.func @attention_lse_layout(
    %q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32, strided<[?, ?, 2]>>) {
  // expected-error @+1 {{'attn.attention' op operand 'lse' must be contiguous (the identity layout), got 'memref<?x?x?xf32, strided<[?, ?, 2]>>'}}
  attn.attention %q, %k, %v, %o lse %lse {scale = 0.125 : f32}
    : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?xf32, strided<[?, ?, 2]>>
  return
}

// -----

func.func @attention_last_stride(
    %q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16, strided<[?, ?, ?, 2]>>,
    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op operand 'k' must be contiguous in its last dimension (stride 1), got stride 2}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16, strided<[?, ?, ?, 2]>>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
  return
}

// -----

func.func @attention_dynamic_last_stride(
    %q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16, strided<[?, ?, ?, ?]>>) {
  // expected-error @+1 {{'attn.attention' op operand 'o' must be contiguous in its last dimension (stride 1), got stride ?}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
    : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16, strided<[?, ?, ?, ?]>>
  return
}

// -----

func.func @attention_scale_overflow(
    %q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op softmax scale 3.0000000054977558e+38 is too large: scale * log2(e) must not exceed the largest f32 (3.4e+38); use a smaller scale}}
  attn.attention %q, %k, %v, %o {scale = 3.0e38 : f32}
    : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
  return
}

// -----

func.func @attention_scale_underflow(
    %q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op softmax scale 9.99994610111476e-41 is too small: it rounds to 0 or a subnormal f32; use at least the smallest normal f32 (1.18e-38)}}
  attn.attention %q, %k, %v, %o {scale = 1.0e-40 : f32}
    : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
  return
}

// -----

// expected-error @+1 {{a 128-byte swizzled tile is made of 64-column panels: its columns (96) must be a multiple of 64}}
func.func @smem_swizzle_columns(%t: !attn.smem<64x96xbf16, swizzle = 128>) {
  return
}

// -----

// expected-error @+1 {{a 64-byte swizzled tile is made of 32-column panels: its columns (80) must be a multiple of 32}}
func.func @smem_swizzle64_columns(%t: !attn.smem<64x80xbf16, swizzle = 64>) {
  return
}

// -----

// expected-error @+1 {{a 32-byte swizzled tile is made of 16-column panels: its columns (40) must be a multiple of 16}}
func.func @smem_swizzle32_columns(%t: !attn.smem<64x40xbf16, swizzle = 32>) {
  return
}

// -----

// expected-error @+1 {{unsupported swizzle 16 bytes; supported: 0, 32, 64, 128}}
func.func @smem_swizzle_width(%t: !attn.smem<64x64xbf16, swizzle = 16>) {
  return
}

// -----

// expected-error @+1 {{'acc' register tile must hold f32, got 'bf16'}}
func.func @regs_acc_type(%t: !attn.regs<64x64xbf16, acc>) {
  return
}

// -----

// expected-error @+1 {{register tile rows (24) must be a positive multiple of 16}}
func.func @regs_rows(%t: !attn.regs<24x64xf32, acc>) {
  return
}

// -----

// expected-error @+1 {{unknown fragment kind 'blocked'; expected acc, operand_a, row, col or lanes}}
func.func @regs_fragment(%t: !attn.regs<64x64xf32, blocked>) {
  return
}

// -----

func.func @mma_reduction_mismatch(%a: !attn.smem<64x128xbf16, swizzle = 128>, %b: !attn.smem<64x64xbf16, swizzle = 128>) {
  // expected-error @+1 {{'attn.mma' op reduction sizes differ: 'a' is 64x128 but 'b' gives k = 64 (transposed)}}
  %s = attn.mma %a, %b {transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x64xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
  return
}

// -----

func.func @mma_result_shape(%a: !attn.smem<64x128xbf16, swizzle = 128>, %b: !attn.smem<64x128xbf16, swizzle = 128>) {
  // expected-error @+1 {{'attn.mma' op result must be 64x64, got 64x128}}
  %s = attn.mma %a, %b {transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x128xf32, acc>
  return
}

// -----

func.func @mma_operand_types(%a: !attn.smem<64x128xf16, swizzle = 128>, %b: !attn.smem<64x128xbf16, swizzle = 128>) {
  // expected-error @+1 {{'attn.mma' op operand element types differ: 'f16' and 'bf16'}}
  %s = attn.mma %a, %b {transpose_b} : !attn.smem<64x128xf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
  return
}

// -----

func.func @mma_register_a_fragment(%a: !attn.regs<64x64xf32, acc>, %b: !attn.smem<64x128xbf16, swizzle = 128>) {
  // expected-error @+1 {{'attn.mma' op register operand 'a' must have 'operand_a' fragments, got '!attn.regs<64x64xf32, acc>'}}
  %s = attn.mma %a, %b : !attn.regs<64x64xf32, acc>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x128xf32, acc>
  return
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @mma_wgmma_partial_panel(%p: !attn.regs<64x64xbf16, operand_a>, %v: !attn.smem<64x48xbf16, swizzle = 32>) {
    // expected-error @+1 {{'attn.mma' op sm_90a wgmma reads an N-major 'b' in whole 16-column swizzle panels: N = 40 must be a multiple of 16}}
    %o = attn.mma %p, %v : !attn.regs<64x64xbf16, operand_a>, !attn.smem<64x48xbf16, swizzle = 32> -> !attn.regs<64x40xf32, acc>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @mma_wgmma_rows(%a: !attn.smem<32x128xbf16, swizzle = 128>, %b: !attn.smem<64x128xbf16, swizzle = 128>) {
    // expected-error @+1 {{'attn.mma' op sm_90a wgmma needs M a multiple of 64 and N <= 256, got 32x64}}
    %s = attn.mma %a, %b {transpose_b} : !attn.smem<32x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<32x64xf32, acc>
    return
  }
}

// -----

func.func @rescale_rows(%x: !attn.regs<64x64xf32, acc>, %f: !attn.regs<128xf32, row>) {
  // expected-error @+1 {{'attn.rescale' op 'factor' has 128 rows but the tile has 64}}
  %r = attn.rescale %x, %f : !attn.regs<64x64xf32, acc>, !attn.regs<128xf32, row>
  return
}

// -----

func.func @convert_result(%x: !attn.regs<64x64xf32, acc>) {
  // expected-error @+1 {{'attn.convert' op result must have 'operand_a' fragments, got '!attn.regs<64x64xf32, acc>'}}
  %r = attn.convert %x : !attn.regs<64x64xf32, acc> -> !attn.regs<64x64xf32, acc>
  return
}

// -----

func.func @copy_columns(%q: memref<?x?x?x128xbf16>, %t: !attn.smem<64x64xbf16, swizzle = 128>, %i: index) {
  // expected-error @+1 {{'attn.copy_async' op tile has 64 columns but the source head dimension 128 needs 128 (whole 64-column swizzle panels; the copy zero-fills the columns past 128)}}
  attn.copy_async %q[%i, %i, %i] -> %t : memref<?x?x?x128xbf16>, !attn.smem<64x64xbf16, swizzle = 128>
  return
}

// -----

func.func @copy_padding_past_a_panel(%q: memref<?x?x?x40xbf16>, %t: !attn.smem<64x64xbf16, swizzle = 32>, %i: index) {
  // expected-error @+1 {{'attn.copy_async' op tile has 64 columns but the source head dimension 40 needs 48 (whole 16-column swizzle panels; the copy zero-fills the columns past 40)}}
  attn.copy_async %q[%i, %i, %i] -> %t : memref<?x?x?x40xbf16>, !attn.smem<64x64xbf16, swizzle = 32>
  return
}

// -----

func.func @copy_unswizzled(%q: memref<?x?x?x64xbf16>, %t: !attn.smem<64x64xbf16>, %i: index) {
  // expected-error @+1 {{'attn.copy_async' op asynchronous copies need a swizzled tile (swizzle = 32, 64 or 128), got '!attn.smem<64x64xbf16>'}}
  attn.copy_async %q[%i, %i, %i] -> %t : memref<?x?x?x64xbf16>, !attn.smem<64x64xbf16>
  return
}

// -----

func.func @mma_unswizzled(%a: !attn.smem<64x64xbf16>, %b: !attn.smem<64x64xbf16, swizzle = 128>) {
  // expected-error @+1 {{'attn.mma' op shared-memory operand 'a' must be a swizzled tile (swizzle = 32, 64 or 128), got '!attn.smem<64x64xbf16>'}}
  %s = attn.mma %a, %b {transpose_b} : !attn.smem<64x64xbf16>, !attn.smem<64x64xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
  return
}

// -----

func.func @mma_result_wider_than_b(%p: !attn.regs<64x64xbf16, operand_a>, %v: !attn.smem<64x48xbf16, swizzle = 32>) {
  // expected-error @+1 {{'attn.mma' op result has 56 columns but 'b' has 48: a product reads at most all of them}}
  %o = attn.mma %p, %v : !attn.regs<64x64xbf16, operand_a>, !attn.smem<64x48xbf16, swizzle = 32> -> !attn.regs<64x56xf32, acc>
  return
}

// -----

func.func @store_columns_short(%x: !attn.regs<64x32xf32, acc>, %o: memref<?x?x?x40xbf16>, %i: index) {
  // expected-error @+1 {{'attn.store' op tile has 32 columns but the destination head dimension is 40: use 40 columns (or up to 48, of which the store writes the first 40)}}
  attn.store %x -> %o[%i, %i, %i] : !attn.regs<64x32xf32, acc>, memref<?x?x?x40xbf16>
  return
}

// -----

func.func @store_columns_wide(%x: !attn.regs<64x64xf32, acc>, %o: memref<?x?x?x40xbf16>, %i: index) {
  // expected-error @+1 {{'attn.store' op tile has 64 columns but the destination head dimension is 40: use 40 columns (or up to 48, of which the store writes the first 40)}}
  attn.store %x -> %o[%i, %i, %i] : !attn.regs<64x64xf32, acc>, memref<?x?x?x40xbf16>
  return
}

// -----

func.func @store_rows_dst(%x: !attn.regs<64xf32, row>, %d: memref<?x?x?xf16>, %i: index) {
  // expected-error @+1 {{'attn.store_rows' op 'dst' must be a rank-3 f32 memref [B, H, N], got 'memref<?x?x?xf16>'}}
  attn.store_rows %x -> %d[%i, %i, %i] : !attn.regs<64xf32, row>, memref<?x?x?xf16>
  return
}

// -----

func.func @attention_causal_align_without_causal(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                                                 %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  // expected-error @+1 {{'attn.attention' op has 'causal_align' = bottom_right but neither 'causal' nor a window: add 'causal' (or 'window_left' / 'window_right') or drop 'causal_align'}}
  attn.attention %q, %k, %v, %o {causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// -----

func.func @attention_causal_align_unknown(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                                          %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  // expected-error @+2 {{expected ::mlir::attn::CausalAlign to be one of: top_left, bottom_right}}
  // expected-error @+1 {{failed to parse Attn_CausalAlignAttr parameter 'value' which is to be a `::mlir::attn::CausalAlign`}}
  attn.attention %q, %k, %v, %o {causal, causal_align = #attn.causal_align<diagonal>, scale = 0.125 : f32}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// -----

func.func @mask_causal_align_without_causal(%s: !attn.regs<64x64xf32, acc>, %i: index) {
  // expected-error @+1 {{'attn.mask' op has 'causal_align' = top_left but neither 'causal' nor a window: add 'causal' (or 'window_left' / 'window_right') or drop 'causal_align'}}
  %m = attn.mask %s, %i, %i, %i {causal_align = #attn.causal_align<top_left>} : !attn.regs<64x64xf32, acc>
  return
}

// -----

func.func @mask_bottom_right_without_q_len(%s: !attn.regs<64x64xf32, acc>, %i: index) {
  // expected-error @+1 {{'attn.mask' op a bottom-right mask needs 'q_len' (the number of query rows, which places the diagonal)}}
  %m = attn.mask %s, %i, %i, %i {causal, causal_align = #attn.causal_align<bottom_right>} : !attn.regs<64x64xf32, acc>
  return
}

// -----

func.func @mask_q_len_without_bottom_right(%s: !attn.regs<64x64xf32, acc>, %i: index) {
  // expected-error @+1 {{'attn.mask' op 'q_len' is only used by a bottom-right mask (causal or windowed); drop it or set causal_align = #attn.causal_align<bottom_right>}}
  %m = attn.mask %s, %i, %i, %i q_len %i {causal} : !attn.regs<64x64xf32, acc>
  return
}

// -----

func.func @attention_softcap_not_positive(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                                          %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  // expected-error @+1 {{'attn.attention' op softcap 0 must be positive and finite; leave it out for no capping}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32, softcap = 0.0 : f32}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// -----

func.func @softcap_scale_not_positive(%s: !attn.regs<64x64xf32, acc>) {
  // expected-error @+1 {{'attn.softcap' op scale must be positive and finite, got -1.000000e+00}}
  %t = attn.softcap %s {scale = -1.0 : f32} : !attn.regs<64x64xf32, acc>
  return
}

// -----

func.func @softcap_on_row_vector(%m: !attn.regs<64xf32, row>) {
  // expected-error @+1 {{'attn.softcap' op 'input' must be an 'acc' register tile, got '!attn.regs<64xf32, row>'}}
  %t = attn.softcap %m {scale = 0.5 : f32} : !attn.regs<64xf32, row>
  return
}

// -----

func.func @attention_window_left_negative(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                                          %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  // expected-error @+1 {{'attn.attention' op has 'window_left' = -1: a window side is 0 to 2147483647 keys; leave it out for no bound on that side}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32, window_left = -1}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// -----

func.func @attention_window_right_too_wide(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                                           %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  // expected-error @+1 {{'attn.attention' op has 'window_right' = 2147483648: a window side is 0 to 2147483647 keys; leave it out for no bound on that side}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32, window_right = 2147483648}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// -----

func.func @attention_causal_window_right(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                                         %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  // expected-error @+1 {{'attn.attention' op is 'causal' with 'window_right' = 5: a causal row sees no key right of its diagonal; drop 'window_right' (or set it to 0) or drop 'causal'}}
  attn.attention %q, %k, %v, %o {causal, scale = 0.125 : f32, window_left = 64, window_right = 5}
    : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
  return
}

// -----

func.func @mask_window_left_negative(%s: !attn.regs<64x64xf32, acc>, %i: index) {
  // expected-error @+1 {{'attn.mask' op has 'window_left' = -3: a window side is 0 to 2147483647 keys; leave it out for no bound on that side}}
  %m = attn.mask %s, %i, %i, %i {window_left = -3} : !attn.regs<64x64xf32, acc>
  return
}

// -----

func.func @mask_causal_window_right(%s: !attn.regs<64x64xf32, acc>, %i: index) {
  // expected-error @+1 {{'attn.mask' op is 'causal' with 'window_right' = 1: a causal row sees no key right of its diagonal; drop 'window_right' (or set it to 0) or drop 'causal'}}
  %m = attn.mask %s, %i, %i, %i {causal, window_right = 1} : !attn.regs<64x64xf32, acc>
  return
}

// -----

func.func @mask_bottom_right_window_without_q_len(%s: !attn.regs<64x64xf32, acc>, %i: index) {
  // expected-error @+1 {{'attn.mask' op a bottom-right mask needs 'q_len' (the number of query rows, which places the diagonal)}}
  %m = attn.mask %s, %i, %i, %i {causal_align = #attn.causal_align<bottom_right>, window_left = 8} : !attn.regs<64x64xf32, acc>
  return
}

// -----

func.func @exp2_diff_emulated_eighths_out_of_range(%s: !attn.regs<64x64xf32, acc>, %m: !attn.regs<64xf32, row>) {
  // expected-error @+1 {{'attn.exp2_diff' op emulated_eighths = 9 is out of range; use 1 to 8 (eighths of the fragment blocks), or no attribute for none}}
  %p = attn.exp2_diff %s, %m {emulated_eighths = 9, scale_log2e = 0.18 : f32} : !attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row>
  return
}

// -----

func.func @exp2_diff_emulated_eighths_zero(%s: !attn.regs<64x64xf32, acc>, %m: !attn.regs<64xf32, row>) {
  // expected-error @+1 {{'attn.exp2_diff' op emulated_eighths = 0 is out of range; use 1 to 8 (eighths of the fragment blocks), or no attribute for none}}
  %p = attn.exp2_diff %s, %m {emulated_eighths = 0, scale_log2e = 0.18 : f32} : !attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row>
  return
}

// -----

func.func @exp2_diff_emulated_row_vector(%m: !attn.regs<64xf32, row>) {
  // expected-error @+1 {{'attn.exp2_diff' op emulated_eighths selects fragment blocks of an 'acc' tile (the scores), but 'input' is '!attn.regs<64xf32, row>'; drop the attribute}}
  %a = attn.exp2_diff %m, %m {emulated_eighths = 4, scale_log2e = 0.18 : f32} : !attn.regs<64xf32, row>, !attn.regs<64xf32, row>
  return
}

// -----

// A misspelt field on a problem op is an error, never a kernel without it.
func.func @misspelt_field(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                          %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op has an unknown attribute 'casual'; its attributes are causal, causal_align, scale, softcap, window_left, window_right (did you mean 'causal'?)}}
  attn.attention %q, %k, %v, %o {casual, scale = 0.125 : f32}
    : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
  return
}

// -----

func.func @misspelt_softcap(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                            %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op has an unknown attribute 'soft_cap'; its attributes are causal, causal_align, scale, softcap, window_left, window_right (did you mean 'softcap'?)}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32, soft_cap = 30.0 : f32}
    : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
  return
}

// -----

func.func @unknown_field(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                         %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{'attn.attention' op has an unknown attribute 'window'; its attributes are causal, causal_align, scale, softcap, window_left, window_right}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32, window = [128, 0]}
    : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
  return
}

// -----

// expected-error @+1 {{unknown attribute 'attn.casual' of the attn dialect; it knows attn.target, attn.tiling, attn.problem, attn.schedule, attn.grid, attn.kernel, attn.tile_loop, attn.tensors, attn.params, attn.num_threads, attn.smem_bytes, attn.uses_tma, attn.exp2_emulated_eighths}}
func.func @unknown_attribute() attributes {attn.casual} {
  return
}

// -----

// expected-error @+1 {{'attn.tiling' must be a #attn.tiling, got #attn.target<sm_80>}}
func.func @mistyped_attribute() attributes {attn.tiling = #attn.target<sm_80>} {
  return
}

// -----

// expected-error @+1 {{#attn.problem has no field 'casual'; its fields: dtype, head_dim, causal, scale, with_lse, causal_align, softcap, window_left, window_right, varlen, kv_cache, page_size, split_kv, head_pack, backward, alibi, head_dim_v, block_scales, v_row_major, combine}}
func.func @problem_unknown_field() attributes {attn.problem = #attn.problem<casual = true, scale = 0.125>} {
  return
}

// -----

// expected-error @+1 {{#attn.problem has 'scale' twice}}
func.func @problem_field_twice() attributes {attn.problem = #attn.problem<scale = 0.125, scale = 0.5>} {
  return
}

// -----

// expected-error @+1 {{invalid #attn.problem: window right = 64 with a causal mask: a causal row sees no key right of its diagonal; use window right 0 or -1 with causal, or drop causal for a window that looks ahead}}
func.func @problem_causal_window_right() attributes {attn.problem = #attn.problem<causal = true, window_right = 64, scale = 0.125>} {
  return
}

// -----

// expected-error @+1 {{invalid #attn.problem: the scale of a kernel is spelled out (positive), got 0.000000e+00}}
func.func @problem_default_scale() attributes {attn.problem = #attn.problem<head_dim = 64>} {
  return
}

// -----

// expected-error @+1 {{attn.problem says head_dim = 128 and dtype = bf16 but the kernel's o is 'memref<?x?x?x64xbf16>'}}
func.func @problem_disagrees_with_o(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                                    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>)
    attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.problem = #attn.problem<scale = 0.125>} {
  return
}

// -----

func.func @rounded_max(%s: !attn.regs<64x64xf32, acc>, %m: !attn.regs<64xf32, row>) {
  // expected-error @+1 {{'rounded' applies to a sum (of probabilities), not to a max}}
  %r = attn.row_reduce max %s, %m {rounded} : !attn.regs<64x64xf32, acc> -> !attn.regs<64xf32, row>
  return
}

// -----

func.func @lse_sum_type(%acc: !attn.regs<64x64xf32, acc>, %m: !attn.regs<64xf32, row>, %x: !attn.regs<32xf32, row>) {
  // expected-error @+1 {{'lse_sum' must have the type of 'sum' ('!attn.regs<64xf32, row>'), got '!attn.regs<32xf32, row>'}}
  %o, %l = attn.softmax_finalize %acc, %m, %m {scale = 1.0 : f32} : !attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row> lse_sum %x : !attn.regs<32xf32, row>
  return
}

// -----

func.func @alibi_slopes_rank(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                             %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>,
                             %slopes: memref<?xf32>) {
  // expected-error @+1 {{'attn.attention' op operand 'alibi_slopes' must be a rank-2 f32 memref [B, H], got 'memref<?xf32>'}}
  attn.attention %q, %k, %v, %o alibi(%slopes : memref<?xf32>) {scale = 0.125 : f32}
    : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
  return
}

// -----

func.func @alibi_scale(%s: !attn.regs<64x64xf32, acc>, %slopes: memref<?x?xf32>, %i: index) {
  // expected-error @+1 {{scale must be positive and finite, got 0}}
  %t = attn.alibi %s, %slopes[%i, %i], %i, %i, %i {scale = 0.0 : f32} : memref<?x?xf32>, !attn.regs<64x64xf32, acc>
  return
}

// -----

func.func @alibi_slopes_type(%s: !attn.regs<64x64xf32, acc>, %slopes: memref<?x?xf16>, %i: index) {
  // expected-error @+1 {{'attn.alibi' op operand 'alibi_slopes' must be a rank-2 f32 memref [B, H], got 'memref<?x?xf16>'}}
  %t = attn.alibi %s, %slopes[%i, %i], %i, %i, %i {scale = 1.0 : f32} : memref<?x?xf16>, !attn.regs<64x64xf32, acc>
  return
}
