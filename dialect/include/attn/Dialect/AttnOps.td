//===- AttnOps.td - attn dialect operations ----------------*- tablegen -*-===//

#ifndef ATTN_DIALECT_ATTNOPS_TD
#define ATTN_DIALECT_ATTNOPS_TD

include "attn/Dialect/AttnBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

// Inside attn.warp_specialize, the role whose region may hold the op: the
// producer (one elected thread that fills pipes) or the consumers (which
// drain them and compute). attn-to-nvvm refuses an op in the other role.
def Attn_ProducerOnly : NativeOpTrait<"ProducerOnly"> {
  let cppNamespace = "::mlir::OpTrait::attn";
}
def Attn_ConsumersOnly : NativeOpTrait<"ConsumersOnly"> {
  let cppNamespace = "::mlir::OpTrait::attn";
}
// The producer warpgroup's transposing warps (FP8's V, attn-transpose-v).
def Attn_TransposerOnly : NativeOpTrait<"TransposerOnly"> {
  let cppNamespace = "::mlir::OpTrait::attn";
}

def Attn_AnyRegTile : Type<CPred<"::llvm::isa<::mlir::attn::RegTileType>($_self)">,
                           "register tile", "::mlir::attn::RegTileType">;
def Attn_AnySmemTile : Type<CPred<"::llvm::isa<::mlir::attn::SmemTileType>($_self)">,
                            "shared-memory tile", "::mlir::attn::SmemTileType">;
def Attn_Operand : AnyTypeOf<[Attn_AnyRegTile, Attn_AnySmemTile]>;

//===----------------------------------------------------------------------===//
// Problem level
//===----------------------------------------------------------------------===//

