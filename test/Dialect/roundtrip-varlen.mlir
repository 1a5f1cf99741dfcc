// RUN: attngen-opt %s | attngen-opt | FileCheck %s
// RUN: attngen-opt %s -mlir-print-op-generic | attngen-opt | FileCheck %s

// A packed (variable-length) batch: [total, H, D] tensors, LSE [H, total_q]
// and both cu_seqlens vectors.
// CHECK-LABEL: func.func @attention_varlen
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lse %{{.*}} varlen(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>) {causal, causal_align = #attn.causal_align<bottom_right>, scale = 1.250000e-01 : f32} : memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?xf32>
func.func @attention_varlen(%q: memref<?x?x64xf16>, %k: memref<?x?x64xf16>,
                            %v: memref<?x?x64xf16>, %o: memref<?x?x64xf16>,
                            %lse: memref<?x?xf32>, %cq: memref<?xi32>, %ck: memref<?xi32>) {
  attn.attention %q, %k, %v, %o lse %lse varlen(%cq, %ck : memref<?xi32>, memref<?xi32>)
      {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32}
    : memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>,
      memref<?x?xf32>
  return
}

// Without LSE, static sizes that agree.
// CHECK-LABEL: func.func @attention_varlen_static
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} varlen(%{{.*}}, %{{.*}} : memref<5xi32>, memref<5xi32>) {scale = 1.250000e-01 : f32} : memref<300x8x64xbf16>
func.func @attention_varlen_static(%q: memref<300x8x64xbf16>, %k: memref<500x2x64xbf16>,
                                   %v: memref<500x2x64xbf16>, %o: memref<300x8x64xbf16>,
                                   %cq: memref<5xi32>, %ck: memref<5xi32>) {
  attn.attention %q, %k, %v, %o varlen(%cq, %ck : memref<5xi32>, memref<5xi32>) {scale = 0.125 : f32}
    : memref<300x8x64xbf16>, memref<500x2x64xbf16>, memref<500x2x64xbf16>, memref<300x8x64xbf16>
  return
}

// The tile ops address a packed tensor by the !attn.seq of its sequence; the
// batch operand's type follows from the tensor's rank.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @tile_ops
  // CHECK: %[[SEQ:.*]], %[[LEN:.*]] = attn.sequence %{{.*}}[%{{.*}}] rows %{{.*}} : memref<?xi32>
  // CHECK: attn.copy_async %{{.*}}[%[[SEQ]], %{{.*}}, %{{.*}}] -> %{{.*}} fill %{{.*}} : memref<?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
  // CHECK: attn.pipe_load %{{.*}}[%[[SEQ]], %{{.*}}, %{{.*}}] -> %{{.*}}[%{{.*}}] : memref<?x?x128xbf16>, !attn.pipe<2, <64x128xbf16, swizzle = 128>>
  // CHECK: attn.store %{{.*}} -> %{{.*}}[%[[SEQ]], %{{.*}}, %{{.*}}] : !attn.regs<64x128xf32, acc>, memref<?x?x128xbf16>
  // CHECK: attn.store_rows %{{.*}} -> %{{.*}}[%[[SEQ]], %{{.*}}, %{{.*}}] : !attn.regs<64xf32, row>, memref<?x?xf32>
  // CHECK: attn.store_rows %{{.*}} -> %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : !attn.regs<64xf32, row>, memref<?x?x?xf32>
  func.func @tile_ops(%t: memref<?x?x128xbf16>, %lse: memref<?x?xf32>, %dense: memref<?x?x?xf32>,
                      %cu: memref<?xi32>, %b: index, %row: index, %h: index,
                      %acc: !attn.regs<64x128xf32, acc>, %rows: !attn.regs<64xf32, row>) {
    %total = memref.dim %t, %b : memref<?x?x128xbf16>
    %seq, %len = attn.sequence %cu[%b] rows %total : memref<?xi32>
    %tile = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    attn.copy_async %t[%seq, %row, %h] -> %tile fill %b
      : memref<?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
    %pipe = attn.create_pipe : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>>
    attn.pipe_load %t[%seq, %row, %h] -> %pipe[%b]
      : memref<?x?x128xbf16>, !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>>
    attn.store %acc -> %t[%seq, %len, %h] : !attn.regs<64x128xf32, acc>, memref<?x?x128xbf16>
    attn.store_rows %rows -> %lse[%seq, %h, %row] : !attn.regs<64xf32, row>, memref<?x?xf32>
    attn.store_rows %rows -> %dense[%b, %h, %row] : !attn.regs<64xf32, row>, memref<?x?x?xf32>
    return
  }
}

// A packed batch of queries over a paged K/V (flash_attn_varlen_func with a
// block_table): k and v [num_blocks, page_size, Hkv, D] and the table.
// CHECK-LABEL: func.func @attention_varlen_paged
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} varlen(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>) pages(%{{.*}} : memref<?x?xi32>) {causal, causal_align = #attn.causal_align<bottom_right>, scale = 1.250000e-01 : f32} : memref<?x?x64xbf16>, memref<?x64x?x64xbf16>, memref<?x64x?x64xbf16>, memref<?x?x64xbf16>
func.func @attention_varlen_paged(%q: memref<?x?x64xbf16>, %k: memref<?x64x?x64xbf16>,
                                  %v: memref<?x64x?x64xbf16>, %o: memref<?x?x64xbf16>,
                                  %cq: memref<?xi32>, %ck: memref<?xi32>,
                                  %table: memref<?x?xi32>) {
  attn.attention %q, %k, %v, %o varlen(%cq, %ck : memref<?xi32>, memref<?xi32>)
      pages(%table : memref<?x?xi32>)
      {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32}
    : memref<?x?x64xbf16>, memref<?x64x?x64xbf16>, memref<?x64x?x64xbf16>,
      memref<?x?x64xbf16>
  return
}
