// RUN: attngen-opt %s -split-input-file -verify-diagnostics
// FP8 attention (f8E4M3FN q, k and v): its operands' rules, and the FP8
// products and conversions of the tile ops.

!q8 = memref<?x?x?x128xf8E4M3FN>
!v8 = memref<?x?x?x128xf8E4M3FN, strided<[?, 1, ?, ?]>>
!o = memref<?x?x?x128xbf16>
!d = memref<?x?xf32>

func.func @fp8_needs_descales(%q: !q8, %k: !q8, %v: !v8, %o: !o) {
  // expected-error @+1 {{'attn.attention' op has f8E4M3FN inputs but no 'q_descale': FP8 attention takes descale(q_descale, k_descale, v_descale), f32 [B, Hkv]}}
  attn.attention %q, %k, %v, %o {scale = 0.125 : f32} : !q8, !q8, !v8, !o
  return
}

// -----

!q8 = memref<?x?x?x128xf8E4M3FN>
!o = memref<?x?x?x128xbf16>
!d = memref<?x?xf32>

// V neither K-major nor row-major (no unit stride at all): no TMA reads it
// as a tile.
func.func @fp8_v_strided(%q: !q8, %k: !q8, %v: memref<?x?x?x128xf8E4M3FN, strided<[?, ?, ?, ?]>>, %o: !o, %qd: !d, %kd: !d, %vd: !d) {
  // expected-error @+1 {{'attn.attention' op operand 'v' of FP8 attention must be K-major, its keys contiguous (strided<[?, 1, ?, ?]>: V stored transposed, [B, Hkv, D, Nk]), or row-major with its head dim contiguous (transposed in the kernel)}}
  attn.attention %q, %k, %v, %o descale(%qd, %kd, %vd : !d, !d, !d) {scale = 0.125 : f32}
    : !q8, !q8, memref<?x?x?x128xf8E4M3FN, strided<[?, ?, ?, ?]>>, !o
  return
}

// -----

!q8 = memref<?x?x?x128xf8E4M3FN>
!v8 = memref<?x?x?x128xf8E4M3FN, strided<[?, 1, ?, ?]>>
!d = memref<?x?xf32>

func.func @fp8_output_not_bf16(%q: !q8, %k: !q8, %v: !v8, %o: memref<?x?x?x128xf16>, %qd: !d, %kd: !d, %vd: !d) {
  // expected-error @+1 {{'attn.attention' op operand 'o' of FP8 attention must hold bf16, got 'f16'}}
  attn.attention %q, %k, %v, %o descale(%qd, %kd, %vd : !d, !d, !d) {scale = 0.125 : f32}
    : !q8, !q8, !v8, memref<?x?x?x128xf16>
  return
}

// -----

!q8 = memref<?x?x?x128xf8E4M3FN>
!v8 = memref<?x?x?x128xf8E4M3FN, strided<[?, 1, ?, ?]>>
!o = memref<?x?x?x128xbf16>
!d = memref<?x?xf32>

func.func @fp8_k_not_fp8(%q: !q8, %k: memref<?x?x?x128xbf16>, %v: !v8, %o: !o, %qd: !d, %kd: !d, %vd: !d) {
  // expected-error @+1 {{'attn.attention' op operand 'k' must hold f8E4M3FN as 'q' does, got 'bf16'}}
  attn.attention %q, %k, %v, %o descale(%qd, %kd, %vd : !d, !d, !d) {scale = 0.125 : f32}
    : !q8, memref<?x?x?x128xbf16>, !v8, !o
  return
}

// -----

!q8 = memref<?x?x?x128xf8E4M3FN>
!v8 = memref<?x?x?x128xf8E4M3FN, strided<[?, 1, ?, ?]>>
!o = memref<?x?x?x128xbf16>