def Attn_AttentionOp : Attn_Op<"attention", [AttrSizedOperandSegments]> {
  let summary = "Forward scaled-dot-product attention on whole tensors";
  let description = [{
    `O = softmax(scale * Q K^T + mask) V` for every batch and head, with
    Q: [B, Nq, H, D], K and V: [B, Nk, Hkv, D], O: [B, Nq, H, D] (any strides,
    the last dimension contiguous), and optionally the natural-log
    log-sum-exp of each scaled score row in `lse`: [B, H, Nq] f32.
    With `causal`, query row `i` sees key columns `j <= i` (top-left aligned,
    as PyTorch's `is_causal`); with `causal_align =
    #attn.causal_align<bottom_right>` it sees `j <= i + Nk - Nq` instead
    (FlashAttention's alignment; rows with `i + Nk - Nq < 0` see no key and
    get O = 0, LSE = -inf). Without `causal_align` a causal mask is top-left
    in the IR, which states every alignment: the spec's default (CLI, C API,
    Python) is bottom-right, and the problem module it builds says so.
    A sliding window (local attention, FlashAttention's `window_size =
    (left, right)`) bounds what row `i` sees around its diagonal
    `i + off` (`off` = 0 top-left, `Nk - Nq` bottom-right, placed by the same
    `causal_align`): `j >= i + off - window_left` and
    `j <= i + off + window_right`; a side left out is unbounded. `causal` is
    the window's right side at 0, so a causal window has only
    `window_left` (or `window_right = 0`). Rows that see no key get O = 0 and
    LSE = -inf.
    With `softcap = c` the scores are soft-capped before the mask and the
    softmax, as in Gemma 2 and Grok: `softmax(c * tanh(scale * Q K^T / c) +
    mask) V`, and `lse` is the log-sum-exp of those capped scores.
    Query head `h` reads key/value head `h / (H / Hkv)` (grouped-query
    attention when Hkv < H).

    The verifier checks ranks, element types (f16 or bf16, all alike), that the
    head dimension is static, equal in Q and K and in V and O, and a multiple
    of 8 from 8 to 256 (any other is refused with a hint to pad it), that
    the static sizes agree (B everywhere, Nq of Q, O and LSE, Nk and Hkv of K
    and V, H of Q, O and LSE, H a multiple of Hkv), that the last dimension
    of Q, K, V and O has stride 1 and LSE the identity layout, and that
    `scale` is positive and finite with `scale` and `scale * log2(e)` normal
    finite f32 numbers (the kernels fold it into their exp2 constant), the
    same of `softcap` when present (it replaces the scale there), that each
    window side is between 0 and 2^31 - 1, that a causal window's right side
    is 0, and that `causal_align` comes only with `causal` or a window.

    Variable-length batches (`varlen(%cu_seqlens_q, %cu_seqlens_k)`, as
    `flash_attn_varlen_func`): the sequences are packed along the rows, Q and
    O are [total_q, H, D], K and V [total_k, Hkv, D], LSE (optional) is
    [H, total_q] f32, and the two int32 vectors [B + 1] hold where each
    sequence starts: sequence `b` is query rows `cu_seqlens_q[b] ..
    cu_seqlens_q[b+1] - 1` and key rows `cu_seqlens_k[b] ..
    cu_seqlens_k[b+1] - 1`. Each sequence is its own attention problem (its
    own Nq and Nk, which may be 0, and its own causal diagonal and sliding
    window); no work is spent on padding. The verifier checks those ranks,
    that both vectors are given, i32 and contiguous, and the same static
    sizes as above.

    A varlen batch may read its keys and values from a paged KV cache
    (`pages(%block_table)`, as `flash_attn_varlen_func` with `block_table`,
    which chunked-prefill servers use): K and V are then
    [num_blocks, page_size, Hkv, D] with a static page size (a multiple of
    16), `block_table` is i32 [B, max_blocks], and key `n` of sequence `b`
    is row `n % page_size` of page `block_table[b, n / page_size]`.
    Sequence `b` has `cu_seqlens_k[b+1] - cu_seqlens_k[b]` keys, clamped to
    the `max_blocks * page_size` its row of the table addresses.

    V and O may have a head dimension of their own (DeepSeek's 192/128): the
    problem's `head_dim_v`, which the kernel's name spells `_d192v128`.

    FP8 (FlashAttention-3's): Q, K and V hold `f8E4M3FN` and O bf16, with
    `descale(%q_descale, %k_descale, %v_descale)`, three f32 [B, Hkv]
    memrefs (strides of 0 for one per tensor; with block quantization q's
    is [B, H, ceil(Nq / 128)], k's and v's [B, Hkv, ceil(Nk / 128)], one
    per 128-row block, the block contiguous): the scores are
    `scale * (q_descale q) (k_descale k)^T` and V is read as `v_descale v`,
    with the descales of each query head's key/value head. The FP8 MMA
    reads both operands K-major, so V must be too: its keys contiguous
    (stride 1 on dim 1, `strided<[?, 1, ?, ?]>`), as a V stored transposed
    [B, Hkv, D, Nk] is.

    ```mlir
    attn.attention %q, %k, %v, %o lse %lse {causal, scale = 0.0883883 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>,
        memref<?x?x?x128xbf16>, memref<?x?x?xf32>
    attn.attention %q, %k, %v, %o
        {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>,
        memref<?x?x?x64xf16>
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32, softcap = 30.0 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>,
        memref<?x?x?x64xf16>
    attn.attention %q, %k, %v, %o {causal, causal_align =
        #attn.causal_align<bottom_right>, scale = 0.125 : f32, window_left = 256}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>,
        memref<?x?x?x64xf16>
    attn.attention %q, %k, %v, %o {causal, scale = 0.0721688 : f32}
      : memref<?x?x?x192xbf16>, memref<?x?x?x192xbf16>, memref<?x?x?x128xbf16>,
        memref<?x?x?x128xbf16>
    attn.attention %q, %k, %v, %o lse %lse
        varlen(%cu_q, %cu_k : memref<?xi32>, memref<?xi32>)
        {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32}
      : memref<?x?x128xbf16>, memref<?x?x128xbf16>, memref<?x?x128xbf16>,
        memref<?x?x128xbf16>, memref<?x?xf32>
    attn.attention %q, %kc, %vc, %o
        varlen(%cu_q, %cu_k : memref<?xi32>, memref<?xi32>)
        pages(%table : memref<?x?xi32>) {scale = 0.125 : f32}
      : memref<?x?x128xbf16>, memref<?x256x?x128xbf16>,
        memref<?x256x?x128xbf16>, memref<?x?x128xbf16>
    attn.attention %q, %k, %v, %o
        descale(%qd, %kd, %vd : memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>)
        {causal, scale = 0.0883883 : f32}
      : memref<?x?x?x128xf8E4M3FN>, memref<?x?x?x128xf8E4M3FN>,
        memref<?x?x?x128xf8E4M3FN, strided<[?, 1, ?, ?]>>, memref<?x?x?x128xbf16>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$q,
                       Arg<AnyMemRef, "", [MemRead]>:$k,
                       Arg<AnyMemRef, "", [MemRead]>:$v,
                       Arg<AnyMemRef, "", [MemWrite]>:$o,
                       Arg<Optional<AnyMemRef>, "", [MemWrite]>:$lse,
                       // Variable-length batches: both or neither.
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$cu_seqlens_q,
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$cu_seqlens_k,
                       // A varlen batch's paged K/V: i32 [B, max_blocks].
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$block_table,
                       // ALiBi: f32 slopes [B, H] (batch stride 0: per head).
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$alibi_slopes,
                       // FP8: f32 descales [B, Hkv] of q, k and v.
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$q_descale,
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$k_descale,
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$v_descale,
                       UnitAttr:$causal,
                       OptionalAttr<Attn_CausalAlignAttr>:$causal_align,
                       F32Attr:$scale, OptionalAttr<F32Attr>:$softcap,
                       OptionalAttr<I64Attr>:$window_left,
                       OptionalAttr<I64Attr>:$window_right);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $o (`lse` $lse^)?
    (`varlen` `(` $cu_seqlens_q^ `,` $cu_seqlens_k `:` type($cu_seqlens_q) `,`
     type($cu_seqlens_k) `)`)?
    (`pages` `(` $block_table^ `:` type($block_table) `)`)?
    (`alibi` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    (`descale` `(` $q_descale^ `,` $k_descale `,` $v_descale `:`
     type($q_descale) `,` type($k_descale) `,` type($v_descale) `)`)?
    attr-dict `:` type($q) `,` type($k) `,` type($v) `,` type($o)
    (`,` type($lse)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getHeadDim();
    /// V's and O's head dim (the last dim of v).
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
    /// Whether ALiBi's distances are measured from a bottom-right diagonal
    /// (with or without a mask).
    bool isAlibiBottomRight() {
      return getAlibiSlopes() &&
             getCausalAlign() == CausalAlign::bottom_right;
    }
    /// Keys a row sees left of its diagonal; none: unbounded.
    std::optional<int64_t> getLeftBound() {
      if (IntegerAttr left = getWindowLeftAttr())
        return left.getInt();
      return std::nullopt;
    }
    /// Keys a row sees right of its diagonal: 0 when causal; none: unbounded.
    std::optional<int64_t> getRightBound() {
      if (getCausal())
        return 0;
      if (IntegerAttr right = getWindowRightAttr())
        return right.getInt();
      return std::nullopt;
    }
    /// Whether the batch is packed (variable-length sequences).
    bool isVarlen() { return getCuSeqlensQ() != nullptr; }
    /// Whether K and V are a paged cache read through `block_table`.
    bool isPaged() { return getBlockTable() != nullptr; }
    /// Rows per page of a paged K/V (0: not paged).
    int64_t getPageSize() {
      return isPaged() ? cast<MemRefType>(getK().getType()).getDimSize(1) : 0;
    }
  }];
}

//===----------------------------------------------------------------------===//
// Tile program: grid, shared memory, asynchronous copies
//===----------------------------------------------------------------------===//

def Attn_ProgramIdOp : Attn_Op<"program_id", [Pure]> {
  let summary = "Index of this CTA along one grid dimension";
  let description = [{
    The tile program's grid is (query block, head, batch): dimension 0 is the
    query block, 1 the head, 2 the batch. Lowers to `%ctaid.x/y/z`.

    ```mlir
    %qb = attn.program_id 0
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<0>, IntMaxValue<2>]>:$dim);
  let results = (outs Index:$result);
  let assemblyFormat = "$dim attr-dict";
}

def Attn_NumProgramsOp : Attn_Op<"num_programs", [Pure]> {
  let summary = "Number of CTAs along one grid dimension";
  let description = [{
    The launch grid's extent along `dim` (`%nctaid.x/y/z`). A persistent
    kernel (`attn-persistent`) steps through its tiles by this many.

    ```mlir
    %n = attn.num_programs 0
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<0>, IntMaxValue<2>]>:$dim);
  let results = (outs Index:$result);
  let assemblyFormat = "$dim attr-dict";
}

def Attn_AllocSmemOp : Attn_Op<"alloc_smem"> {
  let summary = "A tile buffer in shared memory";
  let description = [{
    Reserves a tile of shared memory for the whole kernel, with the
    completion mbarrier each buffer needs on sm_90a. `attn-allocate-smem`
    places it: `offset` is the tile's byte offset in the kernel's dynamic
    shared memory (1024-byte aligned, for the 128-byte swizzle) and
    `barrier` its mbarrier's; the lowering reads them.

    ```mlir
    %k = attn.alloc_smem : !attn.smem<64x128xbf16, swizzle = 128>
    %q = attn.alloc_smem {barrier = 33792 : i64, offset = 0 : i64}
           : !attn.smem<128x128xbf16, swizzle = 128>
    ```
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$offset,
                       OptionalAttr<I64Attr>:$barrier);
  let results = (outs Res<Attn_AnySmemTile, "", [MemAlloc]>:$result);
  let builders = [
    OpBuilder<(ins "Type":$type), [{
      build($_builder, $_state, type, IntegerAttr(), IntegerAttr());
    }]>
  ];
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
}

def Attn_CopyAsyncOp : Attn_Op<"copy_async", [AttrSizedOperandSegments]> {
  let summary = "Start an asynchronous copy of a tile from global to shared memory";
  let description = [{
    Copies rows `[row, row + rows)` of head `head` of batch `batch` of a
    [B, N, H, D] tensor into `dst`. Rows at or past N read as zero, and so do
    the tile's columns past D: the tile has D rounded up to whole swizzle
    panels (the verifier checks it), which is how a head dimension that is
    not a multiple of 16 (the MMA's k step) or of 64 (a 128-byte panel) is
    padded inside the kernel without reading a byte past D. The copy is
    asynchronous: `attn.wait` on the same buffer makes it visible.

    From a packed [total, H, D] tensor (a variable-length batch) `batch` is
    the `!attn.seq` of one sequence and `row` a row of that sequence. Rows
    at or past the sequence's length read as zero on sm_80; on sm_90a
    (TMA, one descriptor over the whole tensor) they read the tensor's next
    rows, the next sequence's, and as zero only past the tensor's end:
    programs must mask such keys (as attn-tile's do) and never store such
    query rows.

    `fill` numbers the copies into `dst` (0 for the first, one more for each
    next), the number the matching `attn.wait` names: `attn-multibuffer`
    turns it into the pipe fill, so a schedule never has to infer which copy
    is which. It counts from the first copy whatever rows the copies read: a
    key loop that starts at block `lo` (a sliding window's) copies block `j`
    as fill `j - lo` (attn-causal-blocks renumbers them). `attn-tile` always
    sets it; without it `attn-multibuffer` takes the block index
    `row / rows`.

    With `head_pack = G` the tile packs G query heads (GQA decoding): tile
    row `r` is head `head + r / P`, position `row + r % P`, where
    `P = rows / G` must be a multiple of 8 (each head's rows start on a
    1024-byte swizzle atom). The verifier checks that G divides the rows.

    With `pages %block_table` the source is a paged KV cache
    `[num_blocks, page_size, H, D]` (page_size static, a multiple of 16) and
    `batch` indexes the rank-2 i32 block table: logical row `n` of sequence
    `batch` is row `n % page_size` of page `block_table[batch, n /
    page_size]`. The tile must lie in one page (`page_size % rows == 0`) or
    cover whole pages (`rows % page_size == 0`), and `row` must be a multiple
    of the smaller of the two.

    With `transpose` (FP8's V stored row-major) the tile is the source's
    transpose, D rows of keys, as a K-major source's copy lands: the FP8
    wgmma reads V K-major only. No copy instruction transposes bytes, so
    `attn-transpose-v` splits such a copy into a row-major staging pipe and
    an `attn.pipe_transpose` that the producer warpgroup runs; the lowering
    refuses one left over.

    sm_80: every thread issues `cp.async.cg.shared.global` 16-byte chunks into
    the swizzled layout (zero-filled, reading nothing, past N or D), then
    `cp.async.commit_group`.
    sm_90a: one elected thread arms the buffer's mbarrier with
    `mbarrier.arrive.expect_tx` and issues `cp.async.bulk.tensor.4d` per
    swizzle panel (TMA, a box of one panel with the tile's swizzle; out of
    bounds elements read as zero); a packed tile issues one per head and
    panel (a box of P rows), a paged tile one per page and panel, the page
    index read from the block table as the outermost coordinate
    (block-table entries past `max_blocks` are clamped to the last column;
    a page index outside the cache reads zeros, as TMA does out of bounds).
    sm_80: each chunk's row is looked up in the block table (a page index
    outside `[0, num_blocks)` reads zeros).

    ```mlir
    attn.copy_async %K[%b, %row, %h] -> %k_smem fill %j
      : memref<?x?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
    attn.copy_async %Kp[%seq, %row, %h] -> %k_smem fill %j
      : memref<?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
    attn.copy_async %Q[%b, %row, %h0] -> %q_smem fill %c0 {head_pack = 4 : i64}
      : memref<?x?x?x128xbf16>, !attn.smem<64x128xbf16, swizzle = 128>
    attn.copy_async %Kc[%b, %row, %kh] -> %k_smem fill %f pages %bt
      : memref<?x64x?x128xbf16>, !attn.smem<128x128xbf16, swizzle = 128>,
        memref<?x?xi32>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$src,
                       Attn_BatchIndex:$batch, Index:$row, Index:$head,
                       Arg<Attn_AnySmemTile, "", [MemWrite]>:$dst,
                       Optional<Index>:$fill,
                       // KV cache and GQA packing (attn.attention_kvcache).
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$pages,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$head_pack,
                       UnitAttr:$transpose);
  let assemblyFormat = [{
    $src `[` $batch `,` $row `,` $head `]` `->` $dst (`fill` $fill^)?
    (`pages` $pages^)? attr-dict `:`
    custom<DataTensorType>(type($src), type($batch)) `,` qualified(type($dst))
    (`,` type($pages)^)?
  }];
  let builders = [
    // The form of the copies before KV caches: no pages, no packing.
    OpBuilder<(ins "Value":$src, "Value":$batch, "Value":$row, "Value":$head,
                   "Value":$dst, "Value":$fill), [{
      build($_builder, $_state, src, batch, row, head, dst, fill, Value(),
            IntegerAttr(), UnitAttr());
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Query heads the tile packs (1: a tile of one head's rows).
    int64_t headPack() { return getHeadPack().value_or(1); }
  }];
}

def Attn_WaitOp : Attn_Op<"wait"> {
  let summary = "Wait until the copy into a buffer has landed";
  let description = [{
    Blocks until the most recent `attn.copy_async` into `buffer` is complete
    and visible to every thread of the CTA; `fill` is that copy's `fill`
    (the copies into this buffer so far, 0 for the first), which gives the
    mbarrier phase on sm_90a.
    Also a CTA-wide barrier: after it, every thread has finished with the
    buffers' previous contents, so they may be overwritten.

    sm_80: `cp.async.wait_group 0` then `bar.sync 0`.
    sm_90a: `mbarrier.try_wait.parity` on `fill % 2` then `bar.sync 0`.

    With `zero_from %n` the rows at or past `%n` of the landed tile read as
    zero afterwards (when `%n` is below the tile's rows): a KV cache's rows
    past a sequence's length hold whatever the cache held, and a value row
    that is NaN would poison `P V` even where P is 0. sm_80: each thread
    zeroes the chunks it copied, before the barrier; sm_90a: every thread
    zeroes its share, then `fence.proxy.async` so wgmma sees the zeros,
    before the barrier.

    ```mlir
    attn.wait %k_smem, %j : !attn.smem<64x128xbf16, swizzle = 128>
    attn.wait %v_smem, %j zero_from %rows : !attn.smem<64x128xbf16, swizzle = 128>
    ```
  }];
  let arguments = (ins Arg<Attn_AnySmemTile, "", [MemRead, MemWrite]>:$buffer,
                       Index:$fill, Optional<Index>:$zero_from);
  let assemblyFormat = [{
    $buffer `,` $fill (`zero_from` $zero_from^)? attr-dict `:`
    qualified(type($buffer))
  }];
  let builders = [
    OpBuilder<(ins "Value":$buffer, "Value":$fill), [{
      build($_builder, $_state, buffer, fill, Value());
    }]>
  ];
}

//===----------------------------------------------------------------------===//
// Tile program: compute on register tiles
//===----------------------------------------------------------------------===//

def Attn_SplatOp : Attn_Op<"splat", [Pure]> {
  let summary = "A register tile with every element equal to a constant";
  let description = [{
    ```mlir
    %m0 = attn.splat 0xFF800000 : f32 -> !attn.regs<128xf32, row>
    ```
  }];
  let arguments = (ins F32Attr:$value);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = "$value attr-dict `->` qualified(type($result))";
}

def Attn_MmaOp : Attn_Op<"mma", [Attn_ConsumersOnly]> {
  let summary = "Matrix multiply-accumulate on tensor cores";
  let description = [{
    `result = a * b (+ acc)`, with `b` transposed when `transpose_b` is set
    (`a * b^T`, as for `Q K^T` where K is stored row-major [N, D]).
    `a` is a shared-memory tile or an `operand_a` register tile [M, K]; `b` is a
    shared-memory tile ([N, K] when transposed, else [K, N'] with N <= N': the
    product reads the first N columns of a tile padded to whole swizzle
    panels); `acc` and the result are f32 `acc` register tiles [M, N]. Without
    `acc` the product starts from zero. K is a multiple of 16 (the k step);
    shared-memory operands are swizzled.

    sm_80: per warp `ldmatrix` (`.trans` for a non-transposed b; `.x2` for a
    last odd 8-column block) and `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}`.
    sm_90a: per warpgroup `wgmma.mma_async.sync.aligned.m64nNk16` with
    shared-memory descriptors of the tiles' swizzle (32, 64 or 128 bytes; a
    from registers when it is a register tile), fenced, committed and waited.
    There an N-major `b` is read in whole swizzle panels: N is a multiple of
    its panel width (the verifier checks it).

    Shared memory is read, not a value: the op declares a read of `a` and `b`,
    so CSE never merges two MMAs across a copy or wait that refills a buffer.

    With `async` (sm_90a) the wgmma group is committed but not waited: the
    result is in flight and may only be used by `attn.mma_wait`, which names
    how many later groups may stay pending. This is what lets the next GEMM
    run under the softmax (`attn-intra-wg-overlap`).

    ```mlir
    %s = attn.mma %q, %k {transpose_b} : !attn.smem<128x128xbf16, swizzle = 128>,
           !attn.smem<64x128xbf16, swizzle = 128> -> !attn.regs<128x64xf32, acc>
    ```
  }];
  let arguments = (ins Arg<Attn_Operand, "", [MemRead]>:$a,
                       Arg<Attn_AnySmemTile, "", [MemRead]>:$b,
                       Optional<Attn_AnyRegTile>:$acc, UnitAttr:$transpose_b,
                       UnitAttr:$async);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $acc^)? attr-dict `:` qualified(type($a)) `,` qualified(type($b))
    (`,` qualified(type($acc))^)? `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_MaskOp : Attn_Op<"mask", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Set masked-out scores of a tile to -inf";
  let description = [{
    Element (r, c) of the [block_m, block_n] score tile stands for query row
    `row + r` and key column `col + c`. It becomes -inf when `col + c >= kv_len`
    (past the end of the keys) or when it is outside the band the row sees
    around its diagonal `d = row + r + off`, `off` being 0 (top-left) or, with
    `causal_align = #attn.causal_align<bottom_right>`, `kv_len - q_len`
    (signed: the offset may be negative): with `causal` when `col + c > d`,
    with `window_right` when `col + c > d + window_right`, with `window_left`
    when `col + c < d - window_left`. A row whose band misses `[0, kv_len)`
    is masked entirely. With a bottom-right causal diagonal, every row that
    exists (`row + r < q_len`) has its bound below `kv_len`, so the key-length
    test is implied; rows at or past `q_len` are padding, never stored, and
    their scores are left unspecified past `kv_len`.
    `attn-causal-blocks` leaves this op only on the blocks that need it.

    With `head_pack = G` the tile packs G heads (see `attn.copy_async`):
    tile row `r` is query position `row + r % (rows / G)`, which is what the
    causal and window limits use.

    The verifier enforces what `attn.attention` does of `causal_align` and
    the window (each side 0 to 2^31 - 1, a causal window's right side 0),
    that `q_len` is given exactly for a bottom-right mask and that
    `head_pack` divides the tile's rows.

    Lowering (shared by both targets): per fragment row one limit,
    `min(kv_len, d + 1)` (top-left causal), `d + 1` (bottom-right causal) or
    `min(d + 1, kv_len - window_right) + window_right` (a window's right
    side, which cannot overflow), the diagonal's offset added once per tile;
    a window's left side adds a second per-row limit
    `max(d, window_left) - window_left`. Then a signed compare per limit and
    a select per element; with a window the limits are first taken relative
    to the thread's first column, so each element compares them with its
    column offset as an immediate (no column index per element, none live
    across rows: what keeps window kernels spill-free).

    ```mlir
    %sm = attn.mask %s, %row, %col, %nk {causal} : !attn.regs<128x64xf32, acc>
    %sb = attn.mask %s, %row, %col, %nk q_len %nq
            {causal, causal_align = #attn.causal_align<bottom_right>}
            : !attn.regs<128x64xf32, acc>
    %sw = attn.mask %s, %row, %col, %nk {window_left = 100, window_right = 50}
            : !attn.regs<128x64xf32, acc>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$input, Index:$row, Index:$col,
                       Index:$kv_len, Optional<Index>:$q_len, UnitAttr:$causal,
                       OptionalAttr<Attn_CausalAlignAttr>:$causal_align,
                       OptionalAttr<I64Attr>:$window_left,
                       OptionalAttr<I64Attr>:$window_right,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$head_pack);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $input `,` $row `,` $col `,` $kv_len (`q_len` $q_len^)? attr-dict `:`
    qualified(type($input))
  }];
  let builders = [
    OpBuilder<(ins "Type":$result, "Value":$input, "Value":$row, "Value":$col,
                   "Value":$kv_len, "Value":$q_len, "UnitAttr":$causal,
                   "CausalAlignAttr":$causal_align), [{
      build($_builder, $_state, result, input, row, col, kv_len, q_len, causal,
            causal_align, IntegerAttr(), IntegerAttr(), IntegerAttr());
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether the mask has a diagonal to place: causal or a window side.
    bool hasDiagonal() {
      return getCausal() || getWindowLeftAttr() || getWindowRightAttr();
    }
    /// Whether that diagonal is bottom-right aligned (shifted by Nk - Nq).
    bool isBottomRight() {
      return hasDiagonal() && getCausalAlign() == CausalAlign::bottom_right;
    }
    /// Keys a row sees left of its diagonal; none: unbounded.
    std::optional<int64_t> getLeftBound() {
      if (IntegerAttr left = getWindowLeftAttr())
        return left.getInt();
      return std::nullopt;
    }
    /// Keys a row sees right of its diagonal: 0 when causal; none: unbounded.
    std::optional<int64_t> getRightBound() {
      if (getCausal())
        return 0;
      if (IntegerAttr right = getWindowRightAttr())
        return right.getInt();
      return std::nullopt;
    }
    /// Query heads the tile packs (1: a tile of one head's rows).
    int64_t headPack() { return getHeadPack().value_or(1); }
  }];
}

def Attn_SoftcapOp : Attn_Op<"softcap", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "tanh(scale * x) per score: the bounded part of a soft cap";
  let description = [{
    Soft-capping replaces each score `s * softmax_scale` by
    `c * tanh(s * softmax_scale / c)`. `attn-tile` splits that product in two:
    this op computes `tanh(s * scale)` with `scale = softmax_scale / c` (one
    multiply and one `tanh.approx.f32` per element on both targets), and the
    cap `c` becomes the scale of the online softmax and the log-sum-exp, where
    it folds into the exp2 constant as the softmax scale did. It comes before
    `attn.mask`, so masked scores stay -inf.

    The verifier checks that the input is an `acc` tile and that `scale` is
    positive and finite.

    ```mlir
    %t = attn.softcap %s {scale = 0.0041666 : f32} : !attn.regs<128x64xf32, acc>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$input, F32Attr:$scale);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input))";
  let hasVerifier = 1;
}

def Attn_AlibiOp : Attn_Op<"alibi", [AllTypesMatch<["input", "result"]>]> {
  let summary = "ALiBi: a linear bias by the distance from the diagonal";
  let description = [{
    Adds `-(slope * scale) * |row + r + offset - (col + c)|` to score `(r, c)`
    of a tile whose first element is query `row`, key `col`: ALiBi
    (FlashAttention's `alibi_slopes`), with `slope = slopes[batch, head]`
    (f32 [B, H]; a batch stride of 0 gives one slope per head) and `offset`
    the diagonal's (`Nk - Nq` bottom-right, 0 top-left, as `attn.mask`).
    `scale` is the inverse of the factor the online softmax later multiplies
    the scores by (the softmax scale, or the soft cap's `c`), so that the
    softmax sees `scale * s + slope * bias`. It comes after `attn.softcap`
    and before `attn.mask`, on every key block (masked or not): unlike the
    mask, `attn-causal-blocks` never drops it.

    With `head_pack = G` the tile packs G query heads (`attn.copy_async`):
    row `r` is position `r % (rows / G)` of head `head + r / (rows / G)`,
    which gives both its slope and its distance.

    The lowering reads the slope once per head (an invariant load) and
    spends two float operations per score.

    ```mlir
    %b = attn.alibi %s, %slopes[%batch, %head], %row, %col, %off
        {scale = 11.3137 : f32} : memref<?x?xf32>, !attn.regs<128x64xf32, acc>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$input,
                       Arg<AnyMemRef, "", [MemRead]>:$slopes, Index:$batch,
                       Index:$head, Index:$row, Index:$col, Index:$offset,
                       F32Attr:$scale,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$head_pack);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $input `,` $slopes `[` $batch `,` $head `]` `,` $row `,` $col `,` $offset
    attr-dict `:` type($slopes) `,` qualified(type($input))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Query heads per tile (1: no packing).
    int64_t headPack() { return getHeadPack().value_or(1); }
  }];
}

def Attn_DescaleOp : Attn_Op<"descale", [Attn_ConsumersOnly,
    AttrSizedOperandSegments]> {
  let summary = "The product of per-(batch, head) f32 factors, for every row";
  let description = [{
    Reads `factors[i][batch, head]` of each rank-2 f32 memref (strides of 0
    repeat one factor) and returns their product in every entry of a row
    vector: FP8 attention's descales (q's times k's for the scores, v's for
    the output), which the softmax ops then take as their `factor`. One
    invariant load per factor and thread.

    Block quantization reads one rank-3 factor [B, H, blocks] (the block
    contiguous) of 128-row blocks: `rows %row` gives entry `r` the block
    of row `row + r` (q's per query block; rows past the last read the last
    block), `block %j` gives every entry block `j` (k's and v's per key
    block; a key block of zeros may carry the descale 0, which reads as 1).
    With `reciprocal` every entry is 1 / the product instead: the online
    softmax moves its accumulator from one v block's scale to the next
    one's.

    ```mlir
    %qk = attn.descale %qd, %kd [%b, %h] : memref<?x?xf32>, memref<?x?xf32>
      -> !attn.regs<128xf32, row>
    %q = attn.descale %qd [%b, %h] rows %row
      : memref<?x?x?xf32, strided<[?, ?, 1]>> -> !attn.regs<128xf32, row>
    %vi = attn.descale %vd [%b, %h] block %j {reciprocal}
      : memref<?x?x?xf32, strided<[?, ?, 1]>> -> !attn.regs<128xf32, row>
    ```
  }];
  let arguments = (ins Arg<Variadic<AnyMemRef>, "", [MemRead]>:$factors,
                       Index:$batch, Index:$head, Optional<Index>:$row,
                       Optional<Index>:$block, UnitAttr:$reciprocal);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $factors `[` $batch `,` $head `]` (`rows` $row^)? (`block` $block^)?
    attr-dict `:` type($factors) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_OnlineSoftmaxOp : Attn_Op<"online_softmax", [Pure,
    AttrSizedOperandSegments, AllTypesMatch<["scores", "probs"]>,
    AllTypesMatch<["max", "sum", "new_max", "new_sum", "alpha"]>]> {
  let summary = "One step of the online softmax over a block of scores";
  let description = [{
    Given the scores `s` of one key/value block and the running row max `m` and
    row sum `l` (over the blocks seen so far, in unscaled score units), returns
    the unnormalised probabilities `p = exp(scale * (s - m_new))`, the new max
    `m_new = max(m, rowmax(s))`, the correction factor
    `alpha = exp(scale * (m - m_new))` for what was accumulated before, and
    `l_new = alpha * l + rowsum(p)`. `attn-online-softmax` expands it.

    With `fixed_max` the scores are known to be bounded (soft-capped) and
    `m` is a constant offset rather than a running max: `m_new = m`,
    `alpha = 1`, `l_new = l + rowsum(p)`, so neither the row max nor the
    accumulator's rescale is computed. `attn-bounded-softmax` sets it.

    FP8 (FlashAttention-3's): `factor %f` (a row vector, the product of the
    q and k descales) multiplies the scale at run time, and
    `probs_log2_scale = k` returns `p` scaled by 2^k (and `l` with it), so
    that the e4m3 P that P V reads uses e4m3's range; the normalisation by
    `l` cancels it and attn.softmax_finalize takes it out of the LSE.

    `block_factor %k` (a row vector of positive values: FP8 block
    quantization's key-block descale) makes the step's scores `s * k`
    without a multiply per score: `m_new = max(m, k * rowmax(s))` is
    computed as `k * max(m / k, rowmax(s))`, whose inner max is the
    exponent's offset for `s` itself, and `k` joins the scale's factor
    (`inverse_block_factor %ki` is `1 / k`).

    ```mlir
    %p, %m1, %l1, %alpha = attn.online_softmax %s, %m, %l {scale = 0.125 : f32}
      : !attn.regs<128x64xf32, acc>, !attn.regs<128xf32, row>
    %p, %m1, %l1, %alpha = attn.online_softmax %s, %m, %l
        {probs_log2_scale = 8 : i64, scale = 0.125 : f32}
      : !attn.regs<128x64xf32, acc>, !attn.regs<128xf32, row>
        factor %f : !attn.regs<128xf32, row>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$scores, Attn_AnyRegTile:$max,
                       Attn_AnyRegTile:$sum, Optional<Attn_AnyRegTile>:$factor,
                       Optional<Attn_AnyRegTile>:$block_factor,
                       Optional<Attn_AnyRegTile>:$inverse_block_factor,
                       F32Attr:$scale, UnitAttr:$fixed_max,
                       OptionalAttr<I64Attr>:$probs_log2_scale);
  let results = (outs Attn_AnyRegTile:$probs, Attn_AnyRegTile:$new_max,
                      Attn_AnyRegTile:$new_sum, Attn_AnyRegTile:$alpha);
  let assemblyFormat = [{
    $scores `,` $max `,` $sum attr-dict `:` qualified(type($scores)) `,`
    qualified(type($max))
    (`factor` $factor^ `:` qualified(type($factor)))?
    (`block_factor` $block_factor^ `,` $inverse_block_factor `:`
     qualified(type($block_factor)) `,` qualified(type($inverse_block_factor)))?
  }];
  let hasVerifier = 1;
}

def Attn_SoftmaxFinalizeOp : Attn_Op<"softmax_finalize", [Pure,
    AttrSizedOperandSegments,
    AllTypesMatch<["acc", "out"]>, AllTypesMatch<["max", "sum", "lse"]>]> {
  let summary = "Normalise the accumulated output and form the log-sum-exp";
  let description = [{
    `out = acc / l` per row (0 for a row with `l == 0`) and
    `lse = scale * m + log(l)` (natural log; -inf when `l == 0`).
    With `lse_sum` the LSE takes that sum instead of `l`: a fixed-max
    softmax normalises by the sum of the rounded P (what P V multiplied)
    and forms the LSE from the sum of the f32 P (attn-bounded-softmax).
    `attn-online-softmax` expands it into `attn.normalize` and `attn.lse`.
    FP8: `factor` is the online softmax's run-time factor of the scale (the
    LSE's too), `out_factor` multiplies `out` (V's descale), and
    `probs_log2_scale = k` takes the online softmax's 2^k out of the LSE.

    ```mlir
    %out, %lse = attn.softmax_finalize %acc, %m, %l {scale = 0.125 : f32}
      : !attn.regs<128x128xf32, acc>, !attn.regs<128xf32, row>
    %out, %lse = attn.softmax_finalize %acc, %m, %l {scale = 30.0 : f32}
      : !attn.regs<128x128xf32, acc>, !attn.regs<128xf32, row>
        lse_sum %lx : !attn.regs<128xf32, row>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$acc, Attn_AnyRegTile:$max,
                       Attn_AnyRegTile:$sum, Optional<Attn_AnyRegTile>:$lse_sum,
                       Optional<Attn_AnyRegTile>:$factor,
                       Optional<Attn_AnyRegTile>:$out_factor,
                       F32Attr:$scale, OptionalAttr<I64Attr>:$probs_log2_scale);
  let results = (outs Attn_AnyRegTile:$out, Attn_AnyRegTile:$lse);
  let assemblyFormat = [{
    $acc `,` $max `,` $sum attr-dict `:` qualified(type($acc)) `,`
    qualified(type($max))
    (`lse_sum` $lse_sum^ `:` qualified(type($lse_sum)))?
    (`factor` $factor^ `:` qualified(type($factor)))?
    (`out_factor` $out_factor^ `:` qualified(type($out_factor)))?
  }];
  let hasVerifier = 1;
}

def Attn_RowReduceOp : Attn_Op<"row_reduce", [Pure, AllTypesMatch<["init", "result"]>]> {
  let summary = "Reduce each row of a tile, combined with an initial row vector";
  let description = [{
    `result[r] = init[r] (op) reduce_op(input[r, :])`, op being max or sum.
    Lowers to in-thread reductions over the row's fragments and two butterfly
    shuffles (`shfl.sync.bfly` 1 and 2) across the four lanes that share a row.

    With `rounded` (a sum) each element is first rounded to the kernel's
    16-bit element type: the sum of the P that the P V GEMM multiplies, so
    that normalising by it divides exactly what was accumulated (rounded to
    nearest even, as attn.convert's conversion does).

    ```mlir
    %m1 = attn.row_reduce max %s, %m : !attn.regs<128x64xf32, acc> -> !attn.regs<128xf32, row>
    %l1 = attn.row_reduce sum %p, %l {rounded} : !attn.regs<128x64xf32, acc> -> !attn.regs<128xf32, row>
    ```
  }];
  let arguments = (ins Attn_ReduceKindAttrParam:$kind, Attn_AnyRegTile:$input,
                       Attn_AnyRegTile:$init, UnitAttr:$rounded);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $kind $input `,` $init attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_Exp2DiffOp : Attn_Op<"exp2_diff", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "exp2((x - m[row]) * scale_log2e), elementwise";
  let description = [{
    `x` is a tile or a row vector, `m` a row vector broadcast along each row.
    `scale_log2e` folds the softmax scale and log2(e) so the exponential is one
    `ex2.approx.f32` per element. A row whose `m` is -inf uses 0 instead, so a
    fully masked row gives zeros, never NaN.

    `emulated_eighths = k` (1 to 8; absent: 0) computes k of every 8 of a
    thread's 8-column fragment blocks of an `acc` tile in software on the
    FMA pipe instead of the MUFU unit, which one `ex2.approx` per element
    saturates when the GEMMs are short (d64) or a soft cap adds a
    `tanh.approx` per element. Block `n` of a fragment row (columns
    8n..8n+7) is emulated when `floor((n % 8 + 1) k / 8) > floor((n % 8) k /
    8)`, which spreads the emulated blocks evenly between the MUFU ones
    (k = 4: every other block). The software form, per element `t`:

    ```
    t = max(t, -127)                 // -inf and below: exactly +0 below
    y = t + 0x1.8p23                 // round(t) in y's low mantissa bits
    j = y - 0x1.8p23; f = t - j      // f in [-0.5, 0.5], both exact
    p = 1 + f (c1 + f (c2 + f c3))   // 2^f, degree-3 minimax, p(0) = 1
    2^t = bits(p) + (bits(y) << 23)  // j added to p's exponent
    ```

    with c1..c3 from `scripts/exp2_poly.py` (max relative error 1.01e-4 on
    t >= -126, exactly +0 for t <= -127 and -inf; bf16 and f16 P round
    coarser). The verifier requires an `acc` input and 1 <= k <= 8.

    FP8 (attn.online_softmax's factor and probs_log2_scale): `factor %f`, a
    row vector, multiplies `scale_log2e` per row, and `offset` is added to
    every exponent: `exp2((x - m[row]) * scale_log2e * f[row] + offset)`.

    ```mlir
    %p = attn.exp2_diff %s, %m {scale_log2e = 0.18033688 : f32}
      : !attn.regs<128x64xf32, acc>, !attn.regs<128xf32, row>
    %q = attn.exp2_diff %s, %m {emulated_eighths = 4 : i64, scale_log2e = 0.18033688 : f32}
      : !attn.regs<128x64xf32, acc>, !attn.regs<128xf32, row>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$input, Attn_AnyRegTile:$max,
                       Optional<Attn_AnyRegTile>:$factor,
                       F32Attr:$scale_log2e,
                       OptionalAttr<I64Attr>:$emulated_eighths,
                       OptionalAttr<F32Attr>:$offset);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $input `,` $max attr-dict `:` qualified(type($input)) `,`
    qualified(type($max)) (`factor` $factor^ `:` qualified(type($factor)))?
  }];
  let hasVerifier = 1;
}

def Attn_RescaleOp : Attn_Op<"rescale", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Multiply each row of a tile by a per-row factor";
  let description = [{
    `result[r, :] = input[r, :] * factor[r]`; `input` may itself be a row vector.
    A factor that is `attn.splat 1.0` folds away.

    ```mlir
    %o1 = attn.rescale %o, %alpha : !attn.regs<128x128xf32, acc>, !attn.regs<128xf32, row>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$input, Attn_AnyRegTile:$factor);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $input `,` $factor attr-dict `:` qualified(type($input)) `,` qualified(type($factor))
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Attn_NormalizeOp : Attn_Op<"normalize", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Divide each row of the output accumulator by the row sum";
  let description = [{
    `result[r, :] = input[r, :] / sum[r]`, 0 when `sum[r] == 0`. One reciprocal
    per row, one multiply per element: the single rescale FlashAttention-2
    defers to the end of the loop.

    With `factor %f` (a row vector: FP8's V descale) the result is
    `input[r, :] * f[r] / sum[r]`, still one multiply per element.

    ```mlir
    %out = attn.normalize %o, %l : !attn.regs<128x128xf32, acc>, !attn.regs<128xf32, row>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$input, Attn_AnyRegTile:$sum,
                       Optional<Attn_AnyRegTile>:$factor);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $input `,` $sum attr-dict `:` qualified(type($input)) `,`
    qualified(type($sum)) (`factor` $factor^ `:` qualified(type($factor)))?
  }];
  let hasVerifier = 1;
}

def Attn_LogSumExpOp : Attn_Op<"lse", [Pure, AllTypesMatch<["max", "sum", "result"]>]> {
  let summary = "Natural-log log-sum-exp of each score row from its max and sum";
  let description = [{
    `result[r] = scale * max[r] + log(sum[r])` (-inf when `sum[r] == 0`), the
    value a backward pass or a split-KV merge needs. FP8: `factor %f` (a row
    vector) multiplies the scale, and `offset = k` subtracts `k * ln(2)`
    (a sum of P scaled by 2^k).

    ```mlir
    %lse = attn.lse %m, %l {scale = 0.125 : f32} : !attn.regs<128xf32, row>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$max, Attn_AnyRegTile:$sum,
                       Optional<Attn_AnyRegTile>:$factor, F32Attr:$scale,
                       OptionalAttr<F32Attr>:$offset);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $max `,` $sum attr-dict `:` qualified(type($result))
    (`factor` $factor^ `:` qualified(type($factor)))?
  }];
}

def Attn_ConvertOp : Attn_Op<"convert", [Pure]> {
  let summary = "Turn an f32 accumulator tile into an MMA A-operand tile";
  let description = [{
    Rounds to the result's element type and re-labels the layout: the
    accumulator fragments of two adjacent 8-column blocks are exactly the
    A-operand fragment of one 16-wide k step, so this is a per-thread
    conversion (cvt.rn.bf16x2.f32) with no data movement between threads.

    To f8E4M3FN (FP8's P, cvt.rn.satfinite.e4m3x2.f32) the layouts differ:
    a k32 step's A fragment gives lane `l` columns 4(l%4)..+3 and
    16+4(l%4)..+3 of its rows, where the accumulator gave it 2(l%4)..+1 of
    each 8-column block. Two shuffles within each quad of lanes per
    register move the bytes there. With `interleaved_keys` they stay where
    they are: the B operand's keys are stored in the accumulator's order
    instead (0, 1, 8, 9, 2, 3, 10, 11, ... in each 16, as attn-transpose-v's
    transposes write V), so each register packs the lane's own columns
    2(l%4)..+1 of two adjacent 8-column blocks.

    ```mlir
    %pa = attn.convert %p : !attn.regs<128x64xf32, acc> -> !attn.regs<128x64xbf16, operand_a>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$input, UnitAttr:$interleaved_keys);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tile program: epilogue
//===----------------------------------------------------------------------===//

def Attn_StoreOp : Attn_Op<"store", [Attn_ConsumersOnly]> {
  let summary = "Store an accumulator tile to rows of a [B, N, H, D] tensor";
  let description = [{
    Converts to the destination element type and writes rows
    `[row, row + rows)` of head `head` of batch `batch`; rows at or past the
    tensor's N are not written. Into a packed [total, H, D] tensor `batch`
    is a sequence (`!attn.seq`), `row` a row of it, and rows at or past the
    sequence's length are not written (they belong to the next sequence).
    The tile has the destination's head dimension D of columns, or up to D
    rounded up to 16 (an output computed on a padded V): only the first D
    are written. The destination holds f16, bf16 or f32 (a split-KV
    kernel's partial outputs, [B, N, H, D] only). With `head_pack = G` tile
    row `r` goes to head `head + r / P`, row `row + r % P` (`P = rows / G`).

    ```mlir
    attn.store %out -> %O[%b, %row, %h] : !attn.regs<128x128xf32, acc>, memref<?x?x?x128xbf16>
    attn.store %out -> %Op[%seq, %row, %h] : !attn.regs<128x128xf32, acc>, memref<?x?x128xbf16>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$value, Arg<AnyMemRef, "", [MemWrite]>:$dst,
                       Attn_BatchIndex:$batch, Index:$row, Index:$head,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$head_pack);
  let assemblyFormat = [{
    $value `->` $dst `[` $batch `,` $row `,` $head `]` attr-dict `:`
    qualified(type($value)) `,` custom<DataTensorType>(type($dst), type($batch))
  }];
  let builders = [
    OpBuilder<(ins "Value":$value, "Value":$dst, "Value":$batch, "Value":$row,
                   "Value":$head), [{
      build($_builder, $_state, value, dst, batch, row, head, IntegerAttr());
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Query heads the tile packs (1: a tile of one head's rows).
    int64_t headPack() { return getHeadPack().value_or(1); }
  }];
}

def Attn_StoreRowsOp : Attn_Op<"store_rows", [Attn_ConsumersOnly]> {
  let summary = "Store a per-row vector to a [B, H, N] f32 tensor";
  let description = [{
    Writes `value[r]` to `dst[batch, head, row + r]` for rows before N; used
    for the log-sum-exp. One lane per row writes. Into a packed [H, total]
    tensor (a variable-length batch, flash_attn's varlen LSE layout) `batch`
    is a sequence and `value[r]` goes to `dst[head, start + row + r]` for
    rows before the sequence's length. With `head_pack = G` vector row `r`
    goes to `dst[batch, head + r / P, row + r % P]` (`P = rows / G`).

    ```mlir
    attn.store_rows %lse -> %LSE[%b, %h, %row] : !attn.regs<128xf32, row>, memref<?x?x?xf32>
    attn.store_rows %lse -> %LSEp[%seq, %h, %row] : !attn.regs<128xf32, row>, memref<?x?xf32>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$value, Arg<AnyMemRef, "", [MemWrite]>:$dst,
                       Attn_BatchIndex:$batch, Index:$head, Index:$row,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$head_pack);
  let assemblyFormat = [{
    $value `->` $dst `[` $batch `,` $head `,` $row `]` attr-dict `:`
    qualified(type($value)) `,` custom<RowsTensorType>(type($dst), type($batch))
  }];
  let builders = [
    OpBuilder<(ins "Value":$value, "Value":$dst, "Value":$batch, "Value":$head,
                   "Value":$row), [{
      build($_builder, $_state, value, dst, batch, head, row, IntegerAttr());
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Query heads the tile packs (1: a tile of one head's rows).
    int64_t headPack() { return getHeadPack().value_or(1); }
  }];
}

include "attn/Dialect/AttnScheduleOps.td"
include "attn/Dialect/AttnVarlenOps.td"
include "attn/Dialect/AttnKvCacheOps.td"
include "attn/Dialect/AttnBackwardOps.td"

#endif // ATTN_DIALECT_ATTNOPS_TD
