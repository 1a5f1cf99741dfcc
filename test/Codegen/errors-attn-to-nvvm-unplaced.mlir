// RUN: attngen-opt %s -attn-to-nvvm -verify-diagnostics

// The shared memory is placed by attn-allocate-smem, not by the lowering.
module attributes {attn.target = #attn.target<sm_80>} {
  func.func @unplaced(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                      %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>)
      attributes {attn.kernel, attn.tensors = ["q", "k", "v", "o"], attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 64>], ctas_per_sm = 0>, attn.tiling = #attn.tiling<block_m = 64, block_n = 64, num_warps = 4>} {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'attn.alloc_smem' op has no shared-memory offsets: run attn-allocate-smem before attn-to-nvvm}}
    %t = attn.alloc_smem : !attn.smem<64x64xf16, swizzle = 128>
    attn.copy_async %q[%c0, %c0, %c0] -> %t : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    return
  }
}