func.func @fp8_descale_rank(%q: !q8, %k: !q8, %v: !v8, %o: !o, %qd: memref<?xf32>, %kd: memref<?xf32>, %vd: memref<?xf32>) {
  // expected-error @+1 {{'attn.attention' op operand 'q_descale' must be a rank-2 f32 memref [B, Hkv], got 'memref<?xf32>'}}
  attn.attention %q, %k, %v, %o descale(%qd, %kd, %vd : memref<?xf32>, memref<?xf32>, memref<?xf32>)
    {scale = 0.125 : f32} : !q8, !q8, !v8, !o
  return
}

// -----

!b = memref<?x?x?x128xbf16>
!d = memref<?x?xf32>

func.func @descales_without_fp8(%q: !b, %k: !b, %v: !b, %o: !b, %qd: !d, %kd: !d, %vd: !d) {
  // expected-error @+1 {{'attn.attention' op has descales but its inputs are not FP8: descales come with f8E4M3FN q, k and v; drop them}}
  attn.attention %q, %k, %v, %o descale(%qd, %kd, %vd : !d, !d, !d) {scale = 0.125 : f32}
    : !b, !b, !b, !b
  return
}

// -----

// The FP8 wgmma reads B K-major only.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @fp8_mma_n_major(%a: !attn.smem<128x128xf8E4M3FN, swizzle = 128>,
                             %b: !attn.smem<128x128xf8E4M3FN, swizzle = 128>) {
    // expected-error @+1 {{'attn.mma' op an f8E4M3FN product reads 'b' K-major (transpose_b)}}
    %s = attn.mma %a, %b : !attn.smem<128x128xf8E4M3FN, swizzle = 128>,
        !attn.smem<128x128xf8E4M3FN, swizzle = 128> -> !attn.regs<128x128xf32, acc>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @fp8_mma_sm80(%a: !attn.smem<128x128xf8E4M3FN, swizzle = 128>,
                          %b: !attn.smem<128x128xf8E4M3FN, swizzle = 128>) {
    // expected-error @+1 {{'attn.mma' op f8E4M3FN products need #attn.target<sm_90a> (FP8 wgmma); sm_80 has no FP8 MMA}}
    %s = attn.mma %a, %b {transpose_b} : !attn.smem<128x128xf8E4M3FN, swizzle = 128>,
        !attn.smem<128x128xf8E4M3FN, swizzle = 128> -> !attn.regs<128x128xf32, acc>
    return
  }
}

// -----

// An FP8 A operand steps 32 columns.
// expected-error @+1 {{'operand_a' register tile of 'f8E4M3FN' columns (48) must be a multiple of 32}}
func.func private @fp8_operand_k_step(!attn.regs<128x48xf8E4M3FN, operand_a>)

// -----

func.func @descale_needs_row(%qd: memref<?x?xf32>, %b: index, %h: index) {
  // expected-error @+1 {{'attn.descale' op result must be a 'row' register tile, got '!attn.regs<128x64xf32, acc>'}}
  %f = attn.descale %qd[%b, %h] : memref<?x?xf32> -> !attn.regs<128x64xf32, acc>
  return
}

// -----

// Block quantization's factor is rank 3 and says which block: a query
// row's (rows) or a key block (block), not both.
func.func @descale_rows_and_block(%qd: memref<?x?x?xf32>, %b: index, %h: index, %r: index) {
  // expected-error @+1 {{'attn.descale' op takes 'rows' or 'block', not both}}
  %f = attn.descale %qd[%b, %h] rows %r block %r : memref<?x?x?xf32> -> !attn.regs<128xf32, row>
  return
}

// -----

func.func @descale_block_rank2(%kd: memref<?x?xf32>, %b: index, %h: index, %j: index) {
  // expected-error @+1 {{'attn.descale' op factors must be rank-3 f32 memrefs [B, H, blocks] (with 'rows' or 'block'), got 'memref<?x?xf32>'}}
  %f = attn.descale %kd[%b, %h] block %j : memref<?x?xf32> -> !attn.regs<128xf32, row>
  return
}

// -----

