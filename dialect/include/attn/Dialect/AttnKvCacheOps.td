//===- AttnKvCacheOps.td - decoding with a KV cache --------*- tablegen -*-===//
//
// Attention over a KV cache (flash_attn_with_kvcache's problem): per-sequence
// key counts, optionally paged K/V, GQA heads packed into one tile, and the
// key range split over CTAs (flash-decoding) with a second kernel that merges
// the partial results:
//   * problem level: attn.attention_kvcache, attn.combine_splits;
//   * tile level: scalars the kernel reads at run time (attn.load_index,
//     attn.problem_size) and the combine program's global loads and
//     elementwise merges (attn.load, attn.load_rows, attn.elementwise).
//
// Included from AttnOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_ATTNKVCACHEOPS_TD
#define ATTN_DIALECT_ATTNKVCACHEOPS_TD

//===----------------------------------------------------------------------===//
// Problem level
//===----------------------------------------------------------------------===//

def Attn_AttentionKvCacheOp : Attn_Op<"attention_kvcache",
    [AttrSizedOperandSegments]> {
  let summary = "Attention of new queries over a KV cache (decoding)";
  let description = [{
    `O = softmax(scale * Q K^T + mask) V` where sequence `b` attends to the
    first `cache_seqlens[b]` keys of its cache, as flash_attn's
    `flash_attn_with_kvcache` (without appending new keys). Q and O are
    [B, Nq, H, D]; `cache_seqlens` is [B] i32. V and O may have a head dim
    of their own, Dv (DeepSeek's 192/128), as `attn.attention`'s.

    * Contiguous cache: `k_cache` and `v_cache` are [B, Nk, Hkv, D], Nk the
      capacity of a sequence.
    * Paged cache (`block_table %bt`): `k_cache` and `v_cache` are
      [num_blocks, page_size, Hkv, D] with a static `page_size` (a multiple
      of 16), `block_table` [B, max_blocks] i32: key `n` of sequence `b` is
      row `n % page_size` of page `block_table[b, n / page_size]`.

    `cache_seqlens[b]` is clamped to [0, capacity] in the kernel (capacity:
    Nk, or `max_blocks * page_size`), so a bad value never reads outside the
    cache; the runtime can check the values (attnrt_check_kvcache_values).
    Rows past `cache_seqlens[b]` may hold anything, NaN included: they are
    masked and their values zeroed before `P V`. A sequence with no key gets
    O = 0 and LSE = -inf (flash_attn reports +inf there).

    With `causal` the mask is bottom-right aligned to each sequence's own
    key count, as flash_attn's: query `i` sees keys
    `j <= i + cache_seqlens[b] - Nq`. `window_left = L` / `window_right = R`
    make it a sliding window around that same diagonal `d`, as flash_attn's
    `window_size`: query `i` sees keys `d - L <= j <= d + R` (a side left
    out is unbounded; with `causal`, R is 0). The program visits only the
    key blocks its rows see. `softcap` and `scale` are those of
    `attn.attention`; `lse` is [B, H, Nq] f32.

    FP8 (e4m3) q and caches, as FlashAttention-3's FP8 decoding, come with
    `descale(%q_descale, %k_descale, %v_descale)`, three f32 [B, Hkv]
    (strides 0 for one per tensor), and a bf16 O: as `attn.attention`'s
    FP8, `softmax(scale * (q_descale q)(k_descale k)^T)(v_descale v)`. The
    value cache is row-major like the key cache, and the kernel transposes
    each V tile in shared memory (attn-transpose-v). FP8 takes no value
    head dim of its own (the problem's checks refuse it).

    `head_pack = G` packs G query heads that share a key/value head into
    one tile's rows (row `r`: head `r / (block_m / G)`, position
    `r % (block_m / G)`), so with Nq = 1 a tile is not all padding and each
    key/value block is read once for the G heads; G must divide H / Hkv.

    `partials %o_partial, %lse_partial` makes the kernel split-KV
    (flash-decoding): CTA `s` of `num_splits` (a size the runtime passes)
    takes an even share of the key blocks and, when `num_splits > 1`,
    writes its normalised partial output to `o_partial` [S * B, Nq, H, D]
    f32 and its log-sum-exp to `lse_partial` [S * B, H, Nq] f32 (row
    `s * B + b`); `attn.combine_splits` then merges them. With
    `num_splits = 1` it writes O and LSE itself.

    The verifier checks what `attn.attention` checks of Q, O, scale and
    softcap, the cache's element type and head dimension, the ranks and
    element types of `cache_seqlens` (i32 [B]), `block_table` (i32
    [B, max_blocks]), `lse` and the partials (f32, the partial output's head
    dimension that of Q), a static page size that is a positive multiple of
    16 for a paged cache, and `head_pack` dividing the query heads per
    key/value head when both are static.

    ```mlir
    attn.attention_kvcache %q, %kc, %vc, %o, %seqlens lse %lse
        partials %op, %lp {causal, head_pack = 4 : i64, scale = 0.0883883 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>,
        memref<?x?x?x128xbf16>, memref<?xi32>, memref<?x?x?xf32>,
        memref<?x?x?x128xf32>, memref<?x?x?xf32>
    attn.attention_kvcache %q, %kc, %vc, %o, %seqlens block_table %bt
        {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x64x?x64xf16>, memref<?x64x?x64xf16>,
        memref<?x?x?x64xf16>, memref<?xi32>, memref<?x?xi32>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$q,
                       Arg<AnyMemRef, "", [MemRead]>:$k_cache,
                       Arg<AnyMemRef, "", [MemRead]>:$v_cache,
                       Arg<AnyMemRef, "", [MemWrite]>:$o,
                       Arg<AnyMemRef, "", [MemRead]>:$cache_seqlens,
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$block_table,
                       Arg<Optional<AnyMemRef>, "", [MemWrite]>:$lse,
                       Arg<Optional<AnyMemRef>, "", [MemWrite]>:$o_partial,
                       Arg<Optional<AnyMemRef>, "", [MemWrite]>:$lse_partial,
                       // ALiBi: f32 slopes [B, H] (batch stride 0: per head).
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$alibi_slopes,
                       // FP8 caches: f32 descales [B, Hkv] of q and the
                       // two caches.
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$q_descale,
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$k_descale,
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$v_descale,
                       UnitAttr:$causal, F32Attr:$scale,
                       OptionalAttr<F32Attr>:$softcap,
                       OptionalAttr<I64Attr>:$window_left,
                       OptionalAttr<I64Attr>:$window_right,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$head_pack);
  let assemblyFormat = [{
    $q `,` $k_cache `,` $v_cache `,` $o `,` $cache_seqlens
    (`block_table` $block_table^)? (`lse` $lse^)?
    (`partials` $o_partial^ `,` $lse_partial)?
    (`alibi` `(` $alibi_slopes^ `)`)?
    (`descale` `(` $q_descale^ `,` $k_descale `,` $v_descale `)`)?
    attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getHeadDim();
    /// V's and O's head dim (the head dim unless V has its own).
    int64_t getHeadDimV();
    Type getElementType();
    /// Query heads per tile (1: no packing).
    int64_t headPack() { return getHeadPack().value_or(1); }
    /// Rows per page of a paged cache; 0 for a contiguous one.
    int64_t getPageSize();
    /// Whether the kernel splits the keys over CTAs (has the partials).
    bool isSplit() { return getOPartial() != nullptr; }
    /// Whether the mask has a diagonal (causal or a window side), which is
    /// bottom-right aligned to each sequence's keys.
    bool hasDiagonal() {
      return getCausal() || getWindowLeftAttr() || getWindowRightAttr();
    }
    /// The problem this op states (attn-tile records it as #attn.problem).
    AttentionProblem problem();
  }];
}

def Attn_CombineSplitsOp : Attn_Op<"combine_splits"> {
  let summary = "Merge a split-KV kernel's partial outputs into O and LSE";
  let description = [{
    The second kernel of a split-KV call: for every query row (b, i, h),
    `lse = log(sum_s exp(lse_s))` and `O = sum_s exp(lse_s - lse) * O_s`
    over the `num_splits` partial results (a size the runtime passes; row
    `s * B + b` of `o_partial` [S * B, Nq, H, D] f32 and `lse_partial`
    [S * B, H, Nq] f32), written to O [B, Nq, H, D] (f16 or bf16) and the
    optional LSE [B, H, Nq] f32. A split that saw no key has LSE -inf and
    weighs nothing; a row no split saw gets O = 0 and LSE = -inf.
    `head_pack` is that of the split kernel: the combine program tiles the
    rows the same way.

    The verifier checks the ranks and element types and that the head
    dimensions agree.

    ```mlir
    attn.combine_splits %op, %lp, %o lse %lse {head_pack = 4 : i64}
      : memref<?x?x?x128xf32>, memref<?x?x?xf32>, memref<?x?x?x128xbf16>,
        memref<?x?x?xf32>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$o_partial,
                       Arg<AnyMemRef, "", [MemRead]>:$lse_partial,
                       Arg<AnyMemRef, "", [MemWrite]>:$o,
                       Arg<Optional<AnyMemRef>, "", [MemWrite]>:$lse,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$head_pack);
  let assemblyFormat = [{
    $o_partial `,` $lse_partial `,` $o (`lse` $lse^)? attr-dict `:`
    type($o_partial) `,` type($lse_partial) `,` type($o) (`,` type($lse)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Query heads per tile (1: no packing).
    int64_t headPack() { return getHeadPack().value_or(1); }
    /// The combine kernel's problem: O's dtype and head dim, the LSE, the
    /// packing, scale 1 (the splits applied theirs).
    AttentionProblem problem();
  }];
}

//===----------------------------------------------------------------------===//
// Tile level: run-time scalars
//===----------------------------------------------------------------------===//

def Attn_LoadIndexOp : Attn_Op<"load_index"> {
  let summary = "Read one element of a rank-1 i32 tensor as an index";
  let description = [{
    Element `index` of `src` (a kernel argument, e.g. `cache_seqlens`),
    sign-extended: the program clamps it where it must be in range. When the
    kernel was given no such tensor (a null pointer) the result is
    `fallback` instead, so an optional per-sequence length falls back to the
    cache's capacity. Every thread that needs the value loads it
    (`ld.global.nc`: the tensor is read-only during the kernel).

    ```mlir
    %n = attn.load_index %seqlens[%b] fallback %nk : memref<?xi32>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$src, Index:$index,
                       Index:$fallback);
  let results = (outs Index:$result);
  let assemblyFormat = [{
    $src `[` $index `]` `fallback` $fallback attr-dict `:` type($src)
  }];
  let hasVerifier = 1;
}

def Attn_ProblemSizeOp : Attn_Op<"problem_size", [Pure]> {
  let summary = "A problem size the runtime passes that no tensor shape holds";
  let description = [{
    The size parameter `size` of the kernel (e.g. `num_splits`, which the
    runtime chooses per call), as an index. Sizes that are a tensor's
    extent are read with `memref.dim` instead. The kernel's parameter list
    (docs/ABI.md) gets one `size` parameter per distinct size read.

    ```mlir
    %s = attn.problem_size num_splits
    ```
  }];
  let arguments = (ins Attn_SizeKindAttrParam:$size);
  let results = (outs Index:$result);
  let assemblyFormat = "$size attr-dict";
}

//===----------------------------------------------------------------------===//
// Tile level: the combine program
//===----------------------------------------------------------------------===//

def Attn_LoadOp : Attn_Op<"load"> {
  let summary = "Load rows of an f32 [B, N, H, D] tensor into an accumulator tile";
  let description = [{
    Rows `[row, row + rows)` of head `head` of batch `batch` (with
    `head_pack = G`: tile row `r` is head `head + r / P`, row `row + r % P`,
    `P = rows / G`), straight into the `acc` fragment layout: each thread
    loads its column pairs as 8-byte words. Rows at or past N read as 0.
    Indexed by a sequence (`!attn.seq`), the source is a packed [total, H,
    D] tensor and the rows are the sequence's (at or past its end read 0).

    ```mlir
    %o = attn.load %op[%bs, %row, %h] {head_pack = 4 : i64}
      : memref<?x?x?x128xf32> -> !attn.regs<64x128xf32, acc>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$src,
                       Attn_BatchIndex:$batch, Index:$row, Index:$head,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$head_pack);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $src `[` $batch `,` $row `,` $head `]` attr-dict `:`
    custom<DataTensorType>(type($src), type($batch)) `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Query heads the tile packs (1: a tile of one head's rows).
    int64_t headPack() { return getHeadPack().value_or(1); }
  }];
}

def Attn_LoadRowsOp : Attn_Op<"load_rows"> {
  let summary = "Load a per-row vector from a [B, H, N] f32 tensor";
  let description = [{
    `result[r] = src[batch, head, row + r]` (with `head_pack = G`:
    `src[batch, head + r / P, row + r % P]`), the counterpart of
    `attn.store_rows`. Rows at or past N read as -inf: a log-sum-exp row
    that does not exist holds no mass. Indexed by a sequence (`!attn.seq`),
    the source is a packed batch's [H, total] tensor: `src[head, start + r]`.

    ```mlir
    %l = attn.load_rows %lp[%bs, %h, %row] {head_pack = 4 : i64}
      : memref<?x?x?xf32> -> !attn.regs<64xf32, row>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$src,
                       Attn_BatchIndex:$batch, Index:$head, Index:$row,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$head_pack);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $src `[` $batch `,` $head `,` $row `]` attr-dict `:`
    custom<RowsTensorType>(type($src), type($batch)) `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Query heads the tile packs (1: a tile of one head's rows).
    int64_t headPack() { return getHeadPack().value_or(1); }
  }];
}

def Attn_ElementwiseOp : Attn_Op<"elementwise",
    [Pure, AllTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "Elementwise max or sum of two register tiles of one type";
  let description = [{
    `result = max(lhs, rhs)` or `lhs + rhs`, element by element (tiles or
    row vectors); each thread combines its own elements.

    ```mlir
    %m = attn.elementwise max %a, %b : !attn.regs<64xf32, row>
    ```
  }];
  let arguments = (ins Attn_ReduceKindAttrParam:$kind, Attn_AnyRegTile:$lhs,
                       Attn_AnyRegTile:$rhs);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = [{
    $kind $lhs `,` $rhs attr-dict `:` qualified(type($result))
  }];
}

#endif // ATTN_DIALECT_ATTNKVCACHEOPS_TD
