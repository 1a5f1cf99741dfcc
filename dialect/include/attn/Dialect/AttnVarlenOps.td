//===- AttnVarlenOps.td - variable-length (packed) batches -*- tablegen -*-===//
//
// A packed batch keeps its sequences one after the other along the rows of
// one tensor ([total, H, D]) and says where each starts in an int32 vector
// cu_seqlens [B + 1], as flash_attn_varlen_func takes them. The tile program
// of such a kernel reads its sequence's rows once (`attn.sequence`) and
// addresses the packed tensors through the `!attn.seq` it gets; everything
// else (masks, loop bounds, the causal diagonal) uses the sequence's length
// as a dense kernel uses N.
//
// Included from AttnOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_ATTNVARLENOPS_TD
#define ATTN_DIALECT_ATTNVARLENOPS_TD

def Attn_SequenceOp : Attn_Op<"sequence"> {
  let summary = "The rows of sequence `batch` of a packed batch";
  let description = [{
    Reads `cu_seqlens[batch]` and `cu_seqlens[batch + 1]` (int32) and returns
    that sequence's rows of a packed tensor of `total_rows` rows: `seq`, for
    the tile ops that address the tensor (`attn.copy_async`,
    `attn.pipe_load`, `attn.store`, `attn.store_rows`), and `length`, the
    sequence's length, for the program's bounds and masks (where a dense
    kernel uses `memref.dim`).

    The values are clamped into `[0, total_rows]` (start = min(cu[b], total),
    end = min(max(cu[b+1], start), total), read as unsigned), so a wrong
    `cu_seqlens` can make a kernel compute garbage but never read or write
    outside its tensors; the runtime checks the values (docs/ABI.md).

    The verifier checks that `cu_seqlens` is a contiguous rank-1 i32 memref.

    sm_80 and sm_90a: two `ld.global.nc` of 32 bits (L1-cached: a
    persistent CTA reads them at every tile), a min, a max and a
    subtraction.

    ```mlir
    %seq, %len = attn.sequence %cu_seqlens_q[%b] rows %total_q : memref<?xi32>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$cu_seqlens,
                       Index:$batch, Index:$total_rows);
  let results = (outs Attn_Seq:$seq, Index:$length);
  let assemblyFormat = [{
    $cu_seqlens `[` $batch `]` `rows` $total_rows attr-dict `:`
    type($cu_seqlens)
  }];
  let builders = [
    OpBuilder<(ins "Value":$cuSeqlens, "Value":$batch, "Value":$totalRows), [{
      build($_builder, $_state, SeqType::get($_builder.getContext()),
            $_builder.getIndexType(), cuSeqlens, batch, totalRows);
    }]>
  ];
  let hasVerifier = 1;
}

#endif // ATTN_DIALECT_ATTNVARLENOPS_TD