func.func @descale_rank3_unindexed(%kd: memref<?x?x?xf32>, %b: index, %h: index) {
  // expected-error @+1 {{'attn.descale' op factors must be rank-2 f32 memrefs [B, H] (rank 3 takes 'rows' or 'block'), got 'memref<?x?x?xf32>'}}
  %f = attn.descale %kd[%b, %h] : memref<?x?x?xf32> -> !attn.regs<128xf32, row>
  return
}

// -----

func.func @descale_two_block_factors(%qd: memref<?x?x?xf32>, %kd: memref<?x?x?xf32>, %b: index, %h: index, %j: index) {
  // expected-error @+1 {{'attn.descale' op with 'rows' or 'block' reads one rank-3 factor, got 2}}
  %f = attn.descale %qd, %kd[%b, %h] block %j : memref<?x?x?xf32>, memref<?x?x?xf32> -> !attn.regs<128xf32, row>
  return
}

// -----

func.func @descale_block_not_contiguous(%kd: memref<?x?x?xf32, strided<[?, ?, ?]>>, %b: index, %h: index, %j: index) {
  // expected-error @+1 {{'attn.descale' op operand 'factor' must be contiguous in its last dimension (stride 1), got stride ?}}
  %f = attn.descale %kd[%b, %h] block %j : memref<?x?x?xf32, strided<[?, ?, ?]>> -> !attn.regs<128xf32, row>
  return
}

// -----

!q8 = memref<?x?x?x128xf8E4M3FN>
!v8 = memref<?x?x?x128xf8E4M3FN, strided<[?, 1, ?, ?]>>
!o = memref<?x?x?x128xbf16>
!d = memref<?x?xf32>
!b = memref<?x?x?xf32, strided<[?, ?, 1]>>

// Block scales: q's, k's and v's descales are rank 3 together.
func.func @fp8_block_q_only(%q: !q8, %k: !q8, %v: !v8, %o: !o, %qd: !b, %kd: !d, %vd: !d) {
  // expected-error @+1 {{'attn.attention' op operand 'k_descale' must be a rank-3 f32 memref [B, H, blocks] (block scales: q's, k's and v's are all rank 3), got 'memref<?x?xf32>'}}
  attn.attention %q, %k, %v, %o descale(%qd, %kd, %vd : !b, !d, !d) {scale = 0.125 : f32}
    : !q8, !q8, !v8, !o
  return
}

// -----

!q8 = memref<?x?x?x128xf8E4M3FN>
!v8 = memref<?x?x?x128xf8E4M3FN, strided<[?, 1, ?, ?]>>
!o = memref<?x?x?x128xbf16>
!b = memref<?x?x?xf32, strided<[?, ?, 1]>>

!d = memref<?x?xf32>

// v's descale is per key block with the others.
func.func @fp8_block_v(%q: !q8, %k: !q8, %v: !v8, %o: !o, %qd: !b, %kd: !b, %vd: !d) {
  // expected-error @+1 {{'attn.attention' op operand 'v_descale' must be a rank-3 f32 memref [B, H, blocks] (block scales: q's, k's and v's are all rank 3), got 'memref<?x?xf32>'}}
  attn.attention %q, %k, %v, %o descale(%qd, %kd, %vd : !b, !b, !d) {scale = 0.125 : f32}
    : !q8, !q8, !v8, !o
  return
}

// -----

// A key block's factor scales the running max; a fixed max bounds the scores
// themselves, so the two do not combine.
func.func @block_factor_fixed_max(%s: !attn.regs<64x64xf32, acc>, %m: !attn.regs<64xf32, row>,
                                  %k: !attn.regs<64xf32, row>) {
  // expected-error @+1 {{'attn.online_softmax' op a 'block_factor' and 'fixed_max' do not combine: a fixed max bounds the scores themselves}}
  %p, %m1, %l1, %a = attn.online_softmax %s, %m, %m {fixed_max, scale = 0.125 : f32}
    : !attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row>
      block_factor %k, %k : !attn.regs<64xf32, row>, !attn.regs<64xf32, row>
  return
}
