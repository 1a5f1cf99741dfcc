// RUN: attngen-opt %s -split-input-file -verify-diagnostics

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @async_result_read_before_wait(%q: !attn.smem<64x128xbf16, swizzle = 128>) {
    // expected-error @+1 {{'attn.mma' op an asynchronous result may only be used by attn.mma_wait, but 'attn.rescale' uses it}}
    %s = attn.mma %q, %q {async, transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
    %r = attn.splat 1.0 -> !attn.regs<64xf32, row>
    %x = attn.rescale %s, %r : !attn.regs<64x64xf32, acc>, !attn.regs<64xf32, row>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @wait_on_sync_mma(%q: !attn.smem<64x128xbf16, swizzle = 128>) {
    %s = attn.mma %q, %q {transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
    // expected-error @+1 {{'attn.mma_wait' op input must be the result of an asynchronous attn.mma {async}}}
    %w = attn.mma_wait %s {pending = 0} : !attn.regs<64x64xf32, acc>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @async_on_sm80(%q: !attn.smem<64x128xbf16, swizzle = 128>) {
    // expected-error @+1 {{'attn.mma' op asynchronous MMAs need #attn.target<sm_90a> (wgmma); sm_80's mma.sync is synchronous}}
    %s = attn.mma %q, %q {async, transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @pipe_wait_type(%i: index) {
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    // expected-error @+1 {{'attn.pipe_wait' op result type '!attn.smem<64x128xbf16, swizzle = 128>' differs from the pipe's buffer type '!attn.smem<128x128xbf16, swizzle = 128>'}}
    %k = attn.pipe_wait %kp[%i] : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>> -> !attn.smem<64x128xbf16, swizzle = 128>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  // expected-error @+1 {{a pipe has 1 to 8 stages, got 0}}
  func.func @zero_stages(%p: !attn.pipe<0, !attn.smem<128x128xbf16, swizzle = 128>>) {
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @register_budget() {
    // expected-error @+1 {{'attn.warp_specialize' op register budgets need 73728 registers, more than the 64512 the CTA's 384 threads start with (168 each; setmaxnreg.inc would wait forever); lower producer_regs or consumer_regs}}
    attn.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumers {
      %c = arith.constant 0 : index
    } {consumer_regs = 256, consumer_warpgroups = 2, producer_regs = 64, producer_warps = 4}
    return
  }
}

// -----

// 384 threads start with 168 registers each: 32/240 fits the register file
// (65536) but not the CTA's 64512, so the consumers' setmaxnreg.inc would
// wait forever.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @register_pool() {
    // expected-error @+1 {{'attn.warp_specialize' op register budgets need 65536 registers, more than the 64512 the CTA's 384 threads start with (168 each; setmaxnreg.inc would wait forever); lower producer_regs or consumer_regs}}
    attn.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumers {
      %c = arith.constant 0 : index
    } {consumer_regs = 240, consumer_warpgroups = 2, producer_regs = 32, producer_warps = 4}
    return
  }
}

// -----

// Two CTAs per SM (the tiling's min_ctas_per_sm) halve what each CTA's
// threads start with: 128 each of 256, so 40/240 no longer fits.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @register_share() attributes {attn.tiling = #attn.tiling<block_m = 64, block_n = 128, num_warps = 4, stages = 2, peel_masked_blocks = false, min_ctas_per_sm = 2>} {
    // expected-error @+1 {{'attn.warp_specialize' op register budgets need 35840 registers, more than the 32768 the CTA's 256 threads start with (128 each at 2 CTAs per SM; setmaxnreg.inc would wait forever); lower producer_regs or consumer_regs}}
    attn.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumers {
      %c = arith.constant 0 : index
    } {consumer_regs = 240, consumer_warpgroups = 1, producer_regs = 40, producer_warps = 4}
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @setmaxnreg_step() {
    // expected-error @+1 {{'attn.warp_specialize' op consumer_regs = 236 must be a multiple of 8 between 24 and 256 (setmaxnreg)}}
    attn.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumers {
      %c = arith.constant 0 : index
    } {consumer_regs = 236, consumer_warpgroups = 2, producer_regs = 24, producer_warps = 4}
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @ws_on_sm80() {
    // expected-error @+1 {{'attn.warp_specialize' op warp specialization needs #attn.target<sm_90a> (setmaxnreg, mbarrier pipes)}}
    attn.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumers {
      %c = arith.constant 0 : index
    } {consumer_regs = 240, consumer_warpgroups = 2, producer_regs = 24, producer_warps = 4}
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @warpgroup_id_outside() {
    // expected-error @+1 {{'attn.warpgroup_id' op is only defined inside the 'consumers' region of attn.warp_specialize}}
    %wg = attn.warpgroup_id
    return
  }
}

// -----

module {
  func.func @pipe_load_no_target(%K: memref<?x?x?x128xbf16>, %i: index) {
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    // expected-error @+1 {{'attn.pipe_load' op pipes need the module's #attn.target: mbarriers and TMA on sm_90a, cp.async groups on sm_80}}
    attn.pipe_load %K[%i, %i, %i] -> %kp[%i] : memref<?x?x?x128xbf16>, !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @predicated_load_sm90(%K: memref<?x?x?x128xbf16>, %i: index, %p: i1) {
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    // expected-error @+1 {{'attn.pipe_load' op 'if' commits an empty cp.async group, which exists on sm_80 only; on sm_90a skip the fill with scf.if around its pipe_acquire and pipe_load}}
    attn.pipe_load %K[%i, %i, %i] -> %kp[%i] if %p : memref<?x?x?x128xbf16>, !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @wait_without_pending_sm80(%i: index) {
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>>
    // expected-error @+1 {{'attn.pipe_wait' op on sm_80 needs 'pending', the cp.async groups committed after this fill that may stay in flight (attn-multibuffer computes it)}}
    %k = attn.pipe_wait %kp[%i] : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>> -> !attn.smem<64x128xbf16, swizzle = 128>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @wait_with_pending_sm90(%i: index) {
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>>
    // expected-error @+1 {{'attn.pipe_wait' op 'pending' counts cp.async groups, which sm_90a pipes do not use (they wait on mbarriers)}}
    %k = attn.pipe_wait %kp[%i] {pending = 1 : i64} : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>> -> !attn.smem<64x128xbf16, swizzle = 128>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @negative_pending(%i: index) {
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>>
    // expected-error @+1 {{'attn.pipe_wait' op attribute 'pending' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 0}}
    %k = attn.pipe_wait %kp[%i] {pending = -1 : i64} : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>> -> !attn.smem<64x128xbf16, swizzle = 128>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @barrier_in_warp_specialize() {
    attn.warp_specialize producer {
      // expected-error @+1 {{'attn.barrier' op is a CTA-wide barrier, which a warp-specialized kernel cannot use (its producer runs on one thread); synchronise through pipes or named barriers}}
      attn.barrier
    } consumers {
      %wg = attn.warpgroup_id
    } {consumer_regs = 240 : i64, consumer_warpgroups = 2 : i64, producer_regs = 24 : i64, producer_warps = 4 : i64}
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @async_waited_twice(%q: !attn.smem<64x128xbf16, swizzle = 128>) {
    // expected-error @+1 {{'attn.mma' op an asynchronous MMA needs exactly one attn.mma_wait in its own block}}
    %s = attn.mma %q, %q {async, transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
    %w0 = attn.mma_wait %s {pending = 0} : !attn.regs<64x64xf32, acc>
    %w1 = attn.mma_wait %s {pending = 0} : !attn.regs<64x64xf32, acc>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @async_never_waited(%q: !attn.smem<64x128xbf16, swizzle = 128>) {
    // expected-error @+1 {{'attn.mma' op an asynchronous MMA needs exactly one attn.mma_wait in its own block}}
    %s = attn.mma %q, %q {async, transpose_b} : !attn.smem<64x128xbf16, swizzle = 128>, !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<64x64xf32, acc>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @tma_store_outside(%o: memref<?x?x?x128xbf16>, %i: index) {
    %b = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
    // expected-error @+1 {{'attn.tma_store' op stores the rows each consumer warpgroup holds, so it is only defined inside the 'consumers' region of attn.warp_specialize}}
    attn.tma_store %b -> %o[%i, %i, %i] : !attn.smem<128x128xbf16, swizzle = 128>, memref<?x?x?x128xbf16>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @tma_store_rows(%o: memref<?x?x?x128xbf16>, %i: index) {
    %b = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    attn.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumers {
      // expected-error @+1 {{'attn.tma_store' op each of the 2 consumer warpgroups stores the 64 rows it holds, so the tile must have 128 rows, got '!attn.smem<64x128xbf16, swizzle = 128>'}}
      attn.tma_store %b -> %o[%i, %i, %i] : !attn.smem<64x128xbf16, swizzle = 128>, memref<?x?x?x128xbf16>
    } {consumer_regs = 240, consumer_warpgroups = 2, producer_regs = 24, producer_warps = 4}
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @tma_store_element(%o: memref<?x?x?x128xf16>, %i: index) {
    %b = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
    attn.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumers {
      // expected-error @+1 {{'attn.tma_store' op destination element type 'f16' does not match the tile's 'bf16'}}
      attn.tma_store %b -> %o[%i, %i, %i] : !attn.smem<128x128xbf16, swizzle = 128>, memref<?x?x?x128xf16>
    } {consumer_regs = 240, consumer_warpgroups = 2, producer_regs = 24, producer_warps = 4}
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @tma_store_columns(%o: memref<?x?x?x64xbf16>, %i: index) {
    %b = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
    attn.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumers {
      // expected-error @+1 {{'attn.tma_store' op tile has 128 columns but the destination head dimension 64 needs 64 (whole 64-column swizzle panels, clipped at 64)}}
      attn.tma_store %b -> %o[%i, %i, %i] : !attn.smem<128x128xbf16, swizzle = 128>, memref<?x?x?x64xbf16>
    } {consumer_regs = 240, consumer_warpgroups = 2, producer_regs = 24, producer_warps = 4}
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @tma_store_wait_outside() {
    // expected-error @+1 {{'attn.tma_store_wait' op waits for a consumer warpgroup's TMA stores, so it is only defined inside the 'consumers' region of attn.warp_specialize}}
    attn.tma_store_wait {pending = 0}
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @store_smem_shape(%acc: !attn.regs<128x64xf32, acc>) {
    %b = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
    // expected-error @+1 {{'attn.store_smem' op a 128x64 tile needs a buffer of 128 rows and its columns (a multiple of 16) rounded up to whole swizzle panels, got '!attn.smem<128x128xbf16, swizzle = 128>'}}
    attn.store_smem %acc -> %b : !attn.regs<128x64xf32, acc>, !attn.smem<128x128xbf16, swizzle = 128>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @store_smem_fragment(%p: !attn.regs<128x128xbf16, operand_a>) {
    %b = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
    // expected-error @+1 {{'attn.store_smem' op 'value' must be an f32 'acc' register tile, got '!attn.regs<128x128xbf16, operand_a>'}}
    attn.store_smem %p -> %b : !attn.regs<128x128xbf16, operand_a>, !attn.smem<128x128xbf16, swizzle = 128>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @store_smem_rows(%acc: !attn.regs<64x32xf32, acc>) {
    %b = attn.alloc_smem : !attn.smem<32x32xbf16, swizzle = 64>
    // expected-error @+1 {{'attn.store_smem' op a 64x32 tile needs a buffer of 64 rows and its columns (a multiple of 16) rounded up to whole swizzle panels, got '!attn.smem<32x32xbf16, swizzle = 64>'}}
    attn.store_smem %acc -> %b : !attn.regs<64x32xf32, acc>, !attn.smem<32x32xbf16, swizzle = 64>
    return
  }
}
