//===- AttnBase.td - attn dialect, enums, attributes, types -*- tablegen -*-===//
//
// The attn dialect describes attention at two levels:
//   * the problem: `attn.attention` on whole Q/K/V/O tensors (memrefs);
//   * the tile program the passes produce: shared-memory tiles, async copies,
//     MMAs on register tiles, row reductions, masks and the epilogue.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_ATTNBASE_TD
#define ATTN_DIALECT_ATTNBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::mlir::attn";
  let summary = "Attention as tiles, asynchronous copies and tensor-core MMAs";
  let description = [{
    The attn dialect is the contract between attngen's passes. `attn.attention`
    states the whole forward-attention problem; `attn-tile` turns it into a tile
    program (one CTA per query block, a loop over key/value blocks), later passes
    apply the FlashAttention techniques to that program and `codegen/` lowers it
    to the NVVM and LLVM dialects for sm_80 or sm_90a.
  }];
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Registers the types (defined beside their storage in AttnTypes.cpp).
    void registerTypes();
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Attn_TargetSm80 : I32EnumAttrCase<"sm_80", 0>;
def Attn_TargetSm90a : I32EnumAttrCase<"sm_90a", 1>;
def Attn_TargetKind : I32EnumAttr<"TargetKind", "GPU target architecture",
    [Attn_TargetSm80, Attn_TargetSm90a]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

def Attn_FragAcc : I32EnumAttrCase<"acc", 0>;
def Attn_FragOperandA : I32EnumAttrCase<"operand_a", 1>;
def Attn_FragRow : I32EnumAttrCase<"row", 2>;
def Attn_FragCol : I32EnumAttrCase<"col", 3>;
def Attn_FragLanes : I32EnumAttrCase<"lanes", 4>;
def Attn_FragmentKind : I32EnumAttr<"FragmentKind",
    "how a register tile is spread over the threads",
    [Attn_FragAcc, Attn_FragOperandA, Attn_FragRow, Attn_FragCol,
     Attn_FragLanes]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

def Attn_ReduceMax : I32EnumAttrCase<"max", 0>;
def Attn_ReduceSum : I32EnumAttrCase<"sum", 1>;
def Attn_ReduceKind : I32EnumAttr<"ReduceKind", "row reduction kind",
    [Attn_ReduceMax, Attn_ReduceSum]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

def Attn_CausalTopLeft : I32EnumAttrCase<"top_left", 0>;
def Attn_CausalBottomRight : I32EnumAttrCase<"bottom_right", 1>;
def Attn_CausalAlign : I32EnumAttr<"CausalAlign",
    "where the causal diagonal sits when Nq != Nk",
    [Attn_CausalTopLeft, Attn_CausalBottomRight]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

def Attn_BackwardNone : I32EnumAttrCase<"none", 0>;
def Attn_BackwardDq : I32EnumAttrCase<"dq", 1>;
def Attn_BackwardDkdv : I32EnumAttrCase<"dkdv", 2>;
// The one-kernel backward (FlashAttention-2/3's): pre, fused, post.
def Attn_BackwardPre : I32EnumAttrCase<"pre", 3>;
def Attn_BackwardFused : I32EnumAttrCase<"fused", 4>;
def Attn_BackwardPost : I32EnumAttrCase<"post", 5>;
def Attn_BackwardPart : I32EnumAttr<"BackwardPart",
    "which kernel of the backward pass (none: the forward)",
    [Attn_BackwardNone, Attn_BackwardDq, Attn_BackwardDkdv, Attn_BackwardPre,
     Attn_BackwardFused, Attn_BackwardPost]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

