// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -attn-online-softmax -attn-allocate-smem -attn-to-nvvm | FileCheck %s

// sm_90a: three byval TMA descriptors first, mbarrier-completed TMA loads,
// wgmma from shared-memory descriptors for S = Q K^T and with A in registers
// (inline PTX: no NVVM op takes a register A) for O += P V.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: llvm.func @fwd(
  // CHECK-SAME: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
  // CHECK-SAME: attn.num_threads = 128 : i64
  // CHECK-SAME: attn.uses_tma = true
  // CHECK-DAG: nvvm.mbarrier.init
  // CHECK-DAG: nvvm.fence.mbarrier.init
  // CHECK-DAG: nvvm.mbarrier.arrive.expect_tx
  // CHECK-DAG: nvvm.cp.async.bulk.tensor.shared.cluster.global
  // CHECK-DAG: nvvm.mbarrier.try_wait.parity
  // CHECK-DAG: nvvm.wgmma.fence.aligned
  // CHECK-DAG: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
  // CHECK-DAG: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}p, 1, 1, 1;
  // CHECK-DAG: nvvm.wgmma.commit.group.sync.aligned
  // CHECK-DAG: nvvm.wgmma.wait.group.sync.aligned 0
  func.func @fwd(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                 %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.0883883 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>,
        memref<?x?x?x128xbf16>
    return
  }
}
