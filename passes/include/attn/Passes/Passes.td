//===- Passes.td - the FlashAttention passes ---------------*- tablegen -*-===//
#ifndef ATTN_PASSES_PASSES_TD
#define ATTN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnTile : Pass<"attn-tile", "ModuleOp"> {
  let summary = "FlashAttention-2 tiling: one CTA per (query block, head, batch) and a loop over key/value blocks";
  let description = [{
    Rewrites every function that holds an `attn.attention` into a tile-program
    kernel. The grid runs over (query block, head, batch) — sequence
    parallelism, so a long sequence fills the GPU even at batch 1. Each CTA
    copies its query block to shared memory once, then loops over key/value
    blocks: S = Q K^T, mask, one online-softmax step, O += P V. Copies are
    asynchronous and overlapped FlashAttention-2 style: V_j loads while
    S = Q K_j^T and the softmax run; K_{j+1} loads while O += P V_j runs.

    A soft-capped attention (`softcap = c`) gets `attn.softcap` (tanh of the
    scores times scale / c) between `S = Q K^T` and the mask, and `c` as the
    scale of `attn.online_softmax` and `attn.softmax_finalize`; a causal mask
    or a sliding window goes to `attn.mask` (with the query length when
    bottom-right aligned). Every copy and wait names its fill: block j is
    fill j (attn-causal-blocks renumbers them when it moves the loop's
    start).

    A packed (varlen) batch, `attn.attention ... varlen(%cu_q, %cu_k)`:
    each CTA reads its sequence's rows with `attn.sequence` (cu_seqlens[b]
    and cu_seqlens[b+1], clamped into the tensor), whose lengths take N's
    place everywhere (the key-block count, the mask's key and query
    lengths, so causal and window bands are the sequence's own), and
    addresses the packed tensors through the `!attn.seq`. The grid's
    query dimension is `max_seqlen_q`: a CTA whose block starts past its
    sequence's end skips the whole program (`scf.if`), and a sequence
    without keys still runs one fully masked block (O = 0, LSE = -inf).
    The epilogue reads the sequence again rather than keep it live across
    the loop.

    The tiles are the function's `attn.tiling`, chosen by `attn-configure`
    (which runs `chooseTileConfig`: sm_80: 128 query rows, 4 warps, key
    blocks of 96 for d64 and 64 for d96 and d128, 8 warps at d192, 64 x 64
    for d256, with two-stage K/V rings at d64, d96 and d192; sm_90a without
    warp specialization: 64 x 128 with one warpgroup, two CTAs per SM; with
    it, FlashAttention-3-like shapes, and three consumer warpgroups on
    192 x 64 for an unmasked d64 or d128 soft cap of the fixed-max kind
    (bf16, cap <= 50); a head dim between the tuned ones (64, 96, 128, 192,
    256) takes the next larger one's shape). attn-tile checks them and
    chooses nothing: a function without `attn.tiling` is an error.

    Any head dim D that is a multiple of 8 up to 256 is tiled: the Q, K and
    V tiles have D rounded up to 16 columns (the MMA's k step; the copies
    zero-fill the rest) in the widest swizzle whose panel divides that
    width, 128 bytes (64 columns), 64 (32) or 32 (16): d96 takes three
    64-byte panels, d40 three 32-byte panels of a 48-column tile. O's
    accumulator is D wide on sm_80 and as wide as the padded tile on sm_90a
    (wgmma reads V in whole swizzle panels); `attn.store` writes D columns.

    Before:
    ```mlir
    func.func @attn(%q: memref<?x?x?x128xbf16>, ...) {
      attn.attention %q, %k, %v, %o {scale = 0.0883 : f32} : ...
      return
    }
    ```
    After (abridged):
    ```mlir
    func.func @attn(...) attributes {attn.kernel, attn.tiling = #attn.tiling<...>} {
      %qb = attn.program_id 0 ...
      attn.copy_async %q[%b, %row, %h] -> %qs ...
      %r:3 = scf.for %j = %c0 to %nblocks step %c1 iter_args(%acc = .., %m = .., %l = ..) {
        attn.wait %ks, %j ...
        %s = attn.mma %qs, %ks {transpose_b} ...
        %sm = attn.mask %s, %row, %col, %nk ...
        %p, %m1, %l1, %alpha = attn.online_softmax %sm, %m, %l ...
        ...
      }
      %out, %lse = attn.softmax_finalize %r#0, %r#1, %r#2 ...
      attn.store %out -> %o[%b, %row, %h] ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def AttnCausalBlocks : Pass<"attn-causal-blocks", "ModuleOp"> {
  let summary = "Skip key/value blocks no row sees (causal, sliding window) and mask only the blocks that need it";
  let description = [{
    `attn-tile` masks every block. This pass classifies the key/value blocks
    of a query block: blocks no row of it sees are never visited (the loop's
    bounds move in: with `causal`, about half the work of a causal square
    problem; with a sliding window, all but about (window + block_m) /
    block_n blocks per query block); blocks entirely visible to every row
    (inside the band and before the end of the keys) run without
    `attn.mask`; only the edge blocks keep the mask: those a window's left
    edge, the causal diagonal or a window's right edge, or the ragged key
    tail cuts. Leaving the pass out keeps the correct, fully masked loop
    (ablation). One pass for the causal diagonal and both window edges,
    because they bound the same loop and a causal window has both.

    The diagonal of the query block's first row is at column `d0 = row`
    (top-left) or `d0 = row + kv_len - q_len` (a bottom-right mask, the
    mask's `q_len` operand); rows see `[d - L, d + R]` (window sides L, R;
    causal is R = 0; an absent side is unbounded):
    `hi = min(blocks, (min(d0 + block_m - 1 + R, kv_len - 1) clamped) / block_n + 1)`,
    `lo = min((max(d0, L) - L) / block_n, hi - 1)`, the unmasked blocks
    `[ceil((max(d0 + block_m - 1, L) - L) / block_n), min(kv_len / block_n, (d0 + R + 1) / block_n))`
    clamped into `[lo, hi]`. Sums with R are formed as
    `min(x, kv_len - R) + R` and differences with L as `max(x, L) - L`, so
    no 32-bit index overflows for any window up to 2^31 - 1. The
    bottom-right offset is a runtime value and may be negative (Nq > Nk):
    numerators are clamped at 0 (signed max), so a query block whose rows
    see no key still runs one fully masked block (its rows end with O = 0,
    LSE = -inf, and the prologue's first K copy is consumed).

    A loop that starts at block `lo` renumbers its fills: every
    `attn.copy_async` and `attn.wait` fill `f` in it becomes `f - lo`, and
    the copy of the first block ahead of the loop (row 0, fill 0) reads block
    `lo`; fills then count from 0 at the first visited block, which the
    mbarriers of sm_90a need (a fresh barrier only passes the wait for the
    phase before phase 0) and attn-multibuffer's pipes inherit. It runs
    before attn-multibuffer (it refuses pipes).

    After (abridged; a window: three loops):
    ```mlir
    %lo, %ulo, %uhi, %hi = <first visited block, first unmasked, first
                            masked right edge, one past the last visited>
    attn.copy_async %K[%b, %lo * block_n, %h] -> %k fill %c0
    %r0:3 = scf.for %j = %lo to %ulo ... { %f = %j - %lo ... attn.mask ... }
    %r1:3 = scf.for %j = %ulo to %uhi iter_args(%r0#0, ...) { ... }  // no mask
    %r2:3 = scf.for %j = %uhi to %hi iter_args(%r1#0, ...) { ... attn.mask ... }
    ```
    Without a window's left side `lo` is 0, the first loop is absent and the
    fills are left alone (causal: two loops, as before windows).

    With `peel=false` the blocks are skipped the same way but stay in one
    loop, the mask guarded by a uniform branch; a software-pipelined loop
    (attn-intra-wg-overlap) then never drains between the unmasked and the
    masked blocks:
    ```mlir
    %r:3 = scf.for %j = %lo to %hi ... {
      %masked = (%j < %ulo) or (%j >= %uhi)      // just %j >= %uhi without a left side
      %sm = scf.if %masked -> (...) { attn.mask ... } else { scf.yield %s }
    }
    ```
  }];
  let options = [
    Option<"peel", "peel", "bool", "true",
           "Split off the unmasked blocks into their own loop (false: one loop, "
           "the mask under a branch)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def AttnLongestFirst : Pass<"attn-longest-first", "ModuleOp"> {
  let summary = "Number a causal backward kernel's CTAs longest first, block-major across heads";
  let description = [{
    Under a causal mask (or a window bounded on the right only) the CTAs of
    the backward kernels that loop over blocks differ in length along the
    block axis: key block j of `dkdv` and `fused` visits the query blocks
    from j on, query block i of `dq` the key blocks up to i. The GPU starts
    CTAs in launch order (x fastest), so in grid order the last heads' long
    CTAs start last and run alone at the end; with few heads (a GQA
    key-owning grid has a CTA per key block and k/v head only) that tail
    is a large part of the kernel. This pass renumbers the CTAs from the
    launch's linear number `x + nx (y + ny z)`: in sections of
    `span = min(ceil(wave / nx), ny nz)` (head, batch) pairs (about a wave
    of CTAs; the last section may be narrower), each section block-major,
    its longest block first. Each section's short CTAs then fill in under
    the next section's long ones, and the CTAs at work at once belong to a
    section or two of heads, which keeps their Q, dO (and the dQ
    accumulator) in L2 as grid order does; one section over every head
    balances as well but loses more in L2 at short sequences.

    It applies where `#attn.schedule`'s `longest_first` is on (attn-configure:
    the causal dq, dkdv and fused kernels; `--no-longest-first` turns it off)
    and leaves a kernel that reads `attn.num_programs` (a persistent one, or
    one already numbered) alone.

    ```mlir
    // before (dkdv)
    %kb = attn.program_id 0
    %kh = attn.program_id 1
    %b = attn.program_id 2
    // after
    %x = attn.program_id 0
    ...
    %nx = attn.num_programs 0
    ...
    %lin = x + nx * (y + ny * z)
    %span = min(ceildiv(wave, nx), ny * nz)
    %section = lin / (span * nx), %within = lin % (span * nx)
    %width = min(span, ny * nz - section * span)
    %kb = within / width
    %pair = section * span + within % width
    %kh = pair % ny, %b = pair / ny
    ```
    The dq kernel takes block `nx - 1 - rank` instead.
  }];
  let options = [
    Option<"wave", "wave", "int64_t", "128",
           "About the CTAs the GPU runs at once: a section spans "
           "ceil(wave / blocks) heads">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def AttnBoundedSoftmax : Pass<"attn-bounded-softmax", "ModuleOp"> {
  let summary = "Soft-capped scores need no running max: a fixed offset, no rescale";
  let description = [{
    The running max of the online softmax exists so that exp(scale * (s - m))
    cannot overflow. A soft cap bounds the scores (`attn.softcap`: |t| <= 1,
    the cap c being the softmax scale), so a constant m does that job, and
    the loop drops the per-score max (an FMNMX per score, two shuffles per
    row), the wait for it before the first exponential, and the
    accumulator's rescale (an FMUL per output element per block).

    m = max(0, c - 30) / c in tanh units keeps every exponent in [-70, 30]
    (BoundedSoftmax.h): P <= e^30, so row sums and P V stay far inside f32
    for N * |V| up to 3e25, and a row's largest P >= e^-70 stays normal.
    That needs c <= 50 and P in bf16 (f32's exponent range); other caps and
    f16 P keep the running max. `online_softmax` gains `fixed_max`, its max
    iter arg starts at the offset and is yielded unchanged (the canonicalizer
    then drops it), and `attn-online-softmax` expands it without the max and
    the rescale. The LSE is unchanged: scale * m + log(l).

    Before (c = 30):
    ```mlir
    %m0 = attn.splat 0xFF800000 : f32 -> !attn.regs<128xf32, row>
    %r:3 = scf.for %j = ... iter_args(%o = %o0, %m = %m0, %l = %l0) -> ... {
      %t = attn.softcap %s {scale = 0.00294628 : f32} ...
      %p, %m1, %l1, %alpha = attn.online_softmax %t, %m, %l {scale = 3.000000e+01 : f32} ...
      ...
      scf.yield %o1, %m1, %l1 ...
    }
    ```
    After:
    ```mlir
    %m0 = attn.splat 0.000000e+00 : f32 -> !attn.regs<128xf32, row>
    %r:3 = scf.for %j = ... iter_args(%o = %o0, %m = %m0, %l = %l0) -> ... {
      %p, %m1, %l1, %alpha = attn.online_softmax %t, %m, %l {fixed_max, scale = 3.000000e+01 : f32} ...
      ...
      scf.yield %o1, %m, %l1 ...
    }
    ```
    Its off switch is `attngen --no-bounded-softmax` (kernel names gain
    `_runmax` where it changes the kernel).
  }];
}

def AttnOnlineSoftmax : Pass<"attn-online-softmax", "ModuleOp"> {
  let summary = "Expand the online softmax into running max/sum updates, exp2 and rescales";
  let description = [{
    The recomputation technique of FlashAttention: the score block never
    leaves registers, the running max `m` and sum `l` are updated per block,
    the output accumulator is rescaled by `alpha = exp(scale*(m_old - m_new))`
    and divided by `l` once after the loop; LSE = scale * m + log(l).
    The softmax scale and log2(e) are folded into one constant so each
    exponential is a single `ex2.approx`.

    Before:
    ```mlir
    %p, %m1, %l1, %alpha = attn.online_softmax %s, %m, %l {scale = 0.125 : f32} ...
    ```
    After:
    ```mlir
    %m1    = attn.row_reduce max %s, %m ...
    %p     = attn.exp2_diff %s, %m1 {scale_log2e = 0.180336878 : f32} ...
    %alpha = attn.exp2_diff %m, %m1 {scale_log2e = 0.180336878 : f32} ...
    %ls    = attn.rescale %l, %alpha ...
    %l1    = attn.row_reduce sum %p, %ls ...
    ```

    `exp2-emulate=k` (0 to 8, default 0) marks the score exponentials
    `emulated_eighths = k`: k of every 8 fragment blocks of P are computed
    by a polynomial on the FMA pipe instead of MUFU.EX2 (FlashAttention-4's
    answer to a MUFU-bound softmax: d64, soft caps). The rescale factor
    `alpha` (one per row) stays on MUFU.
    ```mlir
    %p     = attn.exp2_diff %s, %m1 {emulated_eighths = 4 : i64, scale_log2e = 0.180336878 : f32} ...
    ```
  }];
  let options = [
    Option<"exp2Emulate", "exp2-emulate", "int64_t", "0",
           "Eighths of the score exponentials computed in software on the "
           "FMA pipe (0 to 8; 0: all on MUFU.EX2)">,
  ];
}

def AttnPersistent : Pass<"attn-persistent", "ModuleOp"> {
  let summary = "Make the kernel persistent: each CTA loops over tiles";
  let description = [{
    One CTA per (query block, head, batch) pays a prologue (the Q and first
    K loads) and an epilogue (the O store) per tile with the tensor cores
    idle. A persistent kernel launches `ctas_per_sm` CTAs per SM (the grid
    rule `#attn.grid` says so to the runtime) and each walks the tile space
    `tile = program_id, program_id + num_programs, ...`, so with warp
    specialization the producer loads the next tile's Q and K while the
    consumers finish the current one. The pipeline runs it by default on
    sm_90a for the unmasked d64 and d128 kernels and for causal masks up to
    d128 and at d256 (usesPersistentGrid).

    The program after `attn-tile` (and `attn-causal-blocks`) becomes the body
    of an `scf.for` over tiles, marked `attn.tile_loop`; `attn.program_id`
    0/1/2 become the tile's query block, head and batch. Non-causal kernels
    walk query blocks fastest (CTAs working at once share a head's K and V
    in L2). Causal tiles differ in length (query block q of m visits about
    q + 1 key blocks), so they are dealt out in units of equal length: the
    pairs (m - 1 - i, i) of a head (m odd: (m - 2 - i, i), and the last
    block alone), numbered head by head, then the lone blocks; CTA c takes
    units c, c + P, ... of the P CTAs and its loop runs over its own tiles,
    the longer of a pair first. No CTA gets more than one unit above the
    average, and the units at work at once belong to few heads (L2).

    Copies and waits name their fills; fills must keep counting across
    tiles (a pipe's mbarrier phases follow them), so the tile loop carries
    the number of key/value blocks consumed so far and the number of tiles
    done: a key/value fill `f` becomes `kv_fills + f`, the Q fill the tile
    count, and each tile adds the blocks its key/value loops visit. The Q
    tile then has one stage and a release after its last reader
    (`attn-multibuffer`), which is where the producer refills it.

    A varlen kernel has its program inside attn-tile's guard
    `scf.if %row < %len`; its loop runs over the tile space
    (`max_seqlen_q` / block_m, heads, sequences, read with
    `attn.problem_size`), but number t is the t-th live tile, counted
    sequence by sequence (H * ceil(len / block_m) per sequence; causal,
    H * ceil(m / 2) pair units within it, two numbers each). An `scf.while`
    over `cu_seqlens_q` walks on from the sequence of the CTA's previous
    tile (carried in two more iteration arguments) to the one holding t;
    numbers past the last sequence get a query block past the tensor and
    fail the guard. A tile that fails it loads nothing, so the counts add
    `select(%live, visited, 0)` and `select(%live, 1, 0)` (the loop bounds
    are cloned in front of the guard).

    Before:
    ```mlir
    %qb = attn.program_id 0
    attn.copy_async %Q[%b, %row, %h] -> %q fill %c0 ...
    attn.copy_async %K[%b, %c0, %kh] -> %k fill %c0 ...
    scf.for %j = %c0 to %n ... { attn.wait %k, %j ... }
    attn.store ...
    ```
    After:
    ```mlir
    %first = attn.program_id 0
    %step = attn.num_programs 0
    scf.for %t = %first to %tiles step %step iter_args(%kv = %c0, %done = %c0) {
      %qb = arith.remui %t, %qblocks ...
      attn.copy_async %Q[%b, %row, %h] -> %q fill %done ...
      attn.copy_async %K[%b, %c0, %kh] -> %k fill %kv ...
      scf.for %j = %c0 to %n ... { %f = arith.addi %kv, %j ... attn.wait %k, %f ... }
      attn.store ...
      scf.yield (%kv + %n), (%done + 1)
    } {attn.tile_loop}
    ```
  }];
  let options = [
    Option<"ctasPerSm", "ctas-per-sm", "int64_t", "1",
           "CTAs launched per SM (1 to 32)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def AttnMultibuffer : Pass<"attn-multibuffer", "ModuleOp"> {
  let summary = "Turn the copied tiles into multi-stage pipes (mbarriers on sm_90a, cp.async rings on sm_80)";
  let description = [{
    Every shared-memory tile that `attn.copy_async` fills becomes an
    `attn.pipe`: the key and value tiles get `stages` buffers, the query tile
    (filled once, or once per tile of a persistent kernel) one. Each copy becomes `attn.pipe_acquire` (wait for the
    stage to be empty) plus `attn.pipe_load`; each `attn.wait` becomes
    `attn.pipe_wait`, which returns the stage's buffer, and an
    `attn.pipe_release` follows the last MMA that reads it.

    sm_90a: the loads are TMA completing on the stage's full barrier, and
    the CTA-wide barrier of `attn.wait` is gone: a buffer is refilled
    exactly when every consumer warp has released it, which is what lets a
    producer (attn-warp-specialize) run `stages - 1` blocks ahead.

    sm_80: every thread copies and reads, so the schedule moves the copies
    themselves: each fill in the key/value loops moves `stages - 1` blocks
    ahead (`if` the block exists: a skipped fill still commits an empty
    cp.async group), the fills the loops no longer issue go to the
    prologue in the loops' order, each `attn.pipe_wait` gets `pending`, the
    fewest groups committed after its fill on any path (`2 (stages - 1)`
    for K and V), and an `attn.barrier` follows it. The pass then checks
    that every refill of a stage comes after a barrier that follows the
    release of the fill it overwrites, and refuses programs it cannot
    pipeline this way (fills not of the form `block * rows`, several fills
    of a pipe per iteration, loops in different orders). A nest whose first
    loop starts at block `lo` (a sliding window's) numbers fills `block -
    lo`: the moved copies read rows of `block`, test `block < hi`, and fill
    `block - lo`.

    Before:
    ```mlir
    %k = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
    attn.copy_async %K[%b, %c0, %h] -> %k ...
    scf.for %j = ... {
      attn.wait %k, %j ...
      %s = attn.mma %qs, %k {transpose_b} ...
      ...
    }
    ```
    After (sm_90a):
    ```mlir
    %kp = attn.create_pipe : !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    attn.pipe_acquire %kp[%c0] ...
    attn.pipe_load %K[%b, %c0, %h] -> %kp[%c0] ...
    scf.for %j = ... {
      %k = attn.pipe_wait %kp[%j] ...
      %s = attn.mma %qs, %k {transpose_b} ...
      attn.pipe_release %kp[%j] ...
      ...
    }
    ```
    After (sm_80, stages = 2, abridged):
    ```mlir
    attn.pipe_load %Q[...] -> %qp[%c0] ...
    attn.pipe_load %K[...] -> %kp[%c0] ...   attn.pipe_load %V[...] -> %vp[%c0] ...
    attn.pipe_load %K[...] -> %kp[%c1] if %has1 ...
    %q = attn.pipe_wait %qp[%c0] {pending = 3 : i64} ...   attn.barrier
    scf.for %j = ... {
      %k = attn.pipe_wait %kp[%j] {pending = 2 : i64} ...  attn.barrier
      attn.pipe_load %V[...] -> %vp[%j1] if %has_j1 ...
      %s = attn.mma %q, %k {transpose_b} ...  attn.pipe_release %kp[%j] ...
      ...
      %v = attn.pipe_wait %vp[%j] {pending = 2 : i64} ...  attn.barrier
      attn.pipe_load %K[...] -> %kp[%j2] if %has_j2 ...
      %o = attn.mma %p, %v, %acc ...  attn.pipe_release %vp[%j] ...
    }
    ```
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "2",
           "Buffers per key/value pipe (1 to 8; sm_80: 1 keeps the "
           "single-buffer order, with explicit wait counts and barriers)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def AttnTransposeV : Pass<"attn-transpose-v", "ModuleOp"> {
  let summary = "FP8: transpose a row-major V in shared memory on the producer warpgroup";
  let description = [{
    FlashAttention-3's in-kernel V transpose. The e4m3 wgmma reads both
    operands K-major, so P V needs V with its keys contiguous; a V stored
    row-major (head dim contiguous, as q and k) reaches attn-tile's program
    as an `attn.copy_async {transpose}`, which attn-multibuffer makes an
    `attn.pipe_load {transpose}`. No TMA transposes bytes, so this pass
    gives such a pipe a row-major staging pipe (keys x D): the TMA fills the
    staging stage, and an `attn.pipe_transpose` writes it transposed into
    the stage the consumers read. attn-warp-specialize puts the transposes
    on the producer warpgroup's warps 1-3 (warp 0 issues the TMA), so the
    consumers' program does not change.

    The staging pipe has as many stages as V's where they fit in shared
    memory (`staging-stages` = 0), else one; its empty barriers count the
    transposing warps' arrivals and V's full barriers count theirs instead
    of the TMA's bytes (`release_arrivals`, `fill_arrivals`).

    Where every P V product reads P straight from an FP8 `attn.convert`
    (`interleave-keys`, the default), the transposes store each 16 keys in
    the order the FP8 accumulator holds P's columns (0, 1, 8, 9, 2, 3, 10,
    11, ...) and the conversions are marked `interleaved_keys`: P then goes
    into the A operand without the quad shuffles a K-major V from memory
    needs (FlashAttention-3's layout trick).

    A KV cache's consumers zero V's rows past the sequence's end (`zero_from`
    on their wait of V; a cache may hold NaN there). With the transpose,
    that zeroing moves onto the `attn.pipe_transpose` of the same fill,
    which zeroes those keys in registers: the count must be computed before
    the fill is issued (attn-tile's KV-cache program does so).

    Before:
    ```mlir
    attn.pipe_acquire %vp[%j] : ...
    attn.pipe_load %V[%b, %col, %h] -> %vp[%j] {transpose} : ...
    ```
    After:
    ```mlir
    %vs = attn.create_pipe {release_arrivals = 3 : i64}
      : !attn.pipe<2, !attn.smem<128x128xf8E4M3FN, swizzle = 128>>
    attn.pipe_acquire %vs[%j] : ...
    attn.pipe_load %V[%b, %col, %h] -> %vs[%j] : ...
    attn.pipe_transpose %vs -> %vp[%j] : ...
    ```
  }];
  let options = [
    Option<"stagingStages", "staging-stages", "int64_t", "0",
           "Stages of the row-major staging pipe (0: V's where they fit in "
           "shared memory, else 1)">,
    Option<"interleaveKeys", "interleave-keys", "bool", "true",
           "Store V's keys in the FP8 accumulator's column order, so that "
           "P's conversion into the P V operand needs no shuffles">,
  ];
}

def AttnWarpSpecialize : Pass<"attn-warp-specialize", "ModuleOp"> {
  let summary = "Split the kernel into a TMA producer warpgroup and MMA consumer warpgroups";
  let description = [{
    FlashAttention-3's warp specialization. The tile program is copied into
    the two regions of `attn.warp_specialize`: the producer keeps only the
    pipe acquires and loads (and the loops and scalars they need) and runs
    on one thread of its own warpgroup; the consumers keep everything else.
    Data flows only through the pipes, so the producer runs ahead by the
    pipes' depth while the consumers compute. Registers move from the
    producer to the consumers with `setmaxnreg` (24/240 with one or two
    consumer warpgroups, 32/160 with three, as FlashAttention-3 does; 40
    for a producer warpgroup that transposes FP8's V, beside 232 for two
    consumer warpgroups; with the tiling's min_ctas_per_sm > 1 the
    consumers get what the CTA's share of the register file leaves).
    Needs every copied tile to be a pipe (run `attn-multibuffer` first).

    After (abridged):
    ```mlir
    %kp = attn.create_pipe ...
    attn.warp_specialize producer {
      attn.pipe_acquire %qp[%c0] ...  attn.pipe_load %Q[...] -> %qp[%c0] ...
      scf.for %j = ... { attn.pipe_acquire %vp[%j] ... attn.pipe_load ... }
    } consumers {
      %q = attn.pipe_wait %qp[%c0] ...
      %r:3 = scf.for %j = ... { %k = attn.pipe_wait %kp[%j] ... attn.mma ... }
      attn.store ...
    } {consumer_regs = 240 : i64, consumer_warpgroups = 2 : i64,
       producer_regs = 24 : i64, producer_warps = 4 : i64}
    ```
  }];
  let options = [
    Option<"producerRegs", "producer-regs", "int64_t", "0",
           "Registers per producer thread (0: 24, or 32 with three consumer warpgroups)">,
    Option<"consumerRegs", "consumer-regs", "int64_t", "0",
           "Registers per consumer thread (0: 240, or 160 with three consumer warpgroups)">,
  ];
}

def AttnIntraWgOverlap : Pass<"attn-intra-wg-overlap", "ModuleOp"> {
  let summary = "Issue S_{j+1} = Q K_{j+1}^T and O += P_j V_j before the softmax of block j+1";
  let description = [{
    FlashAttention-3's intra-warpgroup pipelining of the two GEMMs with the
    softmax. Each key/value loop is rotated by half an iteration: a prologue
    computes S_0 and its softmax; iteration j issues S_j = Q K_j^T and
    O += P_{j-1} V_{j-1} as asynchronous wgmma groups, waits for S_j alone
    (`attn.mma_wait {pending = 1}`) and runs the softmax while the P V group
    is still on the tensor cores, then waits for it (`pending = 0`),
    releases the buffers and rescales O; an epilogue adds the last P V.
    An empty loop skips prologue and epilogue (`scf.if`); the loop may start
    at any block (a window's), and values the P V half reads from the first
    half (P, a fill such as `j - lo`) travel to the next iteration as iter
    args. sm_90a; the pipes need two stages or more.

    After (abridged):
    ```mlir
    %r:4 = scf.for %j = %lo1 to %hi ... iter_args(%acc, %m, %l, %p) {
      %k  = attn.pipe_wait %kp[%j] ...
      %sa = attn.mma %q, %k {async, transpose_b} ...
      %v  = attn.pipe_wait %vp[%jm1] ...
      %oa = attn.mma %p, %v, %acc {async} ...
      %s  = attn.mma_wait %sa {pending = 1} ...
      attn.pipe_release %kp[%j] ...
      ... softmax of %s ...
      %o  = attn.mma_wait %oa {pending = 0} ...
      attn.pipe_release %vp[%jm1] ...
      %o1 = attn.rescale %o, %alpha ...
    }
    ```
  }];
}

def AttnBackwardOverlap : Pass<"attn-backward-overlap", "ModuleOp"> {
  let summary = "Issue the backward's GEMMs asynchronously, under its recompute and dS";
  let description = [{
    The backward's form of FlashAttention-3's intra-warpgroup overlap. Each
    query (dkdv, fused) or key (dq) step of a backward kernel runs two
    products, S and dP, and one or two accumulating GEMMs (dK and dV, or
    dQ). Without this pass every GEMM is waited for as it is issued, so the
    tensor cores idle while the warpgroup recomputes P and forms dS. The
    pass, on the loop bodies of warp-specialized sm_90a backward kernels
    whose schedule has `intra_wg_overlap`:
    - moves each product up to where its operands are ready, carrying the
      buffer wait that feeds it: dP issues right after S. With
      `hoist-accumulators` the accumulating GEMMs move too, with the
      conversion of their A operand: dV (which needs only P) issues before
      dP is waited for. That holds more registers across the step; ptxas
      spills at d128 (docs/PERF.md). A GEMM never moves above a product, a
      write to a tile it reads, or an op that may write memory it reads
      (attn.accumulate_dq, barriers);
    - makes every GEMM `async` (the one-kernel backward's `attn.dq_mma`
      too) and waits (`attn.mma_wait`) just before the first op that reads
      its result or releases a buffer it reads, leaving the GEMMs issued
      after it in flight: the dQ drain's stage writes run under dV's GEMM;
    - sinks the buffer releases to the end of the step, in the order their
      last GEMMs were issued.

    The accumulators are waited for before the step ends, so no wgmma is in
    flight across iterations.

    After (dkdv with hoist-accumulators, abridged):
    ```mlir
    %q  = attn.pipe_wait %qp[%j] ...
    %sa = attn.mma %k, %q {async, transpose_b} ...
    %do = attn.pipe_wait %dop[%j] ...
    %pa = attn.mma %v, %do {async, transpose_b} ...
    %s  = attn.mma_wait %sa {pending = 1} ...
    ... recompute P from %s ...
    %dva = attn.mma %p16, %do, %dv {async} ...
    %dp = attn.mma_wait %pa {pending = 1} ...
    ... dS from P and %dp ...
    %dka = attn.mma %ds16, %q, %dk {async} ...
    %dvw = attn.mma_wait %dva {pending = 1} ...
    attn.pipe_release %dop[%j] ...
    %dkw = attn.mma_wait %dka {pending = 0} ...
    attn.pipe_release %qp[%j] ...
    ```
  }];
  let options = [
    Option<"hoistAccumulators", "hoist-accumulators", "bool", "false",
           "Also issue the accumulating GEMMs (dK, dV, dQ) as early as their "
           "operands allow">,
  ];
}

def AttnPingpong : Pass<"attn-pingpong", "ModuleOp"> {
  let summary = "Alternate the consumer warpgroups' GEMM phases on named barriers";
  let description = [{
    FlashAttention-3's pingpong schedule. In a warp-specialized kernel with
    two or more consumer warpgroups, every run of MMA issues (the GEMM
    phase) is bracketed by `attn.named_barrier_sync` on the warpgroup's own
    barrier and `attn.named_barrier_arrive` on the next warpgroup's, and
    the last warpgroup arrives once up front: the warpgroups take turns on
    the tensor cores, so one's softmax runs under the others' GEMMs. Barrier
    ids come from one allocator (`attn/Passes/NamedBarriers.h`); barrier 0
    stays the CTA barrier.

    After (abridged):
    ```mlir
    %wg = attn.warpgroup_id
    ... scf.if (%wg == last) { attn.named_barrier_arrive %first {threads = 256} }
    scf.for ... {
      attn.named_barrier_sync %mine {threads = 256 : i64}
      %sa = attn.mma ... {async} ... %oa = attn.mma ... {async}
      attn.named_barrier_arrive %next {threads = 256 : i64}
      ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def AttnPrefetchQ : Pass<"attn-prefetch-q", "ModuleOp"> {
  let summary = "Load a persistent CTA's next Q tile while it works on this one";
  let description = [{
    A persistent kernel (attn-persistent) loads one Q tile per tile of its
    loop into a one-stage pipe (attn-multibuffer), released after the
    tile's last GEMM. The producer cannot refill it before that release, so
    every tile starts with Q's load latency, and the next tile's first K
    waits behind it in the producer's program order. This pass gives the
    pipe a second stage: the producer loads the next tile's Q, then its
    first K, as soon as it has issued this tile's last V, while the
    consumers still run this tile's last blocks and epilogue. A tile of a
    short sequence is a few key blocks long, so its start weighs most
    there.

    Only the pipe's stage count changes (its fills stay one per tile, its
    release per thread). It applies where `#attn.schedule`'s `prefetch_q`
    is on (attn-configure: dense 16-bit persistent kernels with room for
    the second Q tile, d64 and d128; `--no-prefetch-q` turns it off). A
    kernel whose schedule asks for it where the second stage would not fit
    the CTA's shared memory (beside the K/V pipes and attn-tma-store's
    output tile) is an error; a kernel without a schedule keeps its one
    stage there.

    ```mlir
    // before
    %qp = attn.create_pipe {per_thread_release} : !attn.pipe<1, <128x128xbf16, swizzle = 128>>
    // after
    %qp = attn.create_pipe {per_thread_release} : !attn.pipe<2, <128x128xbf16, swizzle = 128>>
    ```
  }];
}

def AttnTmaStore : Pass<"attn-tma-store", "ModuleOp"> {
  let summary = "Store the output through shared memory with the TMA";
  let description = [{
    FlashAttention-3's epilogue. In a warp-specialized kernel, each
    `attn.store` of a 16-bit [B, N, H, D] output whose tile the consumer
    warpgroups hold 64 rows each becomes: `attn.store_smem` into one
    shared-memory tile of the kernel's (stmatrix, then a proxy fence), a
    barrier of the warpgroup, and `attn.tma_store` (one thread of the
    warpgroup stores its rows with the TMA, clipped at the tensor's N). In
    a loop over tiles (attn-persistent) the store is asynchronous across
    iterations: the next write of the buffer first waits for the previous
    store's read (`attn.tma_store_wait`, then the barrier). The consumers
    end with a wait, so the CTA's shared memory outlives the last read.
    Barrier ids come from `attn/Passes/NamedBarriers.h` (7 + warpgroup).
    A kernel whose buffers leave no room for the tile (head dims past 176:
    the K/V pipes take the shared memory) keeps its register stores; so do f32
    partial outputs and head-packed tiles. A packed (varlen) output [total,
    H, D] takes the TMA store for the tiles inside their sequence and keeps
    the register store, in the else branch of an `scf.if %row + M <= %len`,
    for a sequence's last, partial tile: the TMA clips at the tensor's
    last row, not at the sequence's.

    Before:
    ```mlir
    attn.warp_specialize producer { ... } consumers {
      scf.for %t = ... {
        ... attn.store %o -> %O[%b, %row, %h] : !attn.regs<128x128xf32, acc>, memref<?x?x?x128xbf16>
      }
    }
    ```
    After:
    ```mlir
    %ob = attn.alloc_smem : !attn.smem<128x128xbf16, swizzle = 128>
    attn.warp_specialize producer { ... } consumers {
      %wg = attn.warpgroup_id
      %id = arith.addi %wg, %c7 : index
      scf.for %t = ... {
        ...
        attn.tma_store_wait {pending = 0 : i64}
        attn.named_barrier_sync %id {threads = 128 : i64}
        attn.store_smem %o -> %ob : ...
        attn.named_barrier_sync %id {threads = 128 : i64}
        attn.tma_store %ob -> %O[%b, %row, %h] : ...
      }
      attn.tma_store_wait {pending = 0 : i64}
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def AttnExpandZeroRows : Pass<"attn-expand-zero-rows", "ModuleOp"> {
  let summary = "Spell out a warp-specialized wait's zeroed rows: the warpgroup's zeroing and its barrier";
  let description = [{
    A KV-cache kernel zeroes the value rows past its sequence after their
    wait (`zero_from`, attn-tile), since a cache may hold NaN there. In the
    consumers of `attn.warp_specialize` that takes each warpgroup's share
    of the zeros and a named barrier of its 128 threads before any wgmma
    reads the tile; this pass writes both into the IR (barrier ids from
    NamedBarriers.h), after the schedule passes, which read a wait as one
    op. The lowering refuses a `zero_from` left in consumers.

    ```mlir
    // before
    %v = attn.pipe_wait %vp[%j] zero_from %n : ...
    // after
    %v = attn.pipe_wait %vp[%j] : ...
    %pending = arith.cmpi slt, %n, %c128 : index
    scf.if %pending {
      attn.zero_rows %v from %n {threads = 128 : i64} : !attn.smem<128x128xbf16, swizzle = 128>
      %wg = attn.warpgroup_id
      %id = arith.addi %wg, %c4 : index
      attn.named_barrier_sync %id {threads = 128 : i64}
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def AttnAllocateSmem : Pass<"attn-allocate-smem", "ModuleOp"> {
  let summary = "Place every shared-memory tile and mbarrier of a kernel";
  let description = [{
    Gives each `attn.alloc_smem` and `attn.create_pipe` of a tile-program
    kernel its byte offsets in the dynamic shared memory, in allocation
    order: the tiles first (a pipe's stages one after the other), each
    1024-byte aligned (the 128-byte swizzle's atom), then the mbarriers (one
    per buffer; a full and an empty array per pipe), and records the total
    on the kernel as `attn.smem_bytes` (with 1024 bytes of slack to align
    the dynamic shared memory's base at run time). The lowering reads the
    offsets; `attn-tma-store`'s fit check asks the same layout.

    ```mlir
    // after
    func.func @k(...) attributes {attn.kernel, attn.smem_bytes = 197720 : i64, ...} {
      %q = attn.create_pipe {empty_barriers = 196616 : i64, full_barriers = 196608 : i64,
                             offset = 0 : i64} : !attn.pipe<1, <128x128xbf16, swizzle = 128>>
      ...
    ```
  }];
}

#endif // ATTN_PASSES_PASSES_TD
