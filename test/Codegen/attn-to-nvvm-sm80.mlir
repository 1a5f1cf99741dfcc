// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -attn-online-softmax -attn-allocate-smem -attn-to-nvvm | FileCheck %s

// sm_80: the kernel ABI of docs/ABI.md (no TMA maps), cp.async copies,
// ldmatrix + mma.sync GEMMs, shuffles for the row reductions.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK: llvm.mlir.global external @attn_dynamic_smem() {addr_space = 3 : i32, alignment = 1024 : i64}
  // CHECK-LABEL: llvm.func @fwd(
  // CHECK-SAME: !llvm.ptr<1> {llvm.noalias}
  // CHECK-SAME: %arg16: i64, %arg17: i32, %arg18: i32, %arg19: i32, %arg20: i32, %arg21: i32)
  // CHECK-SAME: attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 128>, #attn.grid_dim<size = num_heads, tile = 1>, #attn.grid_dim<size = batch, tile = 1>], ctas_per_sm = 0>
  // CHECK-SAME: attn.num_threads = 128 : i64
  // CHECK-SAME: attn.problem = #attn.problem<dtype = f16, head_dim = 64, causal = true,
  // CHECK-SAME: attn.tiling = #attn.tiling<block_m = 128,
  // CHECK-SAME: attn.uses_tma = false
  // CHECK-SAME: nvvm.kernel
  // CHECK-SAME: nvvm.maxntid = array<i32: 128, 1, 1>
  // CHECK-DAG: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg
  // CHECK-DAG: nvvm.cp.async.commit.group
  // CHECK-DAG: nvvm.cp.async.wait.group 0
  // CHECK-DAG: nvvm.barrier0
  // CHECK-DAG: nvvm.ldmatrix {{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
  // CHECK-DAG: nvvm.ldmatrix {{.*}} layout = #nvvm.mma_layout<col>
  // CHECK-DAG: nvvm.mma.sync A[{{.*}}]  B[{{.*}}]  C[{{.*}}]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32)
  // CHECK-DAG: nvvm.shfl.sync bfly
  // CHECK-DAG: llvm.intr.exp2
  func.func @fwd(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                 %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>,
                 %lse: memref<?x?x?xf32>) {
    attn.attention %q, %k, %v, %o lse %lse {causal, scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>,
        memref<?x?x?x64xf16>, memref<?x?x?xf32>
    return
  }
}
