// RUN: attngen-opt %s -attn-allocate-smem -attn-to-nvvm -split-input-file -verify-diagnostics

// Hand-written tile programs the verifiers accept but this lowering cannot
// translate faithfully are refused at the offending op, never crash and
// never become a kernel that silently skips work.

// A 64-row accumulator cannot be spread over 8 warps (16 rows each).
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @rows_without_owner(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                                %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 8>} {
    // expected-error @+1 {{'attn.splat' op register tile '!attn.regs<64x128xf32, acc>' has 64 rows, but the kernel's 8 warps own whole 16-row slices: use a multiple of 128}}
    %acc = attn.splat 0.0 -> !attn.regs<64x128xf32, acc>
    %c0 = arith.constant 0 : index
    attn.store %acc -> %o[%c0, %c0, %c0] : !attn.regs<64x128xf32, acc>, memref<?x?x?x128xbf16>
    return
  }
}

// -----

// A shared-memory tile carried through a loop.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @carried_buffer(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                            %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %b = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%t = %b) -> (!attn.smem<64x128xbf16, swizzle = 128>) {
      // expected-error @+1 {{'scf.yield' op shared-memory tiles are placed once at kernel entry; '!attn.smem<64x128xbf16, swizzle = 128>' cannot be loop-carried, yielded or selected}}
      scf.yield %t : !attn.smem<64x128xbf16, swizzle = 128>
    }
    return
  }
}

// -----

// A choice between two register tiles is not a scalar computation.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @select_tiles(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                          %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    %c = arith.constant true
    %a = attn.splat 0.0 -> !attn.regs<64x128xf32, acc>
    %b = attn.splat 1.0 -> !attn.regs<64x128xf32, acc>
    // expected-error @+1 {{'arith.select' op computes on '!attn.regs<64x128xf32, acc>'; attn-to-nvvm lowers arith ops on scalars only (use attn ops for tiles)}}
    %s = arith.select %c, %a, %b : !attn.regs<64x128xf32, acc>
    return
  }
}

// -----

// attn.store writes the kernel's output, not an input.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @store_into_q(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                          %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    %c0 = arith.constant 0 : index
    %acc = attn.splat 0.0 -> !attn.regs<64x128xf32, acc>
    // expected-error @+1 {{'attn.store' op must write the kernel's "o" argument (a split kernel's "o_partial", a backward kernel's "dq", "dk", "dv" or "dq_accum")}}
    attn.store %acc -> %q[%c0, %c0, %c0] : !attn.regs<64x128xf32, acc>, memref<?x?x?x128xbf16>
    return
  }
}

// -----

// The warp roles must match the tiling: three declared consumer warpgroups
// over 8 warps would leave a pingpong turn to a warpgroup that does not exist.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @role_count(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                        %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 128, block_n = 64, num_warps = 8>} {
    // expected-error @+1 {{'attn.warp_specialize' op declares 3 consumer warpgroups (12 warps), but the kernel's tiling has num_warps = 8: the program was built for 12; change the spec}}
    attn.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumers {
      %c = arith.constant 0 : index
    } {consumer_regs = 160, consumer_warpgroups = 3, producer_regs = 32, producer_warps = 4}
    return
  }
}

// -----

// A pipe is filled by the producer only: in the consumers region the
// elected-thread guard would never fire and the consumers would wait forever.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @fill_in_consumers(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                               %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 128, block_n = 64, num_warps = 8>} {
    %c0 = arith.constant 0 : index
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>>
    attn.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumers {
      // expected-error @+1 {{'attn.pipe_acquire' op fills a pipe, which only the producer region of attn.warp_specialize may do}}
      attn.pipe_acquire %kp[%c0] : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>>
    } {consumer_regs = 240, consumer_warpgroups = 2, producer_regs = 24, producer_warps = 4}
    return
  }
}

// -----

// And drained by the consumers only.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @drain_in_producer(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                               %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 128, block_n = 64, num_warps = 8>} {
    %c0 = arith.constant 0 : index
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>>
    attn.warp_specialize producer {
      // expected-error @+1 {{'attn.pipe_release' op computes or drains a pipe, which only the consumers region of attn.warp_specialize may do (the producer runs on one thread)}}
      attn.pipe_release %kp[%c0] : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>>
    } consumers {
      %c = arith.constant 0 : index
    } {consumer_regs = 240, consumer_warpgroups = 2, producer_regs = 24, producer_warps = 4}
    return
  }
}

