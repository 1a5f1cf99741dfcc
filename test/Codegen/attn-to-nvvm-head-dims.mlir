// RUN: attngen-opt %s -split-input-file -attn-configure=warp-specialize=false -attn-tile -attn-online-softmax -attn-allocate-smem -attn-to-nvvm | FileCheck %s

// Lowering of head dims that are not 64, 128 or 256 (one loop body each:
// no attn-causal-blocks). The tiles are D rounded up to 16 columns in the
// widest swizzle whose panel divides that width (TileConfig.h draws it).

// sm_80 d40 (128x96): 48-column tiles of three 32-byte panels. Their
// columns 40..47 are zeroed once at entry (Q's 128 rows in one round, K's
// and V's 96 rows by the first 96 threads), never by the copies, which fill
// five chunks a row in eight power-of-two slots. S = Q K^T: three k steps
// (2 slices x 12 blocks each); O += P V: six k steps of five 8-column
// blocks, the fifth loaded with ldmatrix.x2; the store writes five blocks a
// row.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: llvm.func @d40_sm80(
  // CHECK-COUNT-3: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
  // CHECK-NOT: vector<4xi32>
  // CHECK: arith.cmpi ult, %{{.*}}, %c5_i32
  // CHECK: nvvm.cp.async.shared.global
  // CHECK: scf.for
  // CHECK-COUNT-72: nvvm.mma.sync {{.*}} shape = #nvvm.shape<m = 16, n = 8, k = 16>
  // CHECK-COUNT-6: nvvm.ldmatrix {{.*}} layout = #nvvm.mma_layout<col>, num = 2 : i32
  // CHECK-NOT: num = 2 : i32
  // CHECK-COUNT-20: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
  // CHECK-NOT: : i32, !llvm.ptr<1>
  func.func @d40_sm80(%q: memref<?x?x?x40xbf16>, %k: memref<?x?x?x40xbf16>,
                      %v: memref<?x?x?x40xbf16>, %o: memref<?x?x?x40xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.158 : f32}
      : memref<?x?x?x40xbf16>, memref<?x?x?x40xbf16>, memref<?x?x?x40xbf16>, memref<?x?x?x40xbf16>
    return
  }
}

// -----

// sm_90a d96 (one warpgroup, 64x128): three 64-byte panels, one TMA box of
// 32 columns each (Q: 64 x 96 x 2 = 12288 bytes, panels 64 x 64 = 4096
// bytes apart; K: 24576 bytes); wgmma descriptors in
// 64-byte swizzle mode (2): K-major with 8 rows 512 bytes apart
// (-9223371899415756800), V N-major with its 128-row panels 8192 bytes apart
// (-9223371899382267904). S = Q K^T in 6 k steps of n128, O += P V in 8 of
// n96.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: llvm.func @d96_sm90a(
  // CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c12288_i32
  // CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg0, %{{.*}}, box[%c0_i32{{.*}}] {isCTAOnly = true}
  // CHECK: llvm.getelementptr %{{.*}}[%c4096_i32]
  // CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg0, %{{.*}}, box[%c32_i32{{.*}}] {isCTAOnly = true}
  // CHECK: llvm.getelementptr %{{.*}}[%c8192_i32]
  // CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg0, %{{.*}}, box[%c64_i32{{.*}}] {isCTAOnly = true}
  // CHECK-NOT: %arg0, %{{.*}}, box
  // CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c24576_i32
  // CHECK: arith.constant -9223371899415756800 : i64
  // CHECK: nvvm.wgmma.fence.aligned
  // CHECK-COUNT-6: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>
  // CHECK-NOT: nvvm.wgmma.mma_async
  // CHECK: nvvm.wgmma.commit.group.sync.aligned
  // CHECK: arith.constant -9223371899382267904 : i64
  // CHECK: nvvm.wgmma.fence.aligned
  // CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16
  // CHECK-NOT: wgmma.mma_async
  // CHECK: nvvm.wgmma.commit.group.sync.aligned
  func.func @d96_sm90a(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>,
                       %v: memref<?x?x?x96xbf16>, %o: memref<?x?x?x96xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.102 : f32}
      : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>
    return
  }
}

// -----

// sm_90a d40: 48-column tiles of three 32-byte panels, TMA boxes of 16
// columns (columns 40..47 read as zero: past the tensor's D; Q: 6144 bytes,
// panels 64 x 32 = 2048 bytes apart; K: 12288 bytes); descriptors
// in 32-byte mode (3): K-major SBO 256 (-4611685949707845632), V N-major
// LBO 128 x 32 = 4096 (-4611685949691133952). S in 3 k steps; O is 48
// columns wide (wgmma reads whole 16-column panels of V) and the store
// writes its first five 8-column blocks.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: llvm.func @d40_sm90a(
  // CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c6144_i32
  // CHECK: %arg0, %{{.*}}, box[%c0_i32
  // CHECK: llvm.getelementptr %{{.*}}[%c2048_i32]
  // CHECK: %arg0, %{{.*}}, box[%c16_i32
  // CHECK: llvm.getelementptr %{{.*}}[%c4096_i32]
  // CHECK: %arg0, %{{.*}}, box[%c32_i32
  // CHECK-NOT: %arg0, %{{.*}}, box
  // CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c12288_i32
  // CHECK: arith.constant -4611685949707845632 : i64
  // CHECK-COUNT-3: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>
  // CHECK-NOT: nvvm.wgmma.mma_async
  // CHECK: arith.constant -4611685949691133952 : i64
  // CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n48k16.f32.f16.f16
  // CHECK-NOT: wgmma.mma_async
  // CHECK-COUNT-10: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
  // CHECK-NOT: : i32, !llvm.ptr<1>
  func.func @d40_sm90a(%q: memref<?x?x?x40xf16>, %k: memref<?x?x?x40xf16>,
                       %v: memref<?x?x?x40xf16>, %o: memref<?x?x?x40xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.158 : f32}
      : memref<?x?x?x40xf16>, memref<?x?x?x40xf16>, memref<?x?x?x40xf16>, memref<?x?x?x40xf16>
    return
  }
}

// -----

// sm_90a d192 (one warpgroup, 64x64): three 128-byte panels (boxes at
// columns 0, 64, 128, 8192 bytes apart; Q and K 24576 bytes), swizzle mode 1; S in 12 k steps of n64, O += P V in
// 4 k steps of n192.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: llvm.func @d192_sm90a(
  // CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c24576_i32
  // CHECK: %arg0, %{{.*}}, box[%c0_i32
  // CHECK: llvm.getelementptr %{{.*}}[%c8192_i32]
  // CHECK: %arg0, %{{.*}}, box[%c64_i32
  // CHECK: llvm.getelementptr %{{.*}}[%c16384_i32]
  // CHECK: %arg0, %{{.*}}, box[%c128_i32
  // CHECK-NOT: %arg0, %{{.*}}, box
  // CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c24576_i32
  // CHECK: arith.constant 4611686293305360384 : i64
  // CHECK-COUNT-12: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
  // CHECK-NOT: nvvm.wgmma.mma_async
  // CHECK: arith.constant 4611686293338849280 : i64
  // CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16
  // CHECK-NOT: wgmma.mma_async
  func.func @d192_sm90a(%q: memref<?x?x?x192xbf16>, %k: memref<?x?x?x192xbf16>,
                        %v: memref<?x?x?x192xbf16>, %o: memref<?x?x?x192xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.072 : f32}
      : memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>
    return
  }
}
