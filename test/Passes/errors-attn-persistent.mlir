// RUN: attngen-opt %s -attn-persistent -split-input-file -verify-diagnostics
// RUN: not attngen-opt %s -attn-persistent=ctas-per-sm=0 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: attn-persistent: ctas-per-sm = 0 is out of range; use 1 to 32

// Fills must be named for them to keep counting across tiles.
module attributes {attn.target = #attn.target<sm_90a>} {
  func.func @unnamed_fill(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                          %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>, #attn.grid_dim<size = num_heads, tile = 1>, #attn.grid_dim<size = batch, tile = 1>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    %c0 = arith.constant 0 : index
    %qb = attn.program_id 0
    %b = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    // expected-error @+1 {{'attn.copy_async' op attn-persistent needs copies that name their fill (attn-tile's do)}}
    attn.copy_async %q[%c0, %qb, %c0] -> %b : memref<?x?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
    attn.wait %b, %c0 : !attn.smem<64x128xbf16, swizzle = 128>
    return
  }
}

// -----

// A kernel without a key/value loop has no blocks to count.
module attributes {attn.target = #attn.target<sm_90a>} {
  // expected-error @+1 {{'func.func' op attn-persistent found no key/value loop (an scf.for that waits on a refilled buffer) in the kernel}}
  func.func @no_loop(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                     %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>, #attn.grid_dim<size = num_heads, tile = 1>, #attn.grid_dim<size = batch, tile = 1>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    %c0 = arith.constant 0 : index
    %qb = attn.program_id 0
    %b = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    attn.copy_async %q[%c0, %qb, %c0] -> %b fill %c0 : memref<?x?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
    attn.wait %b, %c0 : !attn.smem<64x128xbf16, swizzle = 128>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  // expected-error @+1 {{'func.func' op attn-persistent expects the (query block, head, batch) tile space of attn-tile, but 'attn.grid' has 1 dimensions}}
  func.func @one_dim(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                     %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    return
  }
}

// -----

// A varlen kernel's tiles past their sequences must be told apart: without
// attn-tile's guard around the program, the pass refuses it.
module attributes {attn.target = #attn.target<sm_90a>} {
  // expected-error @+1 {{'func.func' op is a varlen kernel without attn-tile's guard (one scf.if, no results, no else, around the tile program); attn-persistent cannot tell the tiles past a sequence}}
  func.func @varlen(%q: memref<?x?x128xbf16>, %k: memref<?x?x128xbf16>,
                    %v: memref<?x?x128xbf16>, %o: memref<?x?x128xbf16>,
                    %cq: memref<?xi32>, %ck: memref<?xi32>)
      attributes {attn.kernel, attn.problem = #attn.problem<varlen = true, scale = 0.125>, attn.tensors = ["q", "k", "v", "o", "cu_seqlens_q", "cu_seqlens_k"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = max_seqlen_q, tile = 64>, #attn.grid_dim<size = num_heads, tile = 1>, #attn.grid_dim<size = batch, tile = 1>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    return
  }
}

// -----

// The live tiles are numbered by the query sequences' lengths, so a varlen
// kernel must say which argument is cu_seqlens_q.
module attributes {attn.target = #attn.target<sm_90a>} {
  // expected-error @+1 {{'func.func' op is a varlen kernel whose 'attn.tensors' name no cu_seqlens_q argument; attn-persistent numbers its tiles by the query sequences' lengths; run attn-tile first}}
  func.func @varlen_unnamed(%q: memref<?x?x128xbf16>, %k: memref<?x?x128xbf16>,
                            %v: memref<?x?x128xbf16>, %o: memref<?x?x128xbf16>,
                            %cq: memref<?xi32>, %ck: memref<?xi32>)
      attributes {attn.kernel, attn.problem = #attn.problem<varlen = true, scale = 0.125>, attn.tensors = ["q", "k", "v", "o", "cu_q", "cu_k"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = max_seqlen_q, tile = 64>, #attn.grid_dim<size = num_heads, tile = 1>, #attn.grid_dim<size = batch, tile = 1>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    return
  }
}