// -----

// The ABI follows argument roles, which the kernel must name.
module attributes {attn.target = #attn.target<sm_80>} {
  // expected-error @+1 {{'func.func' op needs an 'attn.tensors' attribute naming the role of each argument (e.g. ["q", "k", "v", "o", "lse"]); attn-tile sets it}}
  func.func @no_roles(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                      %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>)
      attributes {attn.kernel, attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  // expected-error @+1 {{'func.func' op 'attn.tensors' entry "out" is not a tensor role; use "q", "k", "v", "o", "lse", "cu_seqlens_q", "cu_seqlens_k", "cache_seqlens", "block_table", "o_partial", "lse_partial", "dout", "delta", "dq", "dk", "dv", "alibi_slopes", "dq_accum", "q_descale", "k_descale" or "v_descale"}}
  func.func @unknown_role(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                          %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "out"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  // expected-error @+1 {{'func.func' op 'attn.tensors' names "k" twice}}
  func.func @role_twice(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                        %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "k", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  // expected-error @+1 {{'func.func' op 'attn.tensors' names 3 tensors but the kernel has 4 arguments}}
  func.func @roles_short(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                         %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_80>} {
  // expected-error @+1 {{'func.func' op 'attn.tensors' has no "o": a forward kernel reads q, k, v and writes o}}
  func.func @no_output(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                       %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "lse"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    return
  }
}

// -----

// The launch grid rule comes from the IR too.
module attributes {attn.target = #attn.target<sm_80>} {
  // expected-error @+1 {{'func.func' op kernel has no 'attn.grid' attribute (its launch grid rule); run attn-tile first}}
  func.func @no_grid(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                     %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    return
  }
}

// -----

// A roles' copy that reads the output would have no descriptor or pointer
// meaning: refused by role, whatever the argument's position.
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @copy_from_output(%o: memref<?x?x?x64xbf16>, %q: memref<?x?x?x64xbf16>,
                              %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>)
      attributes {attn.kernel, attn.tensors = ["o", "q", "k", "v"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    %c0 = arith.constant 0 : index
    %b = attn.alloc_smem : !attn.smem<64x64xbf16, swizzle = 128>
    // expected-error @+1 {{'attn.copy_async' op copies from the kernel's q, k or v argument (or a backward kernel's dout) only}}
    attn.copy_async %o[%c0, %c0, %c0] -> %b fill %c0 : memref<?x?x?x64xbf16>, !attn.smem<64x64xbf16, swizzle = 128>
    return
  }
}

// -----

// Variable-length kernels: both cu_seqlens roles or neither.
module attributes {attn.target = #attn.target<sm_80>} {
  // expected-error @+1 {{'func.func' op 'attn.tensors' names one of "cu_seqlens_q" and "cu_seqlens_k": a variable-length kernel takes both}}
  func.func @cu_seqlens_q_only(%q: memref<?x?x64xbf16>, %k: memref<?x?x64xbf16>,
                               %v: memref<?x?x64xbf16>, %o: memref<?x?x64xbf16>,
                               %cq: memref<?xi32>)
      attributes {attn.kernel, attn.problem = #attn.problem<head_dim = 64, varlen = true, scale = 0.125>, attn.tensors = ["q", "k", "v", "o", "cu_seqlens_q"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = max_seqlen_q, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    return
  }
}

// -----

// A varlen kernel's tensors are packed [total, H, D].
module attributes {attn.target = #attn.target<sm_80>} {
  // expected-error @+1 {{'func.func' op argument 'q' has rank 4; a variable-length kernel's tensors are [total, H, D]}}
  func.func @varlen_rank4(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x64xbf16>,
                          %v: memref<?x?x64xbf16>, %o: memref<?x?x64xbf16>,
                          %cq: memref<?xi32>, %ck: memref<?xi32>)
      attributes {attn.kernel, attn.problem = #attn.problem<head_dim = 64, varlen = true, with_lse = false, scale = 0.125>, attn.tensors = ["q", "k", "v", "o", "cu_seqlens_q", "cu_seqlens_k"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = max_seqlen_q, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    return
  }
}

// -----

// attn.sequence reads cu_seqlens, no other tensor.
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @sequence_of_q(%q: memref<?x?x64xbf16>, %k: memref<?x?x64xbf16>,
                           %v: memref<?x?x64xbf16>, %o: memref<?x?x64xbf16>,
                           %bad: memref<?xi32>, %cq: memref<?xi32>, %ck: memref<?xi32>)
      attributes {attn.kernel, attn.problem = #attn.problem<head_dim = 64, varlen = true, scale = 0.125>, attn.tensors = ["q", "k", "v", "o", "lse", "cu_seqlens_q", "cu_seqlens_k"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = max_seqlen_q, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'attn.sequence' op must read the kernel's "cu_seqlens_q" or "cu_seqlens_k" argument}}
    %s, %n = attn.sequence %bad[%c0] rows %c0 : memref<?xi32>
    return
  }
}

// -----

// A sequence is read once; it cannot be carried through a loop.
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @sequence_carried(%q: memref<?x?x64xbf16>, %k: memref<?x?x64xbf16>,
                              %v: memref<?x?x64xbf16>, %o: memref<?x?x64xbf16>,
                              %cq: memref<?xi32>, %ck: memref<?xi32>)
      attributes {attn.kernel, attn.problem = #attn.problem<head_dim = 64, varlen = true, with_lse = false, scale = 0.125>, attn.tensors = ["q", "k", "v", "o", "cu_seqlens_q", "cu_seqlens_k"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = max_seqlen_q, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %s, %n = attn.sequence %cq[%c0] rows %c0 : memref<?xi32>
    %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%x = %s) -> (!attn.seq) {
      // expected-error @+1 {{'scf.yield' op yields a sequence (!attn.seq), which is read once by attn.sequence and cannot flow through control flow}}
      scf.yield %x : !attn.seq
    }
    return
  }
}

// -----

// A TMA store writes the kernel's output only.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @tma_store_to_q(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                            %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 128>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 128, block_n = 128, num_warps = 8>} {
    %c0 = arith.constant 0 : index
    %b = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
    attn.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumers {
      // expected-error @+1 {{'attn.tma_store' op must write the kernel's "o" argument}}
      attn.tma_store %b -> %q[%c0, %c0, %c0] : !attn.smem<128x128xbf16, swizzle = 128>, memref<?x?x?x128xbf16>
    } {consumer_regs = 240, consumer_warpgroups = 2, producer_regs = 24, producer_warps = 4}
    return
  }
}


