// RUN: attngen-opt %s -split-input-file -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -attn-online-softmax -attn-allocate-smem -attn-to-nvvm | FileCheck %s

// sm_90a varlen: the signature has the cu_seqlens pointers after the
// tensors, n and h strides only and max_seqlen_q last; each sequence is two
// int32 loads (ld.global.nc in asm statements, which LLVM does not merge)
// clamped into [0, total]; TMA loads are 3-D, at row start + row of the
// packed tensor.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: llvm.func @fwd(
  // CHECK-SAME: %[[CUQ:arg8]]: !llvm.ptr<1> {llvm.noalias}, %[[CUK:arg9]]: !llvm.ptr<1> {llvm.noalias}, %arg10: i64
  // CHECK-SAME: %arg17: i64, %arg18: i32, %[[TQ:arg19]]: i32, %[[TK:arg20]]: i32, %arg21: i32, %arg22: i32, %arg23: i32)
  // CHECK-SAME: attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = max_seqlen_q, tile = 64>
  // CHECK-SAME: {kind = "pointer", name = "lse", tensor = "lse"}, {kind = "pointer", name = "cu_seqlens_q", tensor = "cu_seqlens_q"}, {kind = "pointer", name = "cu_seqlens_k", tensor = "cu_seqlens_k"}, {dim = "n", kind = "stride", name = "q_stride_n", tensor = "q"}, {dim = "h", kind = "stride", name = "q_stride_h", tensor = "q"}
  // CHECK-SAME: {kind = "size", name = "num_kv_heads", size = "num_kv_heads"}, {kind = "size", name = "max_seqlen_q", size = "max_seqlen_q"}]
  // CHECK-SAME: attn.problem = #attn.problem<{{.*}}varlen = true,
  // CHECK: %[[P0:.*]] = llvm.getelementptr %[[CUQ]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
  // CHECK-NEXT: %[[C0:.*]] = llvm.inline_asm has_side_effects "ld.global.nc.b32 $0, [$1];", "=r,l" %[[P0]] : (!llvm.ptr<1>) -> i32
  // CHECK-NEXT: %[[START:.*]] = arith.minui %[[C0]], %[[TOTAL:.*]] : i32
  // CHECK: %[[C1:.*]] = llvm.inline_asm has_side_effects "ld.global.nc.b32 $0, [$1];", "=r,l" %{{.*}} : (!llvm.ptr<1>) -> i32
  // CHECK-NEXT: %[[HI:.*]] = arith.maxui %[[C1]], %[[START]] : i32
  // CHECK-NEXT: %[[END:.*]] = arith.minui %[[HI]], %[[TOTAL]] : i32
  // CHECK-NEXT: arith.subi %[[END]], %[[START]] : i32
  // CHECK: llvm.getelementptr %[[CUK]]
  // CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg0, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}] {isCTAOnly = true} : !llvm.ptr<3>, !llvm.ptr
  // CHECK-NOT: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]
  func.func @fwd(%q: memref<?x?x128xbf16>, %k: memref<?x?x128xbf16>,
                 %v: memref<?x?x128xbf16>, %o: memref<?x?x128xbf16>,
                 %lse: memref<?x?xf32>, %cq: memref<?xi32>, %ck: memref<?xi32>) {
    attn.attention %q, %k, %v, %o lse %lse varlen(%cq, %ck : memref<?xi32>, memref<?xi32>)
        {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.0883883 : f32}
      : memref<?x?x128xbf16>, memref<?x?x128xbf16>, memref<?x?x128xbf16>,
        memref<?x?x128xbf16>, memref<?x?xf32>
    return
  }
}

// -----

// sm_80 varlen: no descriptors; cp.async chunks address row start + row
// through the n stride alone (no batch term) and stop at the end of the
// sequence; the LSE row of head h is h * total_q.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: llvm.func @fwd80(
  // CHECK-SAME: %arg0: !llvm.ptr<1> {llvm.noalias}
  // CHECK-SAME: %arg4: !llvm.ptr<1> {llvm.noalias}, %arg5: !llvm.ptr<1> {llvm.noalias}, %arg6: i64
  // CHECK-SAME: attn.uses_tma = false
  // CHECK: llvm.inline_asm has_side_effects "ld.global.nc.b32
  // CHECK: llvm.inline_asm has_side_effects "ld.global.nc.b32
  // CHECK: llvm.inline_asm has_side_effects "ld.global.nc.b32
  // CHECK: llvm.inline_asm has_side_effects "ld.global.nc.b32
  // CHECK: nvvm.cp.async.shared.global
  // The epilogue's own read of the query sequence.
  // CHECK: llvm.inline_asm has_side_effects "ld.global.nc.b32
  // CHECK: llvm.inline_asm has_side_effects "ld.global.nc.b32
  // CHECK-NOT: llvm.inline_asm has_side_effects "ld.global.nc.b32
  // CHECK: llvm.return
  func.func @fwd80(%q: memref<?x?x64xf16>, %k: memref<?x?x64xf16>,
                   %v: memref<?x?x64xf16>, %o: memref<?x?x64xf16>,
                   %cq: memref<?xi32>, %ck: memref<?xi32>) {
    attn.attention %q, %k, %v, %o varlen(%cq, %ck : memref<?xi32>, memref<?xi32>) {causal, scale = 0.125 : f32}
      : memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>
    return
  }
}
