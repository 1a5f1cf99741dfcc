//===- AttnScheduleOps.td - the schedule as IR -------------*- tablegen -*-===//
//
// Ops that make a kernel's schedule explicit, so each FlashAttention-3
// technique is a pass that rewrites them and the lowering only translates:
//   * pipes: multi-stage shared-memory rings with full/empty barriers on
//     sm_90a, cp.async groups and CTA barriers on sm_80 (attn-multibuffer);
//   * warp roles: a producer region and a consumer region with register
//     budgets (attn-warp-specialize);
//   * asynchronous MMAs and their waits (attn-intra-wg-overlap);
//   * named barriers between consumer warpgroups (attn-pingpong);
//   * the output through shared memory and a TMA store (attn-tma-store).
//
// Included from AttnOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_ATTNSCHEDULEOPS_TD
#define ATTN_DIALECT_ATTNSCHEDULEOPS_TD

def Attn_Pipe : Type<CPred<"::llvm::isa<::mlir::attn::PipeType>($_self)">,
                     "shared-memory pipe", "::mlir::attn::PipeType">;

//===----------------------------------------------------------------------===//
// Pipes
//===----------------------------------------------------------------------===//

def Attn_CreatePipeOp : Attn_Op<"create_pipe"> {
  let summary = "A multi-stage ring of shared-memory tiles";
  let description = [{
    Reserves `stages` tile buffers and, on sm_90a, a `full` and an `empty`
    mbarrier per stage (initialised once at kernel entry: `full` expects one
    arrival plus the TMA bytes, `empty` one arrival per consumer warp).
    On sm_80 the fills are cp.async groups: every thread copies and every
    thread reads, so completion is `cp.async.wait_group` plus `attn.barrier`
    and the barriers are never initialised.

    With `per_thread_release`, every consumer thread arrives on a stage's
    `empty` barrier (the barrier expects one arrival per consumer thread)
    rather than lane 0 of each consumer warp: `attn-multibuffer` sets it on
    a one-stage pipe (the Q tile of a persistent kernel, released once per
    tile), where a lane-0 branch around the arrival would make ptxas keep
    the consumers' loop nest in vector registers and move every wgmma
    descriptor to uniform ones before use.

    `fill_arrivals` and `release_arrivals` override the two counts where
    others than the TMA and the consumer warps fill or release a stage:
    `attn-transpose-v` sets `fill_arrivals` on the transposed V pipe (one
    arrival per transposing warp, no TMA bytes) and `release_arrivals` on
    its row-major staging pipe (the transposing warps release it).

    `attn-allocate-smem` places it: `offset` is its first stage's byte
    offset in the dynamic shared memory (the stages follow each other, each
    1024-byte aligned), `full_barriers` and `empty_barriers` the offsets of
    its arrays of mbarriers (one per stage).

    ```mlir
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    ```
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$offset,
                       OptionalAttr<I64Attr>:$full_barriers,
                       OptionalAttr<I64Attr>:$empty_barriers,
                       UnitAttr:$per_thread_release,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$fill_arrivals,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$release_arrivals);
  let results = (outs Res<Attn_Pipe, "", [MemAlloc]>:$result);
  let builders = [
    OpBuilder<(ins "Type":$type), [{
      build($_builder, $_state, type, IntegerAttr(), IntegerAttr(),
            IntegerAttr(), UnitAttr(), IntegerAttr(), IntegerAttr());
    }]>
  ];
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
}

def Attn_PipeAcquireOp : Attn_Op<"pipe_acquire", [Attn_ProducerOnly]> {
  let summary = "Producer: wait until the stage of fill `fill` is empty";
  let description = [{
    Blocks the producer until every consumer has released fill
    `fill - stages` of this stage (the first `stages` fills pass at once).
    sm_90a: `mbarrier.try_wait.parity` on the stage's `empty` barrier with
    parity `(fill / stages + 1) % 2`.
    sm_80: no instruction. Every thread is a consumer, so the stage is empty
    once an `attn.barrier` separates every thread's `attn.pipe_release` of
    fill `fill - stages` from this op; attn-multibuffer places the barriers
    and refuses a schedule where one is missing.

    ```mlir
    attn.pipe_acquire %kp[%j] : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    ```
  }];
  let arguments = (ins Arg<Attn_Pipe, "", [MemRead, MemWrite]>:$pipe,
                       Index:$fill);
  let assemblyFormat = "$pipe `[` $fill `]` attr-dict `:` qualified(type($pipe))";
}

def Attn_PipeLoadOp : Attn_Op<"pipe_load", [AttrSizedOperandSegments,
                                              Attn_ProducerOnly]> {
  let summary = "Producer: start the copy of one tile into the stage of fill `fill`";
  let description = [{
    Copies rows `[row, row + rows)` of head `head` of batch `batch` of a
    [B, N, H, D] tensor into stage `fill % stages` (rows past N read as zero)
    and commits the fill: consumers waiting on it wake when the bytes land.
    From a packed [total, H, D] tensor `batch` is a sequence (`!attn.seq`)
    and rows past its length read as `attn.copy_async` says.
    sm_90a: `mbarrier.arrive.expect_tx` of the tile's bytes on the stage's
    `full` barrier, then one `cp.async.bulk.tensor.4d` per 64-column panel.
    Issued by one thread.
    sm_80: every thread issues its `cp.async.cg.shared.global` 16-byte
    chunks into the swizzled stage, then `cp.async.commit_group`: one group
    per fill, in program order, which is what `attn.pipe_wait`'s `pending`
    counts.

    With `if %valid` (sm_80 only) the fill copies nothing when `%valid` is
    false but still commits its (empty) group, so the group count between a
    fill and its wait is the same on every path, the last blocks included.

    `pages` and `head_pack` read a paged KV cache and pack query heads into
    the tile exactly as `attn.copy_async`'s do.

    ```mlir
    attn.pipe_load %K[%b, %row, %h] -> %kp[%j]
      : memref<?x?x?x128xbf16>, !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    attn.pipe_load %K[%b, %row, %h] -> %kp[%j2] if %has_next
      : memref<?x?x?x128xbf16>, !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$src,
                       Attn_BatchIndex:$batch, Index:$row, Index:$head,
                       Arg<Attn_Pipe, "", [MemWrite]>:$pipe, Index:$fill,
                       Optional<I1>:$valid,
                       // As attn.copy_async's: a paged source, packed heads.
                       Arg<Optional<AnyMemRef>, "", [MemRead]>:$pages,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$head_pack,
                       // As attn.copy_async's: the stage is the source's
                       // transpose (attn-transpose-v splits such a fill).
                       UnitAttr:$transpose);
  let assemblyFormat = [{
    $src `[` $batch `,` $row `,` $head `]` `->` $pipe `[` $fill `]`
    (`if` $valid^)? (`pages` $pages^)? attr-dict `:`
    custom<DataTensorType>(type($src), type($batch)) `,` qualified(type($pipe))
    (`,` type($pages)^)?
  }];
  let builders = [
    OpBuilder<(ins "Value":$src, "Value":$batch, "Value":$row, "Value":$head,
                   "Value":$pipe, "Value":$fill, "Value":$valid), [{
      build($_builder, $_state, src, batch, row, head, pipe, fill, valid,
            Value(), IntegerAttr(), UnitAttr());
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Query heads the tile packs (1: a tile of one head's rows).
    int64_t headPack() { return getHeadPack().value_or(1); }
  }];
}

def Attn_PipeTransposeOp : Attn_Op<"pipe_transpose", [Attn_TransposerOnly]> {
  let summary = "Transposing warps: write fill `fill` of `src` transposed into `dst`";
  let description = [{
    FlashAttention-3's in-kernel V transpose for FP8 (the e4m3 wgmma reads
    both operands K-major, and V is stored with its head dim contiguous).
    Waits until fill `fill` of the row-major staging pipe `src` (keys x D
    bytes) has landed and stage `fill` of `dst` (D x keys) is free, writes
    the stage transposed, then releases `src`'s stage and completes `dst`'s
    fill: consumers wait on `dst` as on any pipe.

    sm_90a: warps 1-3 of the producer warpgroup run it (warp 0 issues the
    TMA). Each 16-key x 32-byte block is one `ldmatrix.x4` (even and odd key
    rows as 16-bit matrices), two `prmt` per register pair that interleave
    the two rows' bytes, and one `stmatrix.x4.trans` (16-bit pairs of keys
    down the head-dim rows); then `fence.proxy.async` (the wgmma reads
    through the async proxy) and one arrival per warp on each barrier.

    With `interleave_keys` each 16 keys are written in the order 0, 1, 8, 9,
    2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15 (the ldmatrix rows are chosen
    so): the order in which the FP8 accumulator holds P's columns, so that
    the P V product's A operand needs no shuffles (`attn.convert
    {interleaved_keys}`, FlashAttention-3's layout trick).

    With `zero_from %n` the keys at or past `%n` are written as zeros (the
    values a KV cache holds past a sequence's end may be NaN, and 0 x NaN
    would poison P V): the consumers' `zero_from` on the wait, moved here
    by attn-transpose-v, at no cost but a select per register.

    ```mlir
    attn.pipe_transpose %vs -> %vt[%j]
      : !attn.pipe<2, !attn.smem<128x128xf8E4M3FN, swizzle = 128>>,
        !attn.pipe<2, !attn.smem<128x128xf8E4M3FN, swizzle = 128>>
    ```
  }];
  let arguments = (ins Arg<Attn_Pipe, "", [MemRead]>:$src,
                       Arg<Attn_Pipe, "", [MemWrite]>:$dst, Index:$fill,
                       Optional<Index>:$zero_from,
                       UnitAttr:$interleave_keys);
  let assemblyFormat = [{
    $src `->` $dst `[` $fill `]` (`zero_from` $zero_from^)? attr-dict `:`
    qualified(type($src)) `,` qualified(type($dst))
  }];
  let hasVerifier = 1;
}

def Attn_ZeroRowsOp : Attn_Op<"zero_rows"> {
  let summary = "Zero a shared-memory tile's rows from a row on";
  let description = [{
    Writes zeros to rows `[from, rows)` of `buffer`, every column, shared
    among each group of `threads` consecutive threads (128: a consumer
    warpgroup zeroes the tile it reads), then fences the writes against the
    async proxy (`fence.proxy.async`) so that a wgmma sees them once the
    group has synchronized (a named barrier after it). A KV cache may hold
    NaN past a sequence's end, and 0 x NaN in P V would poison the row:
    `attn-warp-specialize` zeroes the value rows past it this way.

    ```mlir
    scf.if %pending {
      attn.zero_rows %v from %n {threads = 128 : i64} : !attn.smem<128x128xbf16, swizzle = 128>
      attn.named_barrier_sync %id {threads = 128 : i64}
    }
    ```
  }];
  let arguments = (ins Arg<Attn_AnySmemTile, "", [MemWrite]>:$buffer,
                       Index:$from,
                       ConfinedAttr<I64Attr, [IntMinValue<32>]>:$threads);
  let assemblyFormat = [{
    $buffer `from` $from attr-dict `:` qualified(type($buffer))
  }];
}

def Attn_PipeWaitOp : Attn_Op<"pipe_wait", [Attn_ConsumersOnly]> {
  let summary = "Consumer: wait until fill `fill` has landed and name its buffer";
  let description = [{
    Blocks until the copy of fill `fill` is complete and visible, and returns
    the stage's buffer. sm_90a: `mbarrier.try_wait.parity` on the stage's
    `full` barrier with parity `(fill / stages) % 2`. No CTA barrier.

    sm_80: `cp.async.wait_group pending`, where `pending` (required there,
    refused on sm_90a) is how many cp.async groups committed after this
    fill's may stay in flight: the younger fills of every pipe. That makes
    this thread's chunks land; other threads' chunks are visible after the
    `attn.barrier` that must follow before the buffer is read.

    `zero_from %n` zeroes the buffer's rows at or past `%n` once the fill
    landed, as `attn.wait`'s does: on sm_80 each thread zeroes the chunks
    it copied, before the `attn.barrier` that follows. In warp-specialized
    consumers `attn-warp-specialize` spells it out instead: an
    `attn.zero_rows` of the warpgroup and a named barrier of its 128
    threads, under `scf.if` (the lowering refuses `zero_from` there).

    ```mlir
    %k = attn.pipe_wait %kp[%j] : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
           -> !attn.smem<128x128xbf16, swizzle = 128>
    %k = attn.pipe_wait %kp[%j] {pending = 2 : i64}
           : !attn.pipe<2, !attn.smem<64x128xbf16, swizzle = 128>>
           -> !attn.smem<64x128xbf16, swizzle = 128>
    attn.barrier
    ```
  }];
  let arguments = (ins Arg<Attn_Pipe, "", [MemRead, MemWrite]>:$pipe,
                       Index:$fill,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<0>]>>:$pending,
                       Optional<Index>:$zero_from);
  let results = (outs Attn_AnySmemTile:$buffer);
  let assemblyFormat = [{
    $pipe `[` $fill `]` (`zero_from` $zero_from^)? attr-dict `:`
    qualified(type($pipe)) `->` qualified(type($buffer))
  }];
  let builders = [
    OpBuilder<(ins "Type":$buffer, "Value":$pipe, "Value":$fill,
                   "IntegerAttr":$pending), [{
      build($_builder, $_state, buffer, pipe, fill, pending, Value());
    }]>
  ];
  let hasVerifier = 1;
}

def Attn_PipeReleaseOp : Attn_Op<"pipe_release", [Attn_ConsumersOnly]> {
  let summary = "Consumer: this warp is done reading fill `fill`";
  let description = [{
    Lane 0 of every consumer warp arrives on the stage's `empty` barrier, so
    the producer may refill it. Place it after the MMAs reading the buffer
    have completed (a synchronous `attn.mma`, or `attn.mma_wait`).
    sm_80: no instruction; the stage is free for fill `fill + stages` after
    the next `attn.barrier` (see `attn.pipe_acquire`).

    ```mlir
    attn.pipe_release %kp[%j] : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    ```
  }];
  let arguments = (ins Arg<Attn_Pipe, "", [MemRead, MemWrite]>:$pipe,
                       Index:$fill);
  let assemblyFormat = "$pipe `[` $fill `]` attr-dict `:` qualified(type($pipe))";
}

def Attn_BarrierOp : Attn_Op<"barrier", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "CTA-wide barrier: every thread arrives and waits";
  let description = [{
    `bar.sync 0`. After it, every thread's shared-memory writes before it
    (cp.async chunks included, once their `attn.pipe_wait` returned) are
    visible to every thread, and every thread's reads before it are done, so
    the buffers they read may be refilled. attn-multibuffer places one after
    each sm_80 `attn.pipe_wait`. The verifier refuses it inside
    `attn.warp_specialize`, whose producer runs on one thread.

    With `refill`, it only orders the reads of a single-buffered tile
    before its refill (a tile program whose buffers all live across an
    iteration, as the backward's, has no `attn.wait` that would): once
    attn-multibuffer turns the tile into a pipe, whose stages are released
    after their last reader, the barrier has no job and the pass drops it.

    ```mlir
    attn.barrier
    attn.barrier {refill}
    ```
  }];
  let arguments = (ins UnitAttr:$refill);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Asynchronous MMAs
//===----------------------------------------------------------------------===//

def Attn_MmaWaitOp : Attn_Op<"mma_wait", [AllTypesMatch<["input", "result"]>,
    MemoryEffects<[MemRead, MemWrite]>, Attn_ConsumersOnly]> {
  let summary = "Wait for an asynchronous MMA, leaving `pending` later ones in flight";
  let description = [{
    `input` is the result of an `attn.mma {async}` (or of the one-kernel
    backward's `attn.dq_mma {async}`); the result is the same
    tile, now readable. `pending` is how many MMA groups committed after it
    may still run. sm_90a: `wgmma.wait_group.sync.aligned pending`, then a
    register fence so no read of the accumulator moves above the wait.

    ```mlir
    %s = attn.mma_wait %s_async {pending = 1} : !attn.regs<128x128xf32, acc>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$input,
                       ConfinedAttr<I64Attr, [IntMinValue<0>, IntMaxValue<7>]>:$pending);
  let results = (outs Attn_AnyRegTile:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Warp roles and named barriers
//===----------------------------------------------------------------------===//

def Attn_WarpSpecializeOp : Attn_Op<"warp_specialize", [NoTerminator,
    RecursiveMemoryEffects]> {
  let summary = "Split the CTA into a producer warpgroup and consumer warpgroups";
  let description = [{
    The first `producer_warps` warps (one warpgroup) run `producer`, the next
    `consumer_warpgroups` warpgroups run `consumers`. Each role first moves
    registers with `setmaxnreg` (`producer_regs` and `consumer_regs` per
    thread; the budgets must fit the register file). The producer region runs
    on one elected thread (it only waits on barriers and issues TMA); the
    consumer region runs on every consumer thread, and its register tiles are
    laid out over the consumer warps only. With `uniform_warp_index` the
    consumers take their warp index broadcast from lane 0 (`shfl.sync.idx`):
    the same number, which ptxas then knows is warp-uniform, so what derives
    from it (a warpgroup's Q slice, its wgmma descriptors, its named
    barriers) lives in uniform registers instead of being moved there
    before every wgmma; `attn-warp-specialize` sets it where it pays.

    The optional `transposer` region runs on the producer warpgroup's other
    warps (1-3) while warp 0 issues the TMA: `attn.pipe_transpose`, FP8's
    in-kernel V transpose (attn-transpose-v).

    ```mlir
    attn.warp_specialize producer {
      scf.for %j = ... { attn.pipe_acquire ...  attn.pipe_load ... }
    } consumers {
      ... attn.pipe_wait ... attn.mma ... attn.pipe_release ...
    } {consumer_regs = 240 : i64, consumer_warpgroups = 2 : i64,
       producer_regs = 24 : i64, producer_warps = 4 : i64}
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<4>]>:$producer_warps,
                       I64Attr:$producer_regs,
                       ConfinedAttr<I64Attr, [IntMinValue<1>, IntMaxValue<3>]>:$consumer_warpgroups,
                       I64Attr:$consumer_regs,
                       UnitAttr:$uniform_warp_index);
  let regions = (region SizedRegion<1>:$producer, SizedRegion<1>:$consumers,
                        AnyRegion:$transposer);
  let assemblyFormat = [{
    `producer` $producer (`transposer` $transposer^)? `consumers` $consumers
    attr-dict
  }];
  let hasVerifier = 1;
}

def Attn_WarpgroupIdOp : Attn_Op<"warpgroup_id", [Pure]> {
  let summary = "Index of this warpgroup among the consumer warpgroups";
  let description = [{
    Only inside the `consumers` region of `attn.warp_specialize`.
    Lowers to `(tid - producer threads) / 128`.

    ```mlir
    %wg = attn.warpgroup_id
    ```
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Attn_NamedBarrierSyncOp : Attn_Op<"named_barrier_sync",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait on hardware barrier `id` until `threads` threads arrived";
  let description = [{
    `bar.sync id, threads`. Barrier 0 is the CTA barrier; pass-created ids
    come from one allocator (attn-pingpong).

    ```mlir
    attn.named_barrier_sync %id {threads = 256 : i64}
    ```
  }];
  let arguments = (ins Index:$id,
                       ConfinedAttr<I64Attr, [IntMinValue<32>, IntMaxValue<1024>]>:$threads);
  let assemblyFormat = "$id attr-dict";
}

def Attn_NamedBarrierArriveOp : Attn_Op<"named_barrier_arrive",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Arrive on hardware barrier `id` without waiting";
  let description = [{
    `bar.arrive id, threads`.

    ```mlir
    attn.named_barrier_arrive %id {threads = 256 : i64}
    ```
  }];
  let arguments = (ins Index:$id,
                       ConfinedAttr<I64Attr, [IntMinValue<32>, IntMaxValue<1024>]>:$threads);
  let assemblyFormat = "$id attr-dict";
}

//===----------------------------------------------------------------------===//
// The epilogue through shared memory (attn-tma-store)
//===----------------------------------------------------------------------===//

def Attn_StoreSmemOp : Attn_Op<"store_smem"> {
  let summary = "Write an accumulator tile into a shared-memory tile";
  let description = [{
    Converts the f32 accumulator `value` to the buffer's 16-bit element type
    and writes it into the swizzled tile `buffer`. sm_90a: stmatrix, four
    8x8 matrices per instruction, then a fence that makes the writes visible
    to the async proxy (`fence.proxy.async.shared::cta`) so that a TMA store
    issued after a barrier reads them; inside the `consumers` region of
    `attn.warp_specialize` each warpgroup writes the rows it holds. sm_80
    (no stmatrix): a 4-byte `st.shared` per pair of values, each warp its
    own 16-row slices.

    ```mlir
    attn.store_smem %o -> %ob : !attn.regs<128x128xf32, acc>, !attn.smem<128x128xbf16, swizzle = 128>
    ```
  }];
  let arguments = (ins Attn_AnyRegTile:$value,
                       Arg<Attn_AnySmemTile, "", [MemWrite]>:$buffer);
  let assemblyFormat = [{
    $value `->` $buffer attr-dict `:` qualified(type($value)) `,`
    qualified(type($buffer))
  }];
  let hasVerifier = 1;
}

def Attn_TmaStoreOp : Attn_Op<"tma_store"> {
  let summary = "Start a TMA copy of a shared-memory tile to rows of a [B, N, H, D] tensor";
  let description = [{
    Only inside the `consumers` region of `attn.warp_specialize`, where each
    consumer warpgroup stores the rows of `buffer` it holds (`rows / W` rows
    from `row + w * rows / W` for warpgroup `w` of `W`): one of its threads
    issues a `cp.async.bulk.tensor` store per swizzle panel and commits them
    as one bulk group. Rows at or past the tensor's N and columns past its
    head dimension are not written (the TMA box is clipped at the tensor's
    bounds). A packed (varlen) `dst` [total, H, D] takes a sequence
    (`!attn.seq`) for `batch`; the box is clipped at `total` only, so rows
    past the sequence are written into the next one: store only tiles that
    lie inside their sequence. The buffer's writes must be visible to the async proxy
    (`attn.store_smem`) and ordered before this op by a barrier of the
    warpgroup; the buffer may be written again only after
    `attn.tma_store_wait`.

    ```mlir
    attn.tma_store %ob -> %O[%b, %row, %h] : !attn.smem<128x128xbf16, swizzle = 128>, memref<?x?x?x128xbf16>
    ```
  }];
  let arguments = (ins Arg<Attn_AnySmemTile, "", [MemRead]>:$buffer,
                       Arg<AnyMemRef, "", [MemWrite]>:$dst,
                       Attn_BatchIndex:$batch, Index:$row, Index:$head);
  let assemblyFormat = [{
    $buffer `->` $dst `[` $batch `,` $row `,` $head `]` attr-dict `:`
    qualified(type($buffer)) `,` custom<DataTensorType>(type($dst), type($batch))
  }];
  let hasVerifier = 1;
}

def Attn_TmaStoreWaitOp : Attn_Op<"tma_store_wait",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait until a warpgroup's TMA stores have read their buffers";
  let description = [{
    Blocks the thread of this warpgroup that issues its `attn.tma_store`s
    (and the TMA reductions of `attn.accumulate_dq`)
    until at most `pending` of its bulk groups may still read shared memory
    (`cp.async.bulk.wait_group.read pending`); the other threads go on, so a
    barrier of the warpgroup must follow before any of them writes a buffer
    that a store was reading. Only inside the `consumers` region of
    `attn.warp_specialize`.

    ```mlir
    attn.tma_store_wait {pending = 0 : i64}
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<0>, IntMaxValue<7>]>:$pending);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

#endif // ATTN_DIALECT_ATTNSCHEDULEOPS_TD
