// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -split-input-file | FileCheck %s

// A packed (varlen) batch on sm_80: each CTA reads its sequence's rows from
// cu_seqlens (queries and keys), skips the program when its query block
// starts past its sequence, runs at least one (masked) key block, addresses
// the packed tensors through the sequences and masks with their lengths.
// The grid covers max_seqlen_q; the epilogue reads its sequence again.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @varlen
  // CHECK-SAME: attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = max_seqlen_q, tile = 128>, #attn.grid_dim<size = num_heads, tile = 1>, #attn.grid_dim<size = batch, tile = 1>], ctas_per_sm = 0>
  // CHECK-SAME: varlen = true,
  // CHECK-SAME: attn.tensors = ["q", "k", "v", "o", "lse", "cu_seqlens_q", "cu_seqlens_k"]
  // CHECK-DAG: %[[QB:.*]] = attn.program_id 0
  // CHECK-DAG: %[[H:.*]] = attn.program_id 1
  // CHECK-DAG: %[[B:.*]] = attn.program_id 2
  // CHECK: %[[ROW:.*]] = arith.muli %[[QB]], %c128
  // CHECK: %[[TQ:.*]] = memref.dim %arg0, %c0{{.*}} : memref<?x?x128xbf16>
  // CHECK: %[[SQ:.*]], %[[LQ:.*]] = attn.sequence %arg5[%[[B]]] rows %[[TQ]] : memref<?xi32>
  // CHECK: %[[TK:.*]] = memref.dim %arg1, %c0{{.*}} : memref<?x?x128xbf16>
  // CHECK: %[[SK:.*]], %[[LK:.*]] = attn.sequence %arg6[%[[B]]] rows %[[TK]] : memref<?xi32>
  // CHECK: %[[QT:.*]] = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
  // CHECK: %[[LIVE:.*]] = arith.cmpi ult, %[[ROW]], %[[LQ]] : index
  // CHECK-NEXT: scf.if %[[LIVE]] {
  // CHECK-NEXT:   %[[NB:.*]] = arith.ceildivui %[[LK]], %c64 : index
  // CHECK-NEXT:   %[[NB1:.*]] = arith.maxui %[[NB]], %c1 : index
  // CHECK-NEXT:   attn.copy_async %arg0[%[[SQ]], %[[ROW]], %[[H]]] -> %[[QT]] fill %c0 : memref<?x?x128xbf16>
  // CHECK-NEXT:   attn.copy_async %arg1[%[[SK]], %c0, %{{.*}}] -> %{{.*}} fill %c0 : memref<?x?x128xbf16>
  // CHECK:        scf.for %{{.*}} = %c0 to %[[NB1]] step %c1
  // CHECK:          attn.copy_async %arg2[%[[SK]], %{{.*}}, %{{.*}}] -> %{{.*}} fill
  // CHECK:          attn.mask %{{.*}}, %[[ROW]], %{{.*}}, %[[LK]] : !attn.regs<128x64xf32, acc>
  // CHECK:          attn.copy_async %arg1[%[[SK]], %{{.*}}, %{{.*}}] -> %{{.*}} fill
  // CHECK:        attn.softmax_finalize
  // CHECK:        %[[SO:.*]], %{{.*}} = attn.sequence %arg5[%[[B]]] rows %{{.*}} : memref<?xi32>
  // CHECK-NEXT:   attn.store %{{.*}} -> %arg3[%[[SO]], %[[ROW]], %[[H]]] : !attn.regs<128x128xf32, acc>, memref<?x?x128xbf16>
  // CHECK-NEXT:   attn.store_rows %{{.*}} -> %arg4[%[[SO]], %[[H]], %[[ROW]]] : !attn.regs<128xf32, row>, memref<?x?xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: return
  func.func @varlen(%q: memref<?x?x128xbf16>, %k: memref<?x?x128xbf16>,
                    %v: memref<?x?x128xbf16>, %o: memref<?x?x128xbf16>,
                    %lse: memref<?x?xf32>, %cq: memref<?xi32>, %ck: memref<?xi32>) {
    attn.attention %q, %k, %v, %o lse %lse varlen(%cq, %ck : memref<?xi32>, memref<?xi32>)
        {scale = 0.0883883 : f32}
      : memref<?x?x128xbf16>, memref<?x?x128xbf16>, memref<?x?x128xbf16>,
        memref<?x?x128xbf16>, memref<?x?xf32>
    return
  }
}

// -----

// Bottom-right causal per sequence (FlashAttention's varlen diagonal): the
// mask takes the sequence's query length.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @varlen_causal
  // CHECK: %[[SQ:.*]], %[[LQ:.*]] = attn.sequence %arg4
  // CHECK: %[[SK:.*]], %[[LK:.*]] = attn.sequence %arg5
  // CHECK: attn.mask %{{.*}}, %{{.*}}, %{{.*}}, %[[LK]] q_len %[[LQ]] {causal, causal_align = #attn.causal_align<bottom_right>}
  func.func @varlen_causal(%q: memref<?x?x128xbf16>, %k: memref<?x?x128xbf16>,
                              %v: memref<?x?x128xbf16>, %o: memref<?x?x128xbf16>,
                              %cq: memref<?xi32>, %ck: memref<?xi32>) {
    attn.attention %q, %k, %v, %o varlen(%cq, %ck : memref<?xi32>, memref<?xi32>)
        {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.0883883 : f32}
      : memref<?x?x128xbf16>, memref<?x?x128xbf16>, memref<?x?x128xbf16>,
        memref<?x?x128xbf16>
    return
  }
}
