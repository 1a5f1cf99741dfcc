// RUN: attngen-opt %s -attn-multibuffer -verify-diagnostics -split-input-file

// A buffer's release goes after its last reader; an asynchronous reader
// would still be reading then.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @async_reader(%K: memref<?x?x?x128xbf16>, %i: index) {
    %q = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    %k = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    scf.for %j = %c0 to %c2 step %c1 {
      attn.copy_async %K[%i, %i, %i] -> %k fill %i : memref<?x?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
      attn.wait %k, %j : !attn.smem<64x128xbf16, swizzle = 128>
      // expected-error @+1 {{'attn.mma' op is asynchronous; attn-multibuffer places a buffer's release after its last reader and needs synchronous MMAs (run attn-intra-wg-overlap after it)}}
      %s = attn.mma %q, %k {async, transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
      %w = attn.mma_wait %s {pending = 0} : !attn.regs<64x64xf32, acc>
    }
    return
  }
}

// -----

// A buffer filled once has a one-stage pipe whose first phase is fill 0.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @filled_once_not_fill_0(%Q: memref<?x?x?x128xbf16>, %i: index) {
    %q = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{'attn.copy_async' op is the only copy into its buffer but is not fill 0; number the copies into a buffer from 0}}
    attn.copy_async %Q[%i, %i, %i] -> %q fill %c1 : memref<?x?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
    attn.wait %q, %c1 : !attn.smem<64x128xbf16, swizzle = 128>
    %s = attn.mma %q, %q {transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
    return
  }
}
