// RUN: attngen-opt %s -split-input-file -verify-diagnostics

// One case per chunk: the backward ops' verifier errors, whole messages.
!t = memref<?x?x?x64xbf16>
!r = memref<?x?x?xf32>
func.func @no_part(%q: !t, %l: !r) {
  // expected-error @+1 {{'attn.attention_backward' op needs backward = #attn.backward<dq>, <dkdv>, <pre>, <fused> or <post>: the kernel it stands for}}
  attn.attention_backward %q, %q, %q, %q, %q, %l, %l, %q, %q, %q
      {backward = #attn.backward<none>, scale = 0.125 : f32}
    : !t, !t, !t, !t, !t, !r, !r, !t, !t, !t
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!r = memref<?x?x?xf32>
func.func @lse_rank(%q: !t, %l: !r, %bad: memref<?x?xf32>) {
  // expected-error @+1 {{'attn.attention_backward' op operand 'lse' must be a rank-3 f32 memref [B, H, Nq], got 'memref<?x?xf32>'}}
  attn.attention_backward %q, %q, %q, %q, %q, %bad, %l, %q, %q, %q
      {backward = #attn.backward<dq>, scale = 0.125 : f32}
    : !t, !t, !t, !t, !t, memref<?x?xf32>, !r, !t, !t, !t
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!r = memref<?x?x?xf32>
func.func @gradient_dtype(%q: !t, %l: !r, %dq: memref<?x?x?x64xf16>) {
  // expected-error @+1 {{'attn.attention_backward' op operand 'dq' has element type 'f16' but 'q' has 'bf16'}}
  attn.attention_backward %q, %q, %q, %q, %q, %l, %l, %dq, %q, %q
      {backward = #attn.backward<dq>, scale = 0.125 : f32}
    : !t, !t, !t, !t, !t, !r, !r, memref<?x?x?x64xf16>, !t, !t
  return
}

// -----

!t = memref<2x?x?x64xbf16>
!r = memref<3x?x?xf32>
func.func @delta_batch(%q: !t, %l: !r) {
  // expected-error @+1 {{'attn.attention_backward' op batch size differs: operand 'lse' has 3 (dim 0) but 'q' has 2 (dim 0)}}
  attn.attention_backward %q, %q, %q, %q, %q, %l, %l, %q, %q, %q
      {backward = #attn.backward<dkdv>, scale = 0.125 : f32}
    : !t, !t, !t, !t, !t, !r, !r, !t, !t, !t
  return
}

// -----

func.func @col_length(%s: !attn.regs<64x32xf32, acc>, %l: !attn.regs<64xf32, col>) {
  // expected-error @+1 {{'attn.recompute_probs' op 'lse' has 64 entries but the tile has 32 columns}}
  %p = attn.recompute_probs %s, %l {scale_log2e = 1.0 : f32}
    : !attn.regs<64x32xf32, acc>, !attn.regs<64xf32, col>
  return
}

// -----

func.func @grad_vector_kind(%s: !attn.regs<64x32xf32, acc>, %d: !attn.regs<64x32xf32, acc>) {
  // expected-error @+1 {{'attn.softmax_grad' op 'delta' must be a 'row' or 'col' register tile, got '!attn.regs<64x32xf32, acc>'}}
  %ds = attn.softmax_grad %s, %s, %d {scale = 1.0 : f32}
    : !attn.regs<64x32xf32, acc>, !attn.regs<64x32xf32, acc>
  return
}

// -----

func.func @row_dot_result(%a: !attn.regs<64x32xf32, acc>) {
  // expected-error @+1 {{'attn.row_dot' op result must be a 'row' register tile of 64 rows, got '!attn.regs<32xf32, col>'}}
  %d = attn.row_dot %a, %a : !attn.regs<64x32xf32, acc> -> !attn.regs<32xf32, col>
  return
}

// -----

func.func @load_cols_kind(%src: memref<?x?x?xf32>, %i: index) {
  // expected-error @+1 {{'attn.load_cols' op result must be a 'col' or 'lanes' register tile, got '!attn.regs<64xf32, row>'}}
  %l = attn.load_cols %src[%i, %i, %i] : memref<?x?x?xf32> -> !attn.regs<64xf32, row>
  return
}

// -----

func.func @load_cols_lanes_bias(%src: memref<?x?x?xf32>, %i: index) {
  // expected-error @+1 {{'attn.load_cols' op loads into 'lanes' untransformed: put 'exp2_bias' on the attn.spread_cols that reads the result}}
  %l = attn.load_cols %src[%i, %i, %i] {exp2_bias} : memref<?x?x?xf32> -> !attn.regs<64xf32, lanes>
  return
}

// -----

func.func @spread_cols_kinds(%r: !attn.regs<64xf32, lanes>) {
  // expected-error @+1 {{'attn.spread_cols' op spreads a 'lanes' vector into a 'col' one of the same length, got '!attn.regs<64xf32, lanes>' -> '!attn.regs<128xf32, col>'}}
  %c = attn.spread_cols %r : !attn.regs<64xf32, lanes> -> !attn.regs<128xf32, col>
  return
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @dq_mma_rows(%k: !attn.smem<128x128xbf16, swizzle = 128>, %ds: !attn.smem<64x64xbf16, swizzle = 128>) {
    // expected-error @+1 {{'attn.dq_mma' op 'k' and 'ds' must have the same rows (the block's keys), 64 per consumer warpgroup; got 128 and 64}}
    %b = attn.dq_mma %k, %ds : !attn.smem<128x128xbf16, swizzle = 128>, !attn.smem<64x64xbf16, swizzle = 128> -> !attn.regs<128x64xf32, acc>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @dq_mma_block(%k: !attn.smem<128x128xbf16, swizzle = 128>, %ds: !attn.smem<128x64xbf16, swizzle = 128>) {
    // expected-error @+1 {{'attn.dq_mma' op result must be an 'acc' tile of 64 rows per consumer warpgroup and at most 64 columns, got '!attn.regs<128x128xf32, acc>'}}
    %b = attn.dq_mma %k, %ds : !attn.smem<128x128xbf16, swizzle = 128>, !attn.smem<128x64xbf16, swizzle = 128> -> !attn.regs<128x128xf32, acc>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @dq_mma_sm80_async(%k: !attn.smem<64x128xbf16, swizzle = 128>, %ds: !attn.smem<64x32xbf16, swizzle = 64>) {
    // expected-error @+1 {{'attn.dq_mma' op is asynchronous only on sm_90a (wgmma); sm_80's mma.sync is synchronous: drop 'async'}}
    %b = attn.dq_mma %k, %ds {async} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x32xbf16, swizzle = 64> -> !attn.regs<128x32xf32, acc>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @dq_mma_sm80_block(%k: !attn.smem<64x128xbf16, swizzle = 128>, %ds: !attn.smem<64x32xbf16, swizzle = 64>) {
    // expected-error @+1 {{'attn.dq_mma' op result must be the 'acc' tile dQ^T of 128 rows (the head dim) and 32 columns (a multiple of 16), got '!attn.regs<64x32xf32, acc>'}}
    %b = attn.dq_mma %k, %ds : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x32xbf16, swizzle = 64> -> !attn.regs<64x32xf32, acc>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @accumulate_dq_sm80_stage(%b: !attn.regs<128x32xf32, acc>, %stage: !attn.smem<32x64xf32, swizzle = 128>, %dst: memref<?x?x?x128xf32>, %i: index) {
    // expected-error @+1 {{'attn.accumulate_dq' op adds from registers on sm_80 (no TMA): drop the 'stage' tile}}
    attn.accumulate_dq %b, %stage -> %dst[%i, %i, %i] : !attn.regs<128x32xf32, acc>, memref<?x?x?x128xf32>, !attn.smem<32x64xf32, swizzle = 128>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @accumulate_dq_no_stage(%b: !attn.regs<128x64xf32, acc>, %dst: memref<?x?x?x128xf32>, %i: index) {
    // expected-error @+1 {{'attn.accumulate_dq' op drains through an f32 'stage' tile on sm_90a (the TMA reduces from shared memory); give one}}
    attn.accumulate_dq %b -> %dst[%i, %i, %i] : !attn.regs<128x64xf32, acc>, memref<?x?x?x128xf32>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @accumulate_dq_sm80_block(%b: !attn.regs<64x32xf32, acc>, %dst: memref<?x?x?x128xf32>, %i: index) {
    // expected-error @+1 {{'attn.accumulate_dq' op 'block' must be attn.dq_mma's 'acc' tile of 128 rows (dQ^T: the head dim), got '!attn.regs<64x32xf32, acc>'}}
    attn.accumulate_dq %b -> %dst[%i, %i, %i] : !attn.regs<64x32xf32, acc>, memref<?x?x?x128xf32>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @accumulate_dq_stage(%b: !attn.regs<128x64xf32, acc>, %stage: !attn.smem<64x64xf32, swizzle = 128>, %dst: memref<?x?x?x128xf32>, %i: index) {
    // expected-error @+1 {{'attn.accumulate_dq' op 'stage' must be an f32 tile of 64 columns with a 128-byte swizzle (the TMA's boxes of 32) and 128 rows (the block's columns per warpgroup), got '!attn.smem<64x64xf32, swizzle = 128>'}}
    attn.accumulate_dq %b, %stage -> %dst[%i, %i, %i] : !attn.regs<128x64xf32, acc>, memref<?x?x?x128xf32>, !attn.smem<64x64xf32, swizzle = 128>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @mma_wait_on_sync_dq_mma(%k: !attn.smem<128x128xbf16, swizzle = 128>, %ds: !attn.smem<128x64xbf16, swizzle = 128>) {
    %b = attn.dq_mma %k, %ds : !attn.smem<128x128xbf16, swizzle = 128>, !attn.smem<128x64xbf16, swizzle = 128> -> !attn.regs<128x64xf32, acc>
    // expected-error @+1 {{'attn.mma_wait' op input must be the result of an asynchronous attn.mma {async} or attn.dq_mma {async}}}
    %w = attn.mma_wait %b {pending = 0} : !attn.regs<128x64xf32, acc>
    return
  }
}

// -----

func.func @convert_rows_from_bf16(%acc: memref<?x?x?x128xbf16>, %dq: memref<?x?x?x128xbf16>, %i: index) {
  // expected-error @+1 {{'attn.convert_rows' op 'src' must be a rank-4 [B, N, H, D] f32 memref, got 'memref<?x?x?x128xbf16>'}}
  attn.convert_rows %acc[%i, %i, %i] -> %dq {rows = 64 : i64} : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
  return
}

// -----

func.func @convert_rows_into_f32(%acc: memref<?x?x?x128xf32>, %dq: memref<?x?x?x128xf32>, %i: index) {
  // expected-error @+1 {{'attn.convert_rows' op 'dst' must be a rank-4 [B, N, H, D] f16 or bf16 memref, got 'memref<?x?x?x128xf32>'}}
  attn.convert_rows %acc[%i, %i, %i] -> %dq {rows = 64 : i64} : memref<?x?x?x128xf32>, memref<?x?x?x128xf32>
  return
}

// -----

func.func @convert_rows_head_dims(%acc: memref<?x?x?x128xf32>, %dq: memref<?x?x?x64xbf16>, %i: index) {
  // expected-error @+1 {{'attn.convert_rows' op 'src' and 'dst' must have the same static head dim, a multiple of 4 (16-byte runs of f32), got 'memref<?x?x?x128xf32>' and 'memref<?x?x?x64xbf16>'}}
  attn.convert_rows %acc[%i, %i, %i] -> %dq {rows = 64 : i64} : memref<?x?x?x128xf32>, memref<?x?x?x64xbf16>
  return
}

// -----

func.func @convert_rows_no_rows(%acc: memref<?x?x?x128xf32>, %dq: memref<?x?x?x128xbf16>, %i: index) {
  // expected-error @+1 {{'attn.convert_rows' op attribute 'rows' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  attn.convert_rows %acc[%i, %i, %i] -> %dq {rows = 0 : i64} : memref<?x?x?x128xf32>, memref<?x?x?x128xbf16>
  return
}

// -----

func.func @dot_rows_f32(%do: memref<?x?x?x128xf32>, %o: memref<?x?x?x128xf32>, %delta: memref<?x?x?xf32>, %i: index) {
  // expected-error @+1 {{'attn.dot_rows' op 'lhs' must be a rank-4 [B, N, H, D] f16 or bf16 memref, got 'memref<?x?x?x128xf32>'}}
  attn.dot_rows %do, %o[%i, %i, %i] -> %delta {rows = 64 : i64} : memref<?x?x?x128xf32>, memref<?x?x?x128xf32>, memref<?x?x?xf32>
  return
}

// -----

func.func @dot_rows_mixed(%do: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xf16>, %delta: memref<?x?x?xf32>, %i: index) {
  // expected-error @+1 {{'attn.dot_rows' op 'rhs' must have the type of 'lhs' ('memref<?x?x?x128xbf16>'), got 'memref<?x?x?x128xf16>'}}
  attn.dot_rows %do, %o[%i, %i, %i] -> %delta {rows = 64 : i64} : memref<?x?x?x128xbf16>, memref<?x?x?x128xf16>, memref<?x?x?xf32>
  return
}

// -----

func.func @dot_rows_d96(%do: memref<?x?x?x96xbf16>, %o: memref<?x?x?x96xbf16>, %delta: memref<?x?x?xf32>, %i: index) {
  // expected-error @+1 {{'attn.dot_rows' op the head dim must be static and 8 times a power of two up to 256 (a row's 16-byte runs reduce within a warp), got 'memref<?x?x?x96xbf16>'}}
  attn.dot_rows %do, %o[%i, %i, %i] -> %delta {rows = 64 : i64} : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?xf32>
  return
}

// -----

func.func @dot_rows_dst(%do: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %delta: memref<?x?xf32>, %i: index) {
  // expected-error @+1 {{'attn.dot_rows' op 'dst' must be a rank-3 [B, H, N] f32 memref, got 'memref<?x?xf32>'}}
  attn.dot_rows %do, %o[%i, %i, %i] -> %delta {rows = 64 : i64} : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?xf32>
  return
}

// -----

func.func @clear_rows_bf16(%acc: memref<?x?x?x128xbf16>, %i: index) {
  // expected-error @+1 {{'attn.clear_rows' op 'dst' must be a rank-4 [B, N, H, D] f32 memref with a static head dim that is a multiple of 4 (16-byte runs), got 'memref<?x?x?x128xbf16>'}}
  attn.clear_rows %acc[%i, %i, %i] {rows = 64 : i64} : memref<?x?x?x128xbf16>
  return
}
