//===- AttnBackwardOps.td - the backward pass's ops --------*- tablegen -*-===//
//
// The backward pass of attention (FlashAttention's algorithm 2): a problem
// op, and the tile ops its two kernels add to the forward's: the recompute
// of P from the log-sum-exp, dS = P (dP - D), D = rowsum(dO O), and the
// per-column vectors of the kernel that owns keys.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_BACKWARD_OPS
#define ATTN_BACKWARD_OPS

//===----------------------------------------------------------------------===//
// Problem level
//===----------------------------------------------------------------------===//

def Attn_AttentionBackwardOp : Attn_Op<"attention_backward",
    [AttrSizedOperandSegments]> {
  let summary = "One kernel of the attention backward pass, on whole tensors";
  let description = [{
    The gradients of `O = softmax(scale * Q K^T + mask) V` (the forward's
    problem: the same attributes, layouts and head groups as
    `attn.attention`) given `dout` = dL/dO, the forward's `o` and its
    natural-log log-sum-exp `lse` ([B, H, Nq] f32, +inf or -inf on rows that
    see no key). The caller passes O and the LSE, so a ring (context
    parallel) caller can pass the merged global ones.

    The backward runs as two kernels, chosen by `backward`:

    - `#attn.backward<dq>`, one CTA per query block (as the forward):
      `delta = rowsum(dout * o)` ([B, H, Nq] f32, written for the second
      kernel), then over the key blocks the row sees: S = Q K^T, P =
      exp(scale S - LSE), dP = dO V^T, dS = P (dP - delta), dQ += dS K;
      dQ = scale dQ written once. Each dQ row is summed in registers in a
      fixed order: the result is deterministic.
    - `#attn.backward<dkdv>`, one CTA per key block and key/value head, over
      the query blocks (of every query head of the group) that see it:
      S^T = K Q^T, P^T from the LSE per column, dP^T = V dO^T, dS^T =
      P^T (dP^T - delta), dV += P^T dO, dK += dS^T Q; written once, per
      key/value head (grouped-query attention is never expanded).

    The one-kernel backward (FlashAttention-2/3's; not deterministic) does
    the same math in three kernels that take a `dq_accum` tensor ([B, Nq,
    H, D] f32, packed [total_q, H, D]):

    - `#attn.backward<pre>`, one CTA per query block: delta, and the rows
      of `dq_accum` zeroed.
    - `#attn.backward<fused>`: `dkdv`'s program, which also writes dS^T to
      shared memory and adds dQ += dS K into `dq_accum` with atomics
      (`attn.accumulate_dq`), so S and dP are computed once (5 GEMMs where
      the pair above does 7). The order of the additions varies.
    - `#attn.backward<post>`, one CTA per query block: dQ = `dq_accum`,
      converted.

    With `softcap = c`, dS is also multiplied by `1 - tanh^2` of the capped
    score (taken before the mask).

    ```mlir
    attn.attention_backward %q, %k, %v, %o, %do, %lse, %delta, %dq, %dk, %dv
        {backward = #attn.backward<dq>, causal, scale = 0.125 : f32}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>,
        memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?xf32>,
        memref<?x?x?xf32>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>,
        memref<?x?x?x64xbf16>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$q,
                       Arg<AnyMemRef, "", [MemRead]>:$k,
                       Arg<AnyMemRef, "", [MemRead]>:$v,
                       Arg<AnyMemRef, "", [MemRead]>:$o,
                       Arg<AnyMemRef, "", [MemRead]>:$dout,
                       Arg<AnyMemRef, "", [MemRead]>:$lse,
                       Arg<AnyMemRef, "", [MemRead, MemWrite]>:$delta,
                       Arg<AnyMemRef, "", [MemWrite]>:$dq,
                       Arg<AnyMemRef, "", [MemWrite]>:$dk,
                       Arg<AnyMemRef, "", [MemWrite]>:$dv,
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$cu_seqlens_q,
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$cu_seqlens_k,
                       // ALiBi: f32 slopes [B, H], as attn.attention's.
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$alibi_slopes,
                       // The one-kernel backward's f32 dQ accumulator.
                       Arg<Optional<AnyMemRef>, "", [MemRead, MemWrite]>:$dq_accum,
                       Attn_BackwardAttr:$backward,
                       UnitAttr:$causal,
                       OptionalAttr<Attn_CausalAlignAttr>:$causal_align,
                       F32Attr:$scale, OptionalAttr<F32Attr>:$softcap,
                       OptionalAttr<I64Attr>:$window_left,
                       OptionalAttr<I64Attr>:$window_right);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $o `,` $dout `,` $lse `,` $delta `,` $dq `,` $dk `,`
    $dv
    (`varlen` `(` $cu_seqlens_q^ `,` $cu_seqlens_k `:` type($cu_seqlens_q) `,`
     type($cu_seqlens_k) `)`)?
    (`alibi` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    (`dq_accum` `(` $dq_accum^ `:` type($dq_accum) `)`)?
    attr-dict `:` type($q) `,` type($k) `,` type($v) `,` type($o) `,`
    type($dout) `,` type($lse) `,` type($delta) `,` type($dq) `,` type($dk)
    `,` type($dv)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getHeadDim();
    /// V's (and O's, dO's, dV's) head dim: the head dim unless the problem
    /// has a value head dim of its own.
    int64_t getHeadDimV();
    Type getElementType();
    /// The problem this op states (attn-tile records it as #attn.problem).
    AttentionProblem problem();
    /// Whether the mask has a diagonal to place: causal or a window side.
    bool hasDiagonal() {
      return getCausal() || getWindowLeftAttr() || getWindowRightAttr();
    }
    /// Whether that diagonal is bottom-right aligned (shifted by Nk - Nq).
    bool isBottomRight() {
      return hasDiagonal() && getCausalAlign() == CausalAlign::bottom_right;
    }
    /// Whether ALiBi's distances are measured from a bottom-right diagonal.
    bool isAlibiBottomRight() {
      return getAlibiSlopes() &&
             getCausalAlign() == CausalAlign::bottom_right;
    }
    /// Whether the batch is packed (variable-length sequences).
    bool isVarlen() { return getCuSeqlensQ() != nullptr; }
    /// Whether this is a kernel of the one-kernel backward (pre, fused,
    /// post), which takes the dQ accumulator.
    bool accumulatesDq() {
      return getBackward() == BackwardPart::pre ||
             getBackward() == BackwardPart::fused ||
             getBackward() == BackwardPart::post;
    }
  }];
}

//===----------------------------------------------------------------------===//
// Tile program
//===----------------------------------------------------------------------===//

def Attn_LoadColsOp : Attn_Op<"load_cols"> {
  let summary = "Load a per-column vector from a [B, H, N] f32 tensor";
  let description = [{
    `result[c] = src[batch, head, col + c]` (packed: `src[head, start + c]`),
    held by the threads that own column `c` of an `acc` tile. Columns at or
    past N read as 0. The backward's key-owning kernel reads the LSE and
    delta of its query block this way, since there its tiles' columns are
    queries.

    With `exp2_bias`, each value is loaded as the exponent bias
    `attn.recompute_probs {biased}` adds: `-src * log2(e)`, and `-inf` where
    `src` is infinite (a query row that saw no key: P = 0). A warp's lanes
    share their columns, so the lowering loads two per lane and transforms
    them before it shuffles them out, not once per fragment column.

    Into a `lanes` tile the op only loads (two values a lane per 64
    columns; no `exp2_bias`): `attn.spread_cols` does the rest where the
    values are needed. The backward loads a step ahead this way, so that no
    instruction waits for the load in the middle of a GEMM's issue.

    ```mlir
    %l = attn.load_cols %lse[%b, %h, %col] {exp2_bias} : memref<?x?x?xf32> -> !attn.regs<64xf32, col>
    %r = attn.load_cols %lse[%b, %h, %next] : memref<?x?x?xf32> -> !attn.regs<64xf32, lanes>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$src,
                       Attn_BatchIndex:$batch, Index:$head, Index:$col,
                       UnitAttr:$exp2_bias);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $src `[` $batch `,` $head `,` $col `]` attr-dict `:`
    custom<RowsTensorType>(type($src), type($batch)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_SpreadColsOp : Attn_Op<"spread_cols", [Pure]> {
  let summary = "Hand each thread its columns of a per-column vector";
  let description = [{
    The second half of `attn.load_cols`: from a `lanes` vector (lane `l`
    of each warp holds columns `64j + 2l` and `64j + 2l + 1`), a `col` one
    (each thread holds the columns of its `acc` fragments), by shuffles
    within each warp. `exp2_bias` transforms each loaded value first, as
    `attn.load_cols {exp2_bias}` does.

    ```mlir
    %l = attn.spread_cols %r {exp2_bias} : !attn.regs<64xf32, lanes> -> !attn.regs<64xf32, col>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$input, UnitAttr:$exp2_bias);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $input attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_RecomputeProbsOp : Attn_Op<"recompute_probs",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "P = exp(scale * s - lse), the backward's recomputation";
  let description = [{
    FlashAttention's recomputation: the backward never stores P, it forms it
    again from the scores and the forward's log-sum-exp, one FMA and one
    `ex2.approx.f32` per element: `exp2(s * scale_log2e - lse * log2(e))`.
    `lse` is a `row` vector (a tile whose rows are queries) or a `col` vector
    (a transposed tile, S^T, whose columns are queries). An infinite LSE (a
    row that saw no key) gives P = 0. With `biased`, `lse` holds the bias
    itself, `-lse * log2(e)` (`-inf` for an infinite LSE), as
    `attn.load_cols {exp2_bias}` loads it: one FMA and one `ex2` per element
    and nothing per column.

    ```mlir
    %p = attn.recompute_probs %s, %lse {scale_log2e = 0.18033688 : f32}
      : !attn.regs<128x64xf32, acc>, !attn.regs<128xf32, row>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$input, Attn_AnyRegTile:$lse,
                       F32Attr:$scale_log2e, UnitAttr:$biased);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $input `,` $lse attr-dict `:` qualified(type($input)) `,` qualified(type($lse))
  }];
  let hasVerifier = 1;
}

def Attn_SoftmaxGradOp : Attn_Op<"softmax_grad",
    [Pure, AllTypesMatch<["probs", "dprobs", "result"]>]> {
  let summary = "dS = scale * P * (dP - delta), the softmax's gradient";
  let description = [{
    The gradient of the scores through the softmax, with `delta` =
    rowsum(dO * O) per query broadcast along a `row` (queries are rows) or a
    `col` vector (queries are columns), times `scale`, the factor between
    the scores and the logits (the softmax scale). With a soft cap the
    logits are `c * tanh(...)`: `tanh` is then the capped tile (before the
    mask) and each element is also multiplied by `1 - tanh^2`.

    ```mlir
    %ds = attn.softmax_grad %p, %dp, %delta {scale = 0.125 : f32}
      : !attn.regs<128x64xf32, acc>, !attn.regs<128xf32, row>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$probs, Attn_AnyRegTile:$dprobs,
                       Attn_AnyRegTile:$delta, Optional<Attn_AnyRegTile>:$tanh,
                       F32Attr:$scale);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $probs `,` $dprobs `,` $delta (`tanh` $tanh^)? attr-dict `:`
    qualified(type($probs)) `,` qualified(type($delta))
    (`,` qualified(type($tanh))^)?
  }];
  let hasVerifier = 1;
}

def Attn_RowDotOp : Attn_Op<"row_dot", [Pure, AllTypesMatch<["lhs", "rhs"]>]> {
  let summary = "The dot product of each row of two tiles";
  let description = [{
    `result[r] = sum_c lhs[r, c] * rhs[r, c]`: the backward's delta =
    rowsum(dO * O). In-thread products, then two butterfly shuffles across
    the four lanes of a row, as `attn.row_reduce`.

    ```mlir
    %d = attn.row_dot %do, %o : !attn.regs<64x128xf32, acc> -> !attn.regs<64xf32, row>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$lhs, Attn_AnyRegTile:$rhs);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` qualified(type($lhs)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_DqMmaOp : Attn_Op<"dq_mma", [Attn_ConsumersOnly]> {
  let summary = "dQ^T = K^T dS^T of a key block, one block per warpgroup";
  let description = [{
    The one-kernel backward's dQ product. `k` is the key block [Bk, D] and
    `ds` the transposed score gradient dS^T [Bk, Bq] (keys are rows, the
    block's queries columns), both in shared memory, written by every
    consumer warpgroup. sm_90a: the W consumer warpgroups split dQ^T = K^T
    dS^T (K^T read transposed from the K tile, wgmma's transposed A; dS^T
    an MN-major B) into blocks of 64 head-dim rows and `Bq * (D / 64) / W`
    queries, one per warpgroup, each over all Bk keys; warpgroup w's block
    is rows `64w..64w+63` of the result (an `acc` tile of 64 W rows).
    sm_80: the CTA's warps multiply the whole dQ^T [D, Bq] with mma.sync
    (K^T and dS^T both through ldmatrix.trans), warp w on the head-dim rows
    `16w + 16Wt` as every sm_80 product; the result is an `acc` tile of D
    rows, and the barrier is a `bar.sync` of the CTA.

    A barrier of all consumer threads orders every warpgroup's writes of
    `ds` before the wgmma; the issuing thread of each warpgroup's TMA
    reductions first waits for the previous `attn.accumulate_dq`'s to have
    read the stage. With `async` the product stays in flight until an
    `attn.mma_wait` (attn-backward-overlap issues dK's and dV's GEMMs under
    it); without, the op waits for it.

    ```mlir
    %block = attn.dq_mma %k, %ds {async} : !attn.smem<128x128xbf16, swizzle = 128>,
      !attn.smem<128x64xbf16, swizzle = 128> -> !attn.regs<128x64xf32, acc>
    ```
  }];
  let arguments = (ins Arg<Attn_AnySmemTile, "", [MemRead]>:$k,
                       Arg<Attn_AnySmemTile, "", [MemRead]>:$ds,
                       UnitAttr:$async);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $k `,` $ds attr-dict `:` qualified(type($k)) `,` qualified(type($ds)) `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_AccumulateDqOp : Attn_Op<"accumulate_dq", [Attn_ConsumersOnly]> {
  let summary = "dQ += dS K of a key block, reduced into an f32 accumulator";
  let description = [{
    The one-kernel backward's dQ drain: adds `attn.dq_mma`'s blocks of dQ^T
    (`block`, read only after the product is waited for) to rows `col + q`
    of head `head` of `dst` ([B, Nq, H, D] f32), skipping queries at or
    past N.

    sm_80 (no `stage`): a barrier of the CTA's warps first says every
    mma.sync has read dS^T (the next step writes it again); then each thread
    adds its block values into `dst` with `red.global.add.f32`, one per
    value.

    sm_90a (with `stage`): a barrier of all consumer threads first says
    every wgmma has read dS^T. A warpgroup then writes its block into
    its rows of `stage` (f32, 128-byte swizzle: panels of 32 head-dim
    columns) and one of its threads adds it into `dst` with the TMA
    (`cp.reduce.async.bulk.tensor` add, one box per panel; rows past N are
    clipped). The reduction is not waited for in the op: the next
    `attn.dq_mma`'s issuing thread waits for it (`cp.async.bulk.wait_group
    .read 0`) before its barrier, so the TMA reads the stage while the
    step runs, and attn-warp-specialize puts an `attn.tma_store_wait` after
    the loop for the last one.

    ```mlir
    // sm_90a
    attn.accumulate_dq %block, %stage -> %dqa[%b, %col, %h]
      : !attn.regs<128x64xf32, acc>, memref<?x?x?x128xf32>,
        !attn.smem<128x64xf32, swizzle = 128>
    // sm_80
    attn.accumulate_dq %block -> %dqa[%b, %col, %h]
      : !attn.regs<128x32xf32, acc>, memref<?x?x?x128xf32>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$block,
                       Arg<Optional<Attn_AnySmemTile>, "",
                           [MemRead, MemWrite]>:$stage,
                       Arg<AnyMemRef, "", [MemRead, MemWrite]>:$dst,
                       Attn_BatchIndex:$batch, Index:$col, Index:$head);
  let assemblyFormat = [{
    $block (`,` $stage^)? `->` $dst `[` $batch `,` $col `,` $head `]`
    attr-dict `:` qualified(type($block)) `,`
    custom<DataTensorType>(type($dst), type($batch))
    (`,` qualified(type($stage))^)?
  }];
  let hasVerifier = 1;
}

def Attn_ConvertRowsOp : Attn_Op<"convert_rows", [Attn_ConsumersOnly]> {
  let summary = "Copy rows of an f32 tensor into a 16-bit one, whole rows per warp access";
  let description = [{
    Rows `[row, row + rows)` of head `head` of batch `batch` of `src` (f32
    [B, N, H, D]) go into the same rows of `dst` (f16 or bf16, same shape),
    rounded to nearest; rows at or past N (or, indexed by a sequence, the
    sequence's end) are not touched. The one-kernel backward's post kernel
    is this op: dQ from its f32 accumulator.

    It takes no register tile: each thread moves 16-byte runs of a row (four
    f32, then eight bytes out), consecutive threads consecutive runs, so a
    warp reads 512 contiguous bytes at a time. Through an `acc` tile
    (attn.load, attn.store) a warp access spans eight rows with 8-byte
    loads and 4-byte stores, and L2 rather than DRAM bounds the copy.

    ```mlir
    attn.convert_rows %dqa[%b, %row, %h] -> %dq {rows = 64 : i64}
      : memref<?x?x?x128xf32>, memref<?x?x?x128xbf16>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$src,
                       Attn_BatchIndex:$batch, Index:$row, Index:$head,
                       Arg<AnyMemRef, "", [MemWrite]>:$dst,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$rows);
  let assemblyFormat = [{
    $src `[` $batch `,` $row `,` $head `]` `->` $dst attr-dict `:`
    custom<DataTensorType>(type($src), type($batch)) `,` type($dst)
  }];
  let hasVerifier = 1;
}

def Attn_DotRowsOp : Attn_Op<"dot_rows", [Attn_ConsumersOnly]> {
  let summary = "Per-row dot products of two 16-bit tensors into a row vector, whole rows per warp access";
  let description = [{
    For the rows `[row, row + rows)` of head `head` of batch `batch` of
    `lhs` and `rhs` (f16 or bf16 [B, N, H, D]) that lie before N (or,
    indexed by a sequence, before its end), writes the f32 dot product of
    the row of `lhs` with the row of `rhs` into `dst[batch, head, row]`
    ([B, H, N] f32; a packed batch's [H, total]). The one-kernel backward's
    pre kernel computes delta = rowsum(dO * O) with it.

    It takes no register tile: D / 8 consecutive threads read a row in
    16-byte runs (eight elements), so a warp reads whole rows, and sum their
    products with butterfly shuffles; D / 8 must be a power of two up to 32
    (head dims 8 to 256 in powers of two).

    ```mlir
    attn.dot_rows %do, %o[%b, %row, %h] -> %delta {rows = 64 : i64}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$lhs,
                       Arg<AnyMemRef, "", [MemRead]>:$rhs,
                       Attn_BatchIndex:$batch, Index:$row, Index:$head,
                       Arg<AnyMemRef, "", [MemWrite]>:$dst,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$rows);
  let assemblyFormat = [{
    $lhs `,` $rhs `[` $batch `,` $row `,` $head `]` `->` $dst attr-dict `:`
    custom<DataTensorType>(type($lhs), type($batch)) `,` type($rhs) `,`
    type($dst)
  }];
  let hasVerifier = 1;
}

def Attn_ClearRowsOp : Attn_Op<"clear_rows", [Attn_ConsumersOnly]> {
  let summary = "Zero rows of an f32 tensor, whole rows per warp access";
  let description = [{
    Writes 0 into rows `[row, row + rows)` of head `head` of batch `batch`
    of `dst` (f32 [B, N, H, D]; indexed by a sequence, a packed
    [total, H, D]) that lie before N (or the sequence's end), in 16-byte
    stores, consecutive threads consecutive runs of a row. The one-kernel
    backward's pre kernel clears its rows of the dQ accumulator with it.

    ```mlir
    attn.clear_rows %dqa[%b, %row, %h] {rows = 64 : i64} : memref<?x?x?x128xf32>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemWrite]>:$dst,
                       Attn_BatchIndex:$batch, Index:$row, Index:$head,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$rows);
  let assemblyFormat = [{
    $dst `[` $batch `,` $row `,` $head `]` attr-dict `:`
    custom<DataTensorType>(type($dst), type($batch))
  }];
  let hasVerifier = 1;
}

#endif // ATTN_BACKWARD_OPS
