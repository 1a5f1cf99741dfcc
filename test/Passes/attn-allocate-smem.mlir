// RUN: attngen-opt %s --attn-tile-pipeline -attn-allocate-smem | FileCheck %s

// sm_90a d64 causal (192x128 tiles, two K/V stages, the TMA epilogue's O
// tile): the tiles in allocation order, each 1024-byte aligned (Q's pipe,
// two stages in the persistent loop (attn-prefetch-q), K's and V's two
// stages, O), then the mbarriers (a full and an empty array per pipe, one
// for O's buffer), and the kernel's dynamic shared memory with 1024 bytes
// to align its base.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @fwd
  // CHECK-SAME: attn.smem_bytes = 140392 : i64
  // CHECK: attn.create_pipe {empty_barriers = 139280 : i64, full_barriers = 139264 : i64, offset = 0 : i64, per_thread_release} : !attn.pipe<2, <192x64xbf16, swizzle = 128>>
  // CHECK: attn.create_pipe {empty_barriers = 139312 : i64, full_barriers = 139296 : i64, offset = 49152 : i64} : !attn.pipe<2, <128x64xbf16, swizzle = 128>>
  // CHECK: attn.create_pipe {empty_barriers = 139344 : i64, full_barriers = 139328 : i64, offset = 81920 : i64} : !attn.pipe<2, <128x64xbf16, swizzle = 128>>
  // CHECK: attn.alloc_smem {barrier = 139360 : i64, offset = 114688 : i64} : !attn.smem<192x64xbf16, swizzle = 128>
  func.func @fwd(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                 %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>,
                 %lse: memref<?x?x?xf32>) {
    attn.attention %q, %k, %v, %o lse %lse {causal, scale = 0.125 : f32}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>,
        memref<?x?x?x64xbf16>, memref<?x?x?xf32>
    return
  }
}
