// RUN: attngen-opt %s -attn-transpose-v -verify-diagnostics -split-input-file

// A transposing copy must be a pipe fill first.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @not_a_pipe(%V: memref<?x?x?x128xf8E4M3FN>, %i: index) {
    %vt = attn.alloc_smem : !attn.smem<128x128xf8E4M3FN, swizzle = 128>
    // expected-error @+1 {{'attn.copy_async' op transposes its source but is not a pipe fill yet: run attn-multibuffer before attn-transpose-v}}
    attn.copy_async %V[%i, %i, %i] -> %vt fill %i {transpose} : memref<?x?x?x128xf8E4M3FN>, !attn.smem<128x128xf8E4M3FN, swizzle = 128>
    return
  }
}

// -----

// The transposing warps are the producer warpgroup's: sm_90a only.
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @sm80(%V: memref<?x?x?x128xf8E4M3FN>, %i: index) {
    %vp = attn.create_pipe : !attn.pipe<2, !attn.smem<128x128xf8E4M3FN, swizzle = 128>>
    attn.pipe_acquire %vp[%i] : !attn.pipe<2, !attn.smem<128x128xf8E4M3FN, swizzle = 128>>
    // expected-error @+1 {{'attn.pipe_load' op transposes FP8's V in shared memory on the producer warpgroup, which needs sm_90a and warp specialization}}
    attn.pipe_load %V[%i, %i, %i] -> %vp[%i] {transpose} : memref<?x?x?x128xf8E4M3FN>, !attn.pipe<2, !attn.smem<128x128xf8E4M3FN, swizzle = 128>>
    return
  }
}

// -----

// Only a row-major FP8 source is transposed by a copy.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @bf16(%V: memref<?x?x?x128xbf16>, %i: index) {
    %vt = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
    // expected-error @+1 {{'attn.copy_async' op transposes its source, which must be a row-major FP8 tensor (V of FP8 attention stored with its head dim contiguous), got 'memref<?x?x?x128xbf16>'}}
    attn.copy_async %V[%i, %i, %i] -> %vt fill %i {transpose} : memref<?x?x?x128xbf16>, !attn.smem<128x128xbf16, swizzle = 128>
    return
  }
}

// -----

// attn.pipe_transpose writes its source's exact transpose.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @shapes(%i: index) {
    %vs = attn.create_pipe : !attn.pipe<2, !attn.smem<128x64xf8E4M3FN, swizzle = 64>>
    %vt = attn.create_pipe : !attn.pipe<2, !attn.smem<128x128xf8E4M3FN, swizzle = 128>>
    // expected-error @+1 {{'attn.pipe_transpose' op writes '!attn.smem<128x64xf8E4M3FN, swizzle = 64>' transposed, which needs a 64x128 tile, but the destination is '!attn.smem<128x128xf8E4M3FN, swizzle = 128>'}}
    attn.pipe_transpose %vs -> %vt[%i] : !attn.pipe<2, !attn.smem<128x64xf8E4M3FN, swizzle = 64>>, !attn.pipe<2, !attn.smem<128x128xf8E4M3FN, swizzle = 128>>
    return
  }
}

// -----

// A KV cache's zeroing of value rows moves from the consumers' wait onto the
// transpose of the same fill, which is issued first: the count must be
// computed before the fill.
!vp = !attn.pipe<2, !attn.smem<128x128xf8E4M3FN, swizzle = 128>>
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @count_after_fill(%V: memref<?x?x?x128xf8E4M3FN>, %i: index, %n: index) {
    %vp = attn.create_pipe : !vp
    attn.pipe_acquire %vp[%i] : !vp
    attn.pipe_load %V[%i, %i, %i] -> %vp[%i] {transpose} : memref<?x?x?x128xf8E4M3FN>, !vp
    %rows = arith.subi %n, %i : index
    // expected-error @+1 {{'attn.pipe_wait' op zeroes rows from a count computed after the fill it waits for is issued; attn-transpose-v moves the zeroing to that fill's transpose: compute the count before the fill}}
    %v = attn.pipe_wait %vp[%i] zero_from %rows : !vp -> !attn.smem<128x128xf8E4M3FN, swizzle = 128>
    return
  }
}

// -----

// A zeroing wait whose fill no transposed load names is refused: left on
// the D x keys tile, it would zero head-dim rows.
!vp = !attn.pipe<2, !attn.smem<128x128xf8E4M3FN, swizzle = 128>>
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @unmatched_fill(%V: memref<?x?x?x128xf8E4M3FN>, %i: index, %j: index, %n: index) {
    %vp = attn.create_pipe : !vp
    attn.pipe_acquire %vp[%i] : !vp
    attn.pipe_load %V[%i, %i, %i] -> %vp[%i] {transpose} : memref<?x?x?x128xf8E4M3FN>, !vp
    // expected-error @+1 {{'attn.pipe_wait' op zeroes rows of a pipe attn-transpose-v transposes, but no fill of that pipe has the same fill index in its block: the zeroing of value rows moves onto the transpose of the same fill}}
    %v = attn.pipe_wait %vp[%j] zero_from %n : !vp -> !attn.smem<128x128xf8E4M3FN, swizzle = 128>
    return
  }
}
