// RUN: attngen-opt %s -attn-configure -attn-tile -attn-causal-blocks -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-warp-specialize -attn-intra-wg-overlap -attn-pingpong -canonicalize -cse -attn-allocate-smem -attn-to-nvvm | FileCheck %s
// RUN: attngen-opt %s -attn-configure -attn-tile -attn-causal-blocks -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-warp-specialize -attn-intra-wg-overlap -attn-pingpong -canonicalize -cse -attn-allocate-smem -attn-to-nvvm | grep -c "nvvm.mbarrier.init" | FileCheck %s --check-prefix=INITS
// RUN: attngen-opt %s -attn-configure -attn-tile -attn-causal-blocks -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-warp-specialize -attn-intra-wg-overlap -attn-pingpong -canonicalize -cse -attn-allocate-smem -attn-to-nvvm | FileCheck %s --check-prefix=UNIFORM

// The schedule ops of the FlashAttention-3 kernel as NVVM: one producer
// warpgroup plus two consumer warpgroups (384 threads, minctasm 1 so that
// setmaxnreg takes effect); a full and an empty mbarrier per pipe stage
// (Q: 1 stage, K and V: 2 each = 10, initialised once); the producer gives
// registers away before the consumers take them; pingpong turns on named
// barriers of 256 threads; every loop iteration waits for S with one wgmma
// group still pending and for P V with none.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: llvm.func @fwd(
  // CHECK-SAME: attn.num_threads = 384 : i64
  // CHECK-SAME: nvvm.maxntid = array<i32: 384, 1, 1>
  // CHECK-SAME: nvvm.minctasm = 1 : i32
  // CHECK: nvvm.fence.mbarrier.init
  // CHECK-NEXT: }
  // CHECK-NEXT: nvvm.barrier0
  // CHECK: nvvm.setmaxregister  decrease 24
  // CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
  // CHECK: nvvm.setmaxregister  increase 240
  // CHECK: nvvm.barrier.arrive id = %{{.*}} number_of_threads = %{{.*}}
  // CHECK: nvvm.mbarrier.try_wait.parity
  // CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
  // CHECK: nvvm.wgmma.wait.group.sync.aligned 1
  // CHECK: nvvm.mbarrier.arrive
  // CHECK: nvvm.wgmma.wait.group.sync.aligned 0
  // INITS: 10
  // Q's empty barrier (one stage, released once per tile) counts the 256
  // consumer threads, each arriving without a branch; K's and V's count the
  // 8 consumer warps (lane 0 of each arrives). The consumers' warp index
  // comes from lane 0 (shfl idx) so that ptxas knows it is warp-uniform:
  // their Q slices and wgmma descriptors stay in uniform registers.
  // UNIFORM: nvvm.mbarrier.init %{{.*}}, %c256_i32
  // UNIFORM-COUNT-4: nvvm.mbarrier.init %{{.*}}, %c8_i32
  // UNIFORM: nvvm.fence.mbarrier.init
  // UNIFORM: nvvm.setmaxregister  increase 240
  // UNIFORM: %[[C4:.*]] = arith.constant 4 : i32
  // UNIFORM-NEXT: %[[WARP:.*]] = arith.subi %{{.*}}, %[[C4]] : i32
  // UNIFORM: nvvm.shfl.sync  idx %{{.*}}, %[[WARP]], %{{.*}}, %{{.*}} : i32 -> i32
  // UNIFORM: nvvm.mbarrier.arrive
  func.func @fwd(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                 %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.0883883 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>,
        memref<?x?x?x128xbf16>
    return
  }
}
