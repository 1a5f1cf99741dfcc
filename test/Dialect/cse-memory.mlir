// RUN: attngen-opt %s -cse -split-input-file | FileCheck %s

// Shared memory is memory, not a value: the tile ops declare their reads
// and writes, so CSE keeps an MMA that reads a buffer refilled (and waited
// for) since the last identical MMA, and merges two reads with no write
// between them.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @refilled
  // CHECK: attn.mma
  // CHECK: attn.copy_async
  // CHECK: attn.wait
  // CHECK: attn.mma
  func.func @refilled(%K: memref<?x?x?x128xbf16>, %i: index) -> (!attn.regs<64x64xf32, acc>, !attn.regs<64x64xf32, acc>) {
    %q = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    %k = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    %s0 = attn.mma %q, %k {transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
    attn.copy_async %K[%i, %i, %i] -> %k fill %i : memref<?x?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
    attn.wait %k, %i : !attn.smem<64x128xbf16, swizzle = 128>
    %s1 = attn.mma %q, %k {transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
    return %s0, %s1 : !attn.regs<64x64xf32, acc>, !attn.regs<64x64xf32, acc>
  }

  // CHECK-LABEL: func.func @unchanged
  // CHECK: %[[S:.*]] = attn.mma
  // CHECK-NOT: attn.mma
  // CHECK: return %[[S]], %[[S]]
  func.func @unchanged() -> (!attn.regs<64x64xf32, acc>, !attn.regs<64x64xf32, acc>) {
    %q = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    %k = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    %s0 = attn.mma %q, %k {transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
    %s1 = attn.mma %q, %k {transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
    return %s0, %s1 : !attn.regs<64x64xf32, acc>, !attn.regs<64x64xf32, acc>
  }

  // Two allocations are two buffers, never one.
  // CHECK-LABEL: func.func @allocs
  // CHECK-COUNT-2: attn.alloc_smem
  func.func @allocs() -> (!attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128>) {
    %a = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    %b = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    return %a, %b : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128>
  }
}