def Attn_SizeBatch : I32EnumAttrCase<"batch", 0>;
def Attn_SizeNq : I32EnumAttrCase<"nq", 1>;
def Attn_SizeNk : I32EnumAttrCase<"nk", 2>;
def Attn_SizeNumHeads : I32EnumAttrCase<"num_heads", 3>;
def Attn_SizeNumKvHeads : I32EnumAttrCase<"num_kv_heads", 4>;
// Variable-length batches: the longest query sequence (the grid's query
// blocks), as flash_attn_varlen_func's max_seqlen_q.
def Attn_SizeMaxSeqlenQ : I32EnumAttrCase<"max_seqlen_q", 5>;
// KV cache and split-KV kernels (attn.attention_kvcache, attn.combine_splits).
def Attn_SizeNumSplits : I32EnumAttrCase<"num_splits", 6>;
def Attn_SizeMaxBlocks : I32EnumAttrCase<"max_blocks", 7>;
def Attn_SizeNumBlocks : I32EnumAttrCase<"num_blocks", 8>;
// The longest key sequence of a variable-length batch (the grid of the
// backward's key-owning kernel), as flash_attn_varlen_func's max_seqlen_k.
def Attn_SizeMaxSeqlenK : I32EnumAttrCase<"max_seqlen_k", 9>;
def Attn_SizeKind : I32EnumAttr<"SizeKind",
    "a problem size the runtime knows at launch (a kernel parameter)",
    [Attn_SizeBatch, Attn_SizeNq, Attn_SizeNk, Attn_SizeNumHeads,
     Attn_SizeNumKvHeads, Attn_SizeMaxSeqlenQ, Attn_SizeNumSplits,
     Attn_SizeMaxBlocks, Attn_SizeNumBlocks, Attn_SizeMaxSeqlenK]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

