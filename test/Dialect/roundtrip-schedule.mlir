// RUN: attngen-opt %s | attngen-opt | FileCheck %s

// The schedule ops print and parse back.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @schedule
  func.func @schedule(%K: memref<?x?x?x128xbf16>, %i: index, %acc: !attn.regs<128x128xf32, acc>) {
    // CHECK: attn.create_pipe : !attn.pipe<2, <128x128xbf16, swizzle = 128>>
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    %q = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
    // CHECK: attn.warp_specialize producer {
    attn.warp_specialize producer {
      // CHECK: attn.pipe_acquire %{{.*}}[%{{.*}}]
      attn.pipe_acquire %kp[%i] : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
      // CHECK: attn.pipe_load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] -> %{{.*}}[%{{.*}}]
      attn.pipe_load %K[%i, %i, %i] -> %kp[%i] : memref<?x?x?x128xbf16>, !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    // CHECK: } consumers {
    } consumers {
      // CHECK: attn.warpgroup_id
      %wg = attn.warpgroup_id
      // CHECK: attn.named_barrier_sync %{{.*}} {threads = 256 : i64}
      attn.named_barrier_sync %wg {threads = 256 : i64}
      %k = attn.pipe_wait %kp[%i] : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>> -> !attn.smem<128x128xbf16, swizzle = 128>
      // CHECK: attn.mma %{{.*}}, %{{.*}} {async, transpose_b}
      %s = attn.mma %q, %k {async, transpose_b} : !attn.smem<128x128xbf16, swizzle = 128>, !attn.smem<128x128xbf16, swizzle = 128> -> !attn.regs<128x128xf32, acc>
      // CHECK: attn.named_barrier_arrive %{{.*}} {threads = 256 : i64}
      attn.named_barrier_arrive %wg {threads = 256 : i64}
      // CHECK: attn.mma_wait %{{.*}} {pending = 0 : i64}
      %w = attn.mma_wait %s {pending = 0} : !attn.regs<128x128xf32, acc>
      // CHECK: attn.pipe_release
      attn.pipe_release %kp[%i] : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
      // CHECK: attn.tma_store_wait {pending = 0 : i64}
      attn.tma_store_wait {pending = 0}
      // CHECK: attn.store_smem %{{.*}} -> %{{.*}} : !attn.regs<128x128xf32, acc>, !attn.smem<128x128xbf16, swizzle = 128>
      attn.store_smem %acc -> %q : !attn.regs<128x128xf32, acc>, !attn.smem<128x128xbf16, swizzle = 128>
      // CHECK: attn.tma_store %{{.*}} -> %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : !attn.smem<128x128xbf16, swizzle = 128>, memref<?x?x?x128xbf16>
      attn.tma_store %q -> %K[%i, %i, %i] : !attn.smem<128x128xbf16, swizzle = 128>, memref<?x?x?x128xbf16>
    // CHECK: } {consumer_regs = 240 : i64, consumer_warpgroups = 2 : i64, producer_regs = 24 : i64, producer_warps = 4 : i64}
    } {consumer_regs = 240, consumer_warpgroups = 2, producer_regs = 24, producer_warps = 4}
    return
  }
}

// sm_80 rings: a predicated fill, a wait with its group count, a CTA barrier.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @cp_async_ring
  func.func @cp_async_ring(%K: memref<?x?x?x128xbf16>, %i: index, %p: i1) {
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>>
    // CHECK: attn.pipe_load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] -> %{{.*}}[%{{.*}}] if %{{.*}} :
    attn.pipe_load %K[%i, %i, %i] -> %kp[%i] if %p : memref<?x?x?x128xbf16>, !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>>
    // CHECK-NEXT: attn.pipe_wait %{{.*}}[%{{.*}}] {pending = 2 : i64}
    %k = attn.pipe_wait %kp[%i] {pending = 2 : i64} : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>> -> !attn.smem<64x128xbf16, swizzle = 128>
    // CHECK-NEXT: attn.barrier
    attn.barrier
    return
  }
}