// -----

// An attn op the target has no lowering for is refused before anything is
// emitted: zeroing a warpgroup's share of rows is sm_90a's.
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @zero_rows_on_sm80(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                               %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    %c0 = arith.constant 0 : index
    %b = attn.alloc_smem : !attn.smem<64x64xbf16, swizzle = 128>
    // expected-error @+1 {{'attn.zero_rows' op is not supported by attn-to-nvvm on sm_80}}
    attn.zero_rows %b from %c0 {threads = 128} : !attn.smem<64x64xbf16, swizzle = 128>
    return
  }
}

// -----

// The problem fixes the order of the arguments: an edited attn.tensors would
// hand the runtime's k pointer to the body's v.
module attributes {attn.target = #attn.target<sm_80>} {
  // expected-error @+1 {{'attn.tensors' is ["q", "v", "k", "o"] but this kernel's problem (attn.problem) takes its tensors as ["q", "k", "v", "o"]: the argument order is fixed}}
  func.func @swapped_roles(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                           %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>)
      attributes {attn.kernel, attn.problem = #attn.problem<head_dim = 64, with_lse = false, scale = 0.125>, attn.tensors = ["q", "v", "k", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    return
  }
}

// -----

// The tile program was built for its grid's row tile: an edited block_m
// would change the metadata, not the code.
module attributes {attn.target = #attn.target<sm_80>} {
  // expected-error @+1 {{'attn.tiling' says block_m = 128 but the tile program steps 64 rows per CTA ('attn.grid')}}
  func.func @edited_block_m(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                            %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>)
      attributes {attn.kernel, attn.problem = #attn.problem<head_dim = 64, with_lse = false, scale = 0.125>, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 128, block_n = 64, num_warps = 4>} {
    return
  }
}