def Attn_ReduceKindAttrParam : EnumAttr<Attn_Dialect, Attn_ReduceKind, "reduce"> {
  let assemblyFormat = "$value";
}
def Attn_SizeKindAttrParam : EnumAttr<Attn_Dialect, Attn_SizeKind, "size"> {
  let assemblyFormat = "$value";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Attn_BackwardAttr : EnumAttr<Attn_Dialect, Attn_BackwardPart, "backward"> {
  let summary = "Which kernel of the backward pass an op or kernel is";
  let description = [{
    The deterministic pair: `dq`, the kernel that owns query blocks (delta,
    then dQ), and `dkdv`, the kernel that owns key blocks (dK and dV). The
    one-kernel backward: `pre` (delta, and the f32 dQ accumulator zeroed),
    `fused` (owns key blocks: dK, dV, and dQ added into the accumulator
    with atomics) and `post` (dQ from the accumulator). `none` is the
    forward.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Attn_CausalAlignAttr : EnumAttr<Attn_Dialect, Attn_CausalAlign, "causal_align"> {
  let summary = "Alignment of the mask's diagonal: top-left or bottom-right";
  let description = [{
    With Nq query rows and Nk key columns, the diagonal of query row `i` is
    key column `i` (`top_left`) or `i + Nk - Nq` (`bottom_right`). A causal
    mask lets row `i` see keys up to its diagonal: `j <= i` top-left
    (PyTorch's `is_causal`), `j <= i + Nk - Nq` bottom-right (FlashAttention
    >= 2.1, the alignment KV-cache decoding and chunked prefill need). A
    sliding window (`window_left`, `window_right`) is placed around the same
    diagonal. The two agree when Nq == Nk. Under `bottom_right` a causal row
    with `i + Nk - Nq < 0` sees no key: its output is 0 and its log-sum-exp
    -inf. It applies to masks with a diagonal (causal or a window) only.

    ```mlir
    #attn.causal_align<bottom_right>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

class Attn_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Attn_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Attn_TargetAttr : Attn_Attr<"Target", "target"> {
  let summary = "The GPU architecture a module is compiled for";
  let description = [{
    Placed on the module as `attn.target`. Passes that only make sense on one
    architecture (and codegen) read it; verifiers use it to reject MMA shapes
    the target lacks.

    ```mlir
    module attributes {attn.target = #attn.target<sm_90a>} { ... }
    ```
  }];
  let parameters = (ins EnumParameter<Attn_TargetKind>:$kind);
  let assemblyFormat = "`<` $kind `>`";
}

def Attn_TilingAttr : Attn_Attr<"Tiling", "tiling"> {
  let summary = "Tile sizes and thread organisation of a tile program";
  let description = [{
    Chosen once, by `attn-configure` (or the driver, which runs the same
    choice), from the target, the problem and the tile overrides; recorded
    on the kernel function as `attn.tiling`, which `attn-tile` reads and
    every later pass and the metadata read. `block_m` query rows per CTA,
    `block_n` key/value rows per loop iteration, `num_warps` warps per CTA
    (the consumer warps of a warp-specialized kernel; each warp owns 16-row
    slices of the query block: warp `w` owns rows `16*w + 16*num_warps*t`),
    `stages` the K/V pipe depth (`attn-multibuffer`; 0 or 1: single
    buffers), `peel_masked_blocks` whether `attn-causal-blocks` runs the
    masked blocks in loops of their own, `min_ctas_per_sm` the CTAs per SM
    the kernel asks ptxas to allow for (`.minnctapersm`; 1: the tile shape
    decides occupancy, so ptxas gives the kernel the registers it needs
    instead of capping them for more CTAs). Fields at their defaults are
    not printed.

    ```mlir
    #attn.tiling<block_m = 128, block_n = 64, num_warps = 4>
    ```
  }];
  let parameters = (ins "int64_t":$block_m, "int64_t":$block_n,
                        "int64_t":$num_warps,
                        DefaultValuedParameter<"int64_t", "0">:$stages,
                        DefaultValuedParameter<"bool", "true">:$peel_masked_blocks,
                        DefaultValuedParameter<"int64_t", "1">:$min_ctas_per_sm);
  let builders = [
    AttrBuilder<(ins "int64_t":$block_m, "int64_t":$block_n,
                     "int64_t":$num_warps), [{
      return $_get($_ctxt, block_m, block_n, num_warps, 0, true, 1);
    }]>
  ];
  let assemblyFormat = "`<` struct(params) `>`";
}

def Attn_ProblemAttr : Attn_Attr<"Problem", "problem"> {
  let summary = "What an attention kernel computes";
  let description = [{
    The PROBLEM fields of `attnrt/spec_fields.def` (dtype, head dim, mask,
    scale, soft cap, batch layout, KV cache), typed and in one place:
    `attn-tile` records the problem of the op it tiles on the kernel as
    `attn.problem`, the passes that depend on it (the persistent tile order,
    the lowering) read it there, `attn-to-nvvm` carries it to the lowered
    kernel and the launch metadata is written from it. Every field is
    printed, by its name in the table; the parser takes any subset (the
    others keep their defaults) and refuses an unknown name.

    The verifier runs the problem checks every request passes (head dim,
    scale, soft cap, window sides, the mask's rules), and a kernel's scale
    is spelled out (positive).

    ```mlir
    #attn.problem<dtype = bf16, head_dim = 128, causal = true,
                  scale = 0.08838834613561630, with_lse = true, ...>
    ```
  }];
  let parameters = (ins
    AttrParameter<"::mlir::attn::AttentionProblem",
                  "the problem's fields (attnrt/spec_fields.def)">:$value);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Attn_ScheduleAttr : Attn_Attr<"Schedule", "schedule"> {
  let summary = "Which FlashAttention techniques a kernel's schedule applies";
  let description = [{
    The SCHEDULE rows of `attnrt/spec_fields.def`, resolved for one kernel:
    block skipping (`attn-causal-blocks`), warp specialization, the
    intra-warpgroup overlap, pingpong, the TMA epilogue, the persistent
    grid, f32 denormal flushing, software exp2, the bounded softmax, the
    backward's longest-first CTA order and the persistent grid's Q prefetch.
    `attn-configure` chooses them (from the target, the problem and its
    options) and records them on the kernel function as `attn.schedule`;
    each technique's pass reads its switch there and leaves a kernel whose
    schedule turns it off as it is (a kernel without `attn.schedule`, as in
    a hand-written test, gets every pass that is run). The kernel name and
    its ablation suffixes are read off it.

    ```mlir
    #attn.schedule<block_skip = true, warp_specialize = true,
                   intra_wg_overlap = true, pingpong = true, tma_store = true,
                   persistent = false, flush_denormals = true,
                   exp2_emulated_eighths = 0, bounded_softmax = true,
                   longest_first = false, prefetch_q = false>
    ```
  }];
  let parameters = (ins
    AttrParameter<"::mlir::attn::AttentionSchedule",
                  "the schedule's switches (attnrt/spec_fields.def)">:$value);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Attn_GridDimAttr : Attn_Attr<"GridDim", "grid_dim"> {
  let summary = "One dimension of a kernel's tile space: ceil(size / tile)";
  let description = [{
    The number of tiles along one dimension of the work, `ceil(size / tile)`,
    where `size` is a problem size the runtime passes (`batch`, `nq`, `nk`,
    `num_heads`, `num_kv_heads`, and for a variable-length batch
    `max_seqlen_q`, the longest query sequence). An element of `#attn.grid`.

    With `times = S` the dimension holds `ceil(size / tile) * S` tiles: a
    split-KV kernel folds its key splits into the query-block dimension
    (`times = num_splits`), since CUDA grids have three dimensions and the
    tile space four (query block, split, head, batch).

    ```mlir
    #attn.grid_dim<size = nq, tile = 128>
    #attn.grid_dim<size = nq, tile = 16, times = num_splits>
    ```
  }];
  let parameters = (ins EnumParameter<Attn_SizeKind>:$size, "int64_t":$tile,
                        OptionalParameter<"std::optional<::mlir::attn::SizeKind>">:$times);
  let builders = [
    AttrBuilder<(ins "SizeKind":$size, "int64_t":$tile), [{
      return $_get($_ctxt, size, tile, std::nullopt);
    }]>
  ];
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_GridAttr : Attn_Attr<"Grid", "grid"> {
  let summary = "How a kernel's launch grid follows from the problem sizes";
  let description = [{
    Placed on a tile-program kernel as `attn.grid` by the pass that decides
    how work is split over CTAs (`attn-tile`), carried by `attn-to-nvvm` to
    the lowered kernel and written into the launch metadata, so the runtime
    computes the grid from the IR's rule instead of one of its own.

    `tiles` lists the tile space, one `#attn.grid_dim` per `attn.program_id`
    dimension (query block, head, batch for a forward kernel). With
    `ctas_per_sm = 0` the launch grid is the tile space itself; a persistent
    kernel (`ctas_per_sm > 0`) is launched with
    `min(ctas_per_sm * SMs, product of the tiles)` CTAs along x, each
    looping over tiles.

    The verifier checks 1 to 3 `#attn.grid_dim` elements with positive tiles
    and a non-negative `ctas_per_sm`.

    ```mlir
    #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 128>,
                        #attn.grid_dim<size = num_heads, tile = 1>,
                        #attn.grid_dim<size = batch, tile = 1>], ctas_per_sm = 0>
    ```
  }];
  let parameters = (ins "ArrayAttr":$tiles, "int64_t":$ctas_per_sm);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The element `i` of `tiles`.
    GridDimAttr getTile(unsigned i) {
      return ::llvm::cast<GridDimAttr>(getTiles()[i]);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

class Attn_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Attn_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Attn_SmemTileType : Attn_Type<"SmemTile", "smem"> {
  let summary = "A 2-D tile in shared memory with a swizzled layout";
  let description = [{
    A `rows x cols` tile of f16/bf16 in shared memory. With `swizzle = S`
    (32, 64 or 128 bytes) the tile is stored as `cols / (S / 2)` column
    panels of `rows x S/2` elements, one after the other (`rows * S` bytes
    apart); inside a panel each row is `S` contiguous bytes whose 16-byte
    chunks are permuted by the row index. This is the layout TMA's
    SWIZZLE_32B/64B/128B writes, wgmma's matching descriptors read and
    ldmatrix addressing (sm_80) reads without bank conflicts: the chunk bits
    [4, 4 + log2(S/16)) of an address are XORed with its bits [7, ...), i.e.
    `chunk' = chunk ^ ((row * S / 128) % (S / 16))`:

    ```
      swizzle = 128: panels of 64 columns, 8-row atom (1024 bytes)
        row 0: c0 c1 c2 c3 c4 c5 c6 c7
        row 1: c1 c0 c3 c2 c5 c4 c7 c6
        row 2: c2 c3 c0 c1 c6 c7 c4 c5
        ...    (row r: chunk c at position c ^ (r % 8))
      swizzle = 64: panels of 32 columns, 8-row atom (512 bytes)
        rows 0, 1: c0 c1 c2 c3
        rows 2, 3: c1 c0 c3 c2
        rows 4, 5: c2 c3 c0 c1
        rows 6, 7: c3 c2 c1 c0
      swizzle = 32: panels of 16 columns, 8-row atom (256 bytes)
        rows 0-3: c0 c1
        rows 4-7: c1 c0
                   (ci = 16-byte chunk i of the panel's logical row)
    ```

    A tile whose columns are not a multiple of 64 (head dim 96: three
    64-byte panels; 40: three 32-byte panels of a 48-column tile) takes the
    widest swizzle whose panel divides it (docs/DESIGN.md, "Head dims").
    `swizzle = 0` is an unswizzled row-major tile (no copy or MMA reads one).

    The verifier checks that the swizzle is 0, 32, 64 or 128 and that `cols`
    is a multiple of the panel width.

    ```mlir
    !attn.smem<128x128xbf16, swizzle = 128>
    !attn.smem<144x96xbf16, swizzle = 64>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "Type":$elementType, "int64_t":$swizzle);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRows() const { return getShape()[0]; }
    int64_t getCols() const { return getShape()[1]; }
    /// Bytes of one element.
    int64_t getElementBytes() const {
      return getElementType().getIntOrFloatBitWidth() / 8;
    }
    /// Bytes the tile occupies in shared memory.
    int64_t getSizeInBytes() const {
      return getRows() * getCols() * getElementBytes();
    }
    /// Columns of one swizzle panel (the whole row when unswizzled).
    int64_t getPanelCols() const {
      return getSwizzle() == 0 ? getCols() : getSwizzle() / getElementBytes();
    }
    /// Number of column panels.
    int64_t getNumPanels() const { return getCols() / getPanelCols(); }
    /// Bytes of one panel row (the swizzle span when swizzled).
    int64_t getPanelRowBytes() const {
      return getPanelCols() * getElementBytes();
    }
    /// Bytes from one panel to the next.
    int64_t getPanelBytes() const { return getRows() * getPanelRowBytes(); }
  }];
}

def Attn_RegTileType : Attn_Type<"RegTile", "regs"> {
  let summary = "A tile held in registers, spread over the CTA's threads";
  let description = [{
    `acc`: the f32 accumulator layout of mma.sync m16n8k16 / wgmma m64nNk16.
    `operand_a`: the A-operand (16-bit) layout of the same MMAs.
    `row`: a 1-D per-row vector (running max, running sum), held by the threads
    that own that row of an `acc` tile.
    `col`: a 1-D per-column vector, held by the threads that own that column
    of an `acc` tile (every warp holds all of it): the backward's LSE and
    delta where a tile's columns are queries.
    `lanes`: a 1-D per-column vector as loaded, before `attn.spread_cols`
    makes it a `col` one: lane `l` of every warp holds columns `64j + 2l`
    and `64j + 2l + 1` (two values per 64 columns), so it can be loaded a
    step ahead and carried across a loop in few registers.

    Per warp (16 rows x 8 columns per fragment), lane `l` holds

    ```
      acc:       (l/4, 2*(l%4)+{0,1})  and  (l/4+8, 2*(l%4)+{0,1})
      operand_a: the same rows, k = 2*(l%4)+{0,1} and 2*(l%4)+8+{0,1} per k16
    ```

    so an `acc` tile converts to `operand_a` in registers (no shuffles).

    ```mlir
    !attn.regs<128x64xf32, acc>
    !attn.regs<128xf32, row>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "Type":$elementType,
                        EnumParameter<Attn_FragmentKind>:$fragment);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRows() const { return getShape()[0]; }
    bool isRow() const { return getFragment() == FragmentKind::row; }
    bool isCol() const { return getFragment() == FragmentKind::col; }
    bool isLanes() const { return getFragment() == FragmentKind::lanes; }
    /// A 1-D vector spread as an `acc` tile's rows or columns.
    bool isVector() const { return isRow() || isCol(); }
  }];
}

def Attn_PipeType : Attn_Type<"Pipe", "pipe"> {
  let summary = "A ring of shared-memory tiles with full/empty barriers per stage";
  let description = [{
    `stages` buffers of one tile type, filled in order by a producer and
    drained in order by consumers. Fill `i` goes to stage `i % stages`; the
    phase of that stage's barriers is `(i / stages) % 2`, so a loop index is
    all the IR needs to name a fill. On sm_90a each stage has a `full`
    mbarrier (completed by the TMA transaction count) and an `empty` mbarrier
    (one arrival per consumer warp); see `attn.pipe_acquire`, `attn.pipe_load`,
    `attn.pipe_wait` and `attn.pipe_release`.

    ```mlir
    !attn.pipe<2, !attn.smem<128x128xbf16, swizzle = 128>>
    ```
  }];
  let parameters = (ins "int64_t":$stages, "SmemTileType":$buffer);
  let assemblyFormat = "`<` $stages `,` $buffer `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Variable-length batches
//===----------------------------------------------------------------------===//

def Attn_SeqType : Attn_Type<"Seq", "seq"> {
  let summary = "One sequence of a packed (variable-length) batch";
  let description = [{
    A packed batch stores its sequences one after the other along the rows of
    one tensor ([total, H, D], as `flash_attn_varlen_func` takes them):
    sequence `b` is rows `cu_seqlens[b] .. cu_seqlens[b+1] - 1`. A value of
    this type, made by `attn.sequence`, names those rows. Tile ops that
    address a packed tensor take it where a [B, N, H, D] tensor takes the
    batch index, and their `row` is then a row of the sequence: row `r` is
    row `cu_seqlens[b] + r` of the tensor, and the sequence's length plays
    the part of N (copies read rows past it as zero on sm_80, stores leave
    them alone).

    Lowered to two 32-bit values per thread, the first row and the length;
    it cannot flow through control flow (loop-carried, yielded).

    ```mlir
    %seq, %len = attn.sequence %cu_seqlens_q[%b] rows %total_q : memref<?xi32>
    ```
  }];
}

def Attn_Seq : Type<CPred<"::llvm::isa<::mlir::attn::SeqType>($_self)">,
                    "sequence of a packed batch", "::mlir::attn::SeqType">,
               BuildableType<"::mlir::attn::SeqType::get($_builder.getContext())">;
/// Where a tile op takes the batch: an index into a [B, N, H, D] tensor, or
/// the `!attn.seq` of one sequence of a packed [total, H, D] tensor.
def Attn_BatchIndex : AnyTypeOf<[Index, Attn_Seq]>;

#endif // ATTN_DIALECT_ATTNBASE_TD
