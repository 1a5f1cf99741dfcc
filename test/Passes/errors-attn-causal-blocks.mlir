// RUN: attngen-opt %s -attn-causal-blocks -verify-diagnostics -split-input-file

// The pass bounds a key loop that starts at block 0: one that starts
// elsewhere was bounded already (or counts its fills another way).
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @loop_not_from_zero(%K: memref<?x?x?x64xf16>, %s: !attn.regs<128x64xf32, acc>,
                                %row: index, %nk: index, %n: index)
      attributes {attn.kernel, attn.tiling = #attn.tiling<block_m = 128, block_n = 64, num_warps = 4>} {
    %c1 = arith.constant 1 : index
    scf.for %j = %c1 to %n step %c1 {
      // expected-error @+1 {{'attn.mask' op attn-causal-blocks expects the key/value loop to start at block 0 with step 1}}
      %m = attn.mask %s, %row, %j, %nk {window_left = 64} : !attn.regs<128x64xf32, acc>
    }
    return
  }
}

// -----

// A window moves the loop's first block: the copy ahead of the loop, which
// loads that block, must be block 0's (row 0, fill 0) to be moved with it.
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @first_copy_not_block_0(%K: memref<?x?x?x64xf16>, %s: !attn.regs<128x64xf32, acc>,
                                    %row: index, %nk: index, %n: index)
      attributes {attn.kernel, attn.tiling = #attn.tiling<block_m = 128, block_n = 64, num_warps = 4>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %k = attn.alloc_smem : !attn.smem<64x64xf16, swizzle = 128>
    // expected-error @+1 {{'attn.copy_async' op loads the first block of a key/value loop that attn-causal-blocks moves: it must read row 0 as fill 0}}
    attn.copy_async %K[%c0, %c64, %c0] -> %k fill %c0 : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    scf.for %j = %c0 to %n step %c1 {
      attn.wait %k, %j : !attn.smem<64x64xf16, swizzle = 128>
      %col = arith.muli %j, %c64 : index
      %m = attn.mask %s, %row, %col, %nk {window_left = 64} : !attn.regs<128x64xf32, acc>
    }
    return
  }
}

// -----

// The bounds go ahead of that copy, so what they read must be there already.
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @bounds_after_first_copy(%K: memref<?x?x?x64xf16>, %s: !attn.regs<128x64xf32, acc>,
                                     %qb: index, %nk: index, %n: index)
      attributes {attn.kernel, attn.tiling = #attn.tiling<block_m = 128, block_n = 64, num_warps = 4>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %k = attn.alloc_smem : !attn.smem<64x64xf16, swizzle = 128>
    attn.copy_async %K[%c0, %c0, %c0] -> %k fill %c0 : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    %row = arith.muli %qb, %c128 : index
    scf.for %j = %c0 to %n step %c1 {
      attn.wait %k, %j : !attn.smem<64x64xf16, swizzle = 128>
      %col = arith.muli %j, %c64 : index
      // expected-error @+1 {{'attn.mask' op mask bounds and the block count must be defined before the copies of the key/value loop's first block}}
      %m = attn.mask %s, %row, %col, %nk {window_left = 64} : !attn.regs<128x64xf32, acc>
    }
    return
  }
}

// -----

// Fills are renumbered on copies and waits, before attn-multibuffer makes
// them pipes.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @pipes_already(%s: !attn.regs<128x64xf32, acc>, %row: index, %nk: index, %n: index)
      attributes {attn.kernel, attn.tiling = #attn.tiling<block_m = 128, block_n = 64, num_warps = 8>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<64x64xbf16, swizzle = 128>>
    scf.for %j = %c0 to %n step %c1 {
      // expected-error @+1 {{'attn.pipe_wait' op attn-causal-blocks renumbers the fills of a loop that no longer starts at block 0 and runs before attn-multibuffer: run it on the program with attn.copy_async / attn.wait}}
      %k = attn.pipe_wait %kp[%j] : !attn.pipe<2, !attn.smem<64x64xbf16, swizzle = 128>> -> !attn.smem<64x64xbf16, swizzle = 128>
      %col = arith.muli %j, %c64 : index
      %m = attn.mask %s, %row, %col, %nk {window_left = 64} : !attn.regs<128x64xf32, acc>
    }
    return
  }
}
