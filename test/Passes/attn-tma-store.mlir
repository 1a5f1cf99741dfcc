// RUN: attngen-opt %s -attn-configure -attn-tile -attn-online-softmax -canonicalize -cse -attn-persistent -attn-multibuffer -attn-warp-specialize -attn-tma-store -split-input-file | FileCheck %s
// RUN: attngen-opt %s -attn-configure -attn-tile -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-warp-specialize -attn-tma-store -split-input-file | FileCheck %s --check-prefix=ONCE

// A persistent CTA: each consumer warpgroup waits for the previous tile's
// store to have read the buffer (wait, then its barrier 7 + wg), writes its
// rows, syncs again and hands them to the TMA; the consumers end with a
// wait. The register store is gone.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @persistent
  // CHECK: %[[BUF:.*]] = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
  // CHECK-NEXT: attn.warp_specialize producer {
  // CHECK: } consumers {
  // CHECK-NEXT: %[[WG:.*]] = attn.warpgroup_id
  // CHECK-NEXT: %[[C7:.*]] = arith.constant 7 : index
  // CHECK-NEXT: %[[ID:.*]] = arith.addi %[[WG]], %[[C7]]
  // CHECK: scf.for
  // CHECK-NOT: attn.store %
  // CHECK: %[[O:.*]] = attn.normalize
  // CHECK: attn.tma_store_wait {pending = 0 : i64}
  // CHECK-NEXT: attn.named_barrier_sync %[[ID]] {threads = 128 : i64}
  // CHECK-NEXT: attn.store_smem %[[O]] -> %[[BUF]] : !attn.regs<128x128xf32, acc>, !attn.smem<128x128xbf16, swizzle = 128>
  // CHECK-NEXT: attn.named_barrier_sync %[[ID]] {threads = 128 : i64}
  // CHECK-NEXT: attn.tma_store %[[BUF]] -> %arg3[{{.*}}] : !attn.smem<128x128xbf16, swizzle = 128>, memref<?x?x?x128xbf16>
  // CHECK-NEXT: attn.store_rows
  // CHECK: } {attn.tile_loop}
  // CHECK-NEXT: attn.tma_store_wait {pending = 0 : i64}
  // CHECK-NEXT: } {consumer_regs = 240 : i64, consumer_warpgroups = 2 : i64
  // One CTA per tile: no earlier store to wait for before the write.
  // ONCE-LABEL: func.func @persistent
  // ONCE-NOT: attn.tma_store_wait
  // ONCE: attn.store_smem
  // ONCE-NEXT: attn.named_barrier_sync
  // ONCE-NEXT: attn.tma_store
  // ONCE-NEXT: attn.store_rows
  // ONCE-NEXT: attn.tma_store_wait {pending = 0 : i64}
  // ONCE-NEXT: } {consumer_regs
  func.func @persistent(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                        %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>,
                        %lse: memref<?x?x?xf32>) {
    attn.attention %q, %k, %v, %o lse %lse {scale = 0.125 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>
    return
  }
}

// -----

// d64: three consumer warpgroups of 64 rows, a 192x64 buffer.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @three_warpgroups
  // CHECK: attn.alloc_smem : !attn.smem<192x64xf16, swizzle = 128>
  // CHECK: attn.tma_store {{.*}} : !attn.smem<192x64xf16, swizzle = 128>, memref<?x?x?x64xf16>
  // CHECK: consumer_warpgroups = 3 : i64
  func.func @three_warpgroups(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                              %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// d256: Q (64 KB) and the K/V pipes (4 x 40 KB) leave no room for a 64 KB
// output tile in the 227 KB of a CTA, so the registers store O.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @no_room
  // CHECK-NOT: attn.tma_store
  // CHECK-NOT: attn.store_smem
  // CHECK: attn.store %{{.*}} -> %arg3
  // CHECK-NOT: attn.tma_store
  func.func @no_room(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>,
                     %v: memref<?x?x?x256xbf16>, %o: memref<?x?x?x256xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>
    return
  }
}
