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
    // expected-error @+1 {{'attn.warp_specialize' op register budgets need 73728 registers, more than the 65536 of an SM; lower producer_regs or consumer_regs}}
    attn.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumers {
      %c = arith.constant 0 : index
    } {consumer_regs = 256, consumer_warpgroups = 2, producer_regs = 64, producer_warps = 4}
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

module attributes {attn.target = #attn.target<sm_80>} {
  func.func @pipe_load_sm80(%K: memref<?x?x?x128xbf16>, %i: index) {
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    // expected-error @+1 {{'attn.pipe_load' op pipes complete on mbarriers and TMA; they need #attn.target<sm_90a>}}
    attn.pipe_load %K[%i, %i, %i] -> %kp[%i] : memref<?x?x?x128xbf16>, !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
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
