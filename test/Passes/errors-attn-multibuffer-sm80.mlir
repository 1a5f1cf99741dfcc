// RUN: attngen-opt %s -attn-multibuffer -split-input-file -verify-diagnostics

// What attn-multibuffer cannot pipeline on sm_80 is a located error, never a
// ring with wrong wait counts or a refill racing its readers.

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @loop_from_one(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %qs = attn.alloc_smem : !attn.smem<128x64xf16, swizzle = 128>
    %ks = attn.alloc_smem : !attn.smem<64x64xf16, swizzle = 128>
    attn.copy_async %q[%c0, %c0, %c0] -> %qs : memref<?x?x?x64xf16>, !attn.smem<128x64xf16, swizzle = 128>
    attn.copy_async %k[%c0, %c0, %c0] -> %ks : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    attn.wait %qs, %c0 : !attn.smem<128x64xf16, swizzle = 128>
    // A nest from block 1 numbers its fills from 0 there (j - 1), as
    // attn-causal-blocks does for a window; fill j is refused.
    scf.for %j = %c1 to %n step %c1 {
      // expected-error @+1 {{'attn.pipe_wait' op names a fill attn-multibuffer cannot relate to the loop's block index: a nest that starts at block lo needs fills (index + constant) - lo}}
      attn.wait %ks, %j : !attn.smem<64x64xf16, swizzle = 128>
      %s = attn.mma %qs, %ks {transpose_b} : !attn.smem<128x64xf16, swizzle = 128>, !attn.smem<64x64xf16, swizzle = 128> -> !attn.regs<128x64xf32, acc>
      %next = arith.addi %j, %c1 : index
      %row = arith.muli %next, %c64 : index
      attn.copy_async %k[%c0, %row, %c0] -> %ks : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    }
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @row_not_a_block(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %qs = attn.alloc_smem : !attn.smem<128x64xf16, swizzle = 128>
    %ks = attn.alloc_smem : !attn.smem<64x64xf16, swizzle = 128>
    attn.copy_async %q[%c0, %c0, %c0] -> %qs : memref<?x?x?x64xf16>, !attn.smem<128x64xf16, swizzle = 128>
    attn.copy_async %k[%c0, %c0, %c0] -> %ks : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    attn.wait %qs, %c0 : !attn.smem<128x64xf16, swizzle = 128>
    scf.for %j = %c0 to %n step %c1 {
      attn.wait %ks, %j : !attn.smem<64x64xf16, swizzle = 128>
      %s = attn.mma %qs, %ks {transpose_b} : !attn.smem<128x64xf16, swizzle = 128>, !attn.smem<64x64xf16, swizzle = 128> -> !attn.regs<128x64xf32, acc>
      // Rows 8 j: not a whole block of 64.
      %row = arith.muli %j, %c8 : index
      // expected-error @+1 {{'attn.pipe_load' op names a fill attn-multibuffer cannot relate to the loop's block index (it needs the index itself or the index plus a constant)}}
      attn.copy_async %k[%c0, %row, %c0] -> %ks : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    }
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @two_fills_per_block(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %qs = attn.alloc_smem : !attn.smem<128x64xf16, swizzle = 128>
    %ks = attn.alloc_smem : !attn.smem<64x64xf16, swizzle = 128>
    attn.copy_async %q[%c0, %c0, %c0] -> %qs : memref<?x?x?x64xf16>, !attn.smem<128x64xf16, swizzle = 128>
    attn.copy_async %k[%c0, %c0, %c0] -> %ks : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    attn.wait %qs, %c0 : !attn.smem<128x64xf16, swizzle = 128>
    scf.for %j = %c0 to %n step %c1 {
      attn.wait %ks, %j : !attn.smem<64x64xf16, swizzle = 128>
      %s = attn.mma %qs, %ks {transpose_b} : !attn.smem<128x64xf16, swizzle = 128>, !attn.smem<64x64xf16, swizzle = 128> -> !attn.regs<128x64xf32, acc>
      %j1 = arith.addi %j, %c1 : index
      %r1 = arith.muli %j1, %c64 : index
      attn.copy_async %k[%c0, %r1, %c0] -> %ks : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
      %j2 = arith.addi %j, %c2 : index
      %r2 = arith.muli %j2, %c64 : index
      // expected-error @+1 {{'attn.pipe_load' op is the second fill of its pipe in one iteration; attn-multibuffer (sm_80) takes one per block}}
      attn.copy_async %k[%c0, %r2, %c0] -> %ks : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    }
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @fill_after_loop(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %qs = attn.alloc_smem : !attn.smem<128x64xf16, swizzle = 128>
    %ks = attn.alloc_smem : !attn.smem<64x64xf16, swizzle = 128>
    attn.copy_async %q[%c0, %c0, %c0] -> %qs : memref<?x?x?x64xf16>, !attn.smem<128x64xf16, swizzle = 128>
    attn.copy_async %k[%c0, %c0, %c0] -> %ks : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    attn.wait %qs, %c0 : !attn.smem<128x64xf16, swizzle = 128>
    scf.for %j = %c0 to %n step %c1 {
      attn.wait %ks, %j : !attn.smem<64x64xf16, swizzle = 128>
      %s = attn.mma %qs, %ks {transpose_b} : !attn.smem<128x64xf16, swizzle = 128>, !attn.smem<64x64xf16, swizzle = 128> -> !attn.regs<128x64xf32, acc>
      %next = arith.addi %j, %c1 : index
      %row = arith.muli %next, %c64 : index
      attn.copy_async %k[%c0, %row, %c0] -> %ks : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    }
    // expected-error @+1 {{'attn.pipe_acquire' op follows the key/value loops; attn-multibuffer (sm_80) schedules fills before and inside them only}}
    attn.copy_async %k[%c0, %c0, %c0] -> %ks : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    return
  }
}

// -----

// K_{j+1} is copied before K_j is read: two blocks ahead, it would overwrite
// K_j's stage while the MMA reads it.
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @refill_before_release(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %qs = attn.alloc_smem : !attn.smem<128x64xf16, swizzle = 128>
    %ks = attn.alloc_smem : !attn.smem<64x64xf16, swizzle = 128>
    attn.copy_async %q[%c0, %c0, %c0] -> %qs : memref<?x?x?x64xf16>, !attn.smem<128x64xf16, swizzle = 128>
    attn.copy_async %k[%c0, %c0, %c0] -> %ks : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    attn.wait %qs, %c0 : !attn.smem<128x64xf16, swizzle = 128>
    scf.for %j = %c0 to %n step %c1 {
      %next = arith.addi %j, %c1 : index
      %row = arith.muli %next, %c64 : index
      // expected-error @+1 {{'attn.pipe_load' op refills the stage of block j + 2 - 2 without an attn.barrier after every thread released it; use more stages or fill later}}
      attn.copy_async %k[%c0, %row, %c0] -> %ks : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
      attn.wait %ks, %j : !attn.smem<64x64xf16, swizzle = 128>
      %s = attn.mma %qs, %ks {transpose_b} : !attn.smem<128x64xf16, swizzle = 128>, !attn.smem<64x64xf16, swizzle = 128> -> !attn.regs<128x64xf32, acc>
    }
    return
  }
}
