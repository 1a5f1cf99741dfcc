//===- Lowering.h - shared state of the tile-program lowering --*- C++ -*-===//
//
// The lowering walks a tile-program kernel once, in order, and emits LLVM and
// NVVM dialect ops. Register tiles become vectors of per-thread scalars in the
// MMA fragment layout below; shared-memory tiles become byte offsets into the
// dynamic shared memory; index values stay `index` until the final
// arith-to-llvm conversion.
//
// Fragment layout (shared by mma.sync m16n8k16 and wgmma m64nNk16): warp `w`
// of `W` owns the 16-row slices starting at 16*w + 16*W*t (t = "m-tile"), and
// lane `l` of a slice holds, for every 8-column block `n`:
//
//     i = 0: (l/4,     8n + 2(l%4))     i = 1: (l/4,     8n + 2(l%4) + 1)
//     i = 2: (l/4 + 8, 8n + 2(l%4))     i = 3: (l/4 + 8, 8n + 2(l%4) + 1)
//
// acc tile values:       index (t * nBlocks + n) * 4 + i        (f32)
// row vector values:     index t * 2 + (i >= 2)                 (f32)
// operand_a tile values: index (t * kSteps + k) * 4 + j         (i32 = 2 x 16-bit)
//   j = 0: rows l/4, k 2(l%4)..+1   j = 1: rows l/4+8, same k
//   j = 2: rows l/4, k 8+2(l%4)..   j = 3: rows l/4+8, k 8+2(l%4)..
// FP8 operand_a (k32 steps, i32 = 4 x e4m3, the lowest k in the low byte):
//   j = 0: rows l/4, k 4(l%4)..+3   j = 1: rows l/4+8, same k
//   j = 2: rows l/4, k 16+4(l%4)..  j = 3: rows l/4+8, k 16+4(l%4)..
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CODEGEN_LOWERING_H
#define ATTN_CODEGEN_LOWERING_H

#include "KernelAbi.h"
#include "attn/Dialect/AttnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <memory>

namespace mlir::attn {

/// Address spaces of the NVPTX backend.
constexpr unsigned kGlobalAddressSpace = 1;
constexpr unsigned kSharedAddressSpace = 3;
/// Bytes of one swizzle chunk (8 16-bit elements): the unit the swizzle
/// permutes, a cp.async copies and an ldmatrix row reads.
constexpr int64_t kChunkBytes = 16;
/// Address bit at which a swizzle's XOR source starts: chunks are permuted
/// by (byte offset / 128), i.e. by the row, every 128 / span rows.
constexpr int64_t kSwizzleLineBytes = 128;

/// Kernel parameters as values inside the lowered llvm.func, indexed by
/// tensor role (null where the kernel's ABI has no such parameter).
struct KernelParams {
  Value tma[kNumTensors];       ///< TMA descriptors (param pointers), sm_90a
  Value ptr[kNumTensors];       ///< global pointers
  Value stride[kNumTensors][3]; ///< element strides (b, n, h), i64
  Value batch, nq, nk, numHeads, numKvHeads; ///< i32
  Value maxSeqlenQ; ///< i32, varlen kernels only (their grid's query blocks)
  Value maxSeqlenK; ///< i32, the varlen backward's dkdv kernel (its grid)
  /// Decoding kernels: the key splits, a paged cache's block-table columns
  /// and pages (i32; null where the kernel takes no such size).
  Value numSplits, maxBlocks, numBlocks;
};

/// A sequence of a packed batch (an `!attn.seq`): its first row in the
/// packed tensor and its length, both i32.
struct SeqRows {
  Value start, length;
};

/// Where the rows of a tile op are in its tensor (all i32): the batch index
/// (null for a packed tensor, which has no batch dimension), the tile's
/// first row as a row of the tensor, and one past the last row that exists
/// (N, or the end of the sequence).
struct TileRows {
  Value batch, row, end;
};

/// A shared-memory tile buffer.
struct SmemBuffer {
  SmemTileType type;
  int64_t offset = 0;        ///< byte offset in the aligned dynamic smem
  int64_t barrierOffset = 0; ///< byte offset of its mbarrier (sm_90a)
  /// For a pipe stage chosen at run time: the i32 byte offset of the stage
  /// (`offset` is then unused).
  Value dynamicOffset;
};

/// A pipe: `stages` buffers of `stageBytes` (1024-byte aligned) from
/// `offset`, then `stages` full and `stages` empty mbarriers.
struct SmemPipe {
  PipeType type;
  int64_t offset = 0;
  int64_t stageBytes = 0;
  int64_t fullBarrierOffset = 0;
  int64_t emptyBarrierOffset = 0;
  /// Every consumer thread arrives on the empty barriers (not lane 0 of
  /// each consumer warp).
  bool perThreadRelease = false;
  /// Arrivals that complete a fill (0: one, the thread arming the TMA
  /// bytes) and that release a stage (0: the consumer warps or threads);
  /// FP8's transposing warps set both (attn-transpose-v).
  int64_t fillArrivals = 0;
  int64_t releaseArrivals = 0;
};

/// Geometry of a swizzled shared-memory tile (AttnBase.td draws the three
/// swizzles): `cols / panelCols` panels of `rows x rowBytes`, one after the
/// other; in a panel, 16-byte chunk c of row r sits at position
/// c ^ ((r >> xorShift) & xorMask).
struct SwizzleGeometry {
  int64_t rowBytes = 0;   ///< the swizzle span: 32, 64 or 128
  int64_t panelCols = 0;  ///< rowBytes / 2
  int64_t panelBytes = 0; ///< rows * rowBytes
  int64_t xorShift = 0;   ///< log2(128 / rowBytes)
  int64_t xorMask = 0;    ///< rowBytes / 16 - 1

  explicit SwizzleGeometry(SmemTileType type);
};

/// Elements of one MMA k step of an operand of `element`: 32 for FP8
/// (e4m3: wgmma k32), 16 for the 16-bit types.
inline int64_t operandKStep(Type element) {
  return isa<Float8E4M3FNType>(element) ? 32 : 16;
}

/// Geometry of a register tile's fragments for this kernel.
struct FragmentShape {
  int64_t mTiles = 0;  ///< 16-row slices per warp
  int64_t nBlocks = 0; ///< 8-column blocks (acc) or k steps (operand_a: 16
                       ///< columns, 32 of FP8)
};

class Lowering;

/// How `threads` threads cover the first F columns of a [rows x cols]
/// swizzled tile in 16-byte chunks, in the order the KV-cache copies and
/// zeroings use: C = the next power of two of F / 8 chunk slots a row
/// (slots past F / 8 idle), chunk c = thread + step * threads is row c / C,
/// column (c % C) * 8, i.e. rows firstRow + step * R with R = threads / C.
/// Every swizzle's XOR term depends on the row only through row % 8, which
/// repeats every P = 8 / gcd(R, 8) steps, so each chunk's shared-memory
/// offset is one of P per-thread bases plus an immediate. (F = D and F =
/// cols, D rounded up to 16, give the same C: a walk over the whole tile
/// has each thread on the chunks it copied.)
struct ChunkWalk {
  Value thread;             ///< i32, 0 .. threads - 1
  Value firstRow, col;      ///< i32: this thread's first row and its column
  int64_t threads = 0, rowsPerStep = 0, total = 0, period = 1;
  int64_t rowBytes = 0;        ///< the tile's swizzle span (bytes per row)
  SmallVector<Value> dstBases; ///< byte offsets of the first P steps' chunks
  /// i1: this thread's chunk slot is one of the filled columns' (null when
  /// every slot is).
  Value slotUsed;

  /// This thread's row (within the tile) at `step`.
  Value row(Lowering &l, int64_t step) const;
  /// The byte offset of this thread's chunk at `step`.
  Value dstOffset(Lowering &l, int64_t step) const;
  /// Runs `body(step)` for every step; the last one only on the threads
  /// that have a chunk there.
  void forEach(Lowering &l, llvm::function_ref<void(int64_t)> body) const;
};

/// State shared by the target-independent and the target lowerings.
class Lowering {
public:
  Lowering(OpBuilder &builder, Location loc, TargetKind target,
           TilingAttr tiling, Type elementType)
      : b(builder), loc(loc), target(target), tiling(tiling),
        elementType(elementType) {}

  OpBuilder &b;
  Location loc;
  TargetKind target;
  TilingAttr tiling;
  Type elementType; ///< f16 or bf16
  KernelParams params;
  Value tid, warp, lane; ///< i32 (warp: within the current warp role)
  Value smemBase;        ///< !llvm.ptr<3>, 1024-byte aligned
  int64_t smemBytes = 0; ///< dynamic shared memory the kernel needs

  llvm::DenseMap<Value, Value> scalars;
  llvm::DenseMap<Value, SmallVector<Value>> tiles;
  llvm::DenseMap<Value, SmemBuffer> buffers;
  llvm::DenseMap<Value, SmemPipe> pipes;
  /// Warps of the producer role (0 without warp specialization); the
  /// tiling's num_warps counts the consumer warps that own register tiles.
  int64_t producerWarps = 0;
  /// Inside the producer region: one elected thread runs the code, so
  /// copies need no `tid == 0` guard.
  bool singleThread = false;
  /// The buffers in allocation order (DenseMap order is not deterministic,
  /// and the emitted code must not depend on it).
  SmallVector<Value> bufferOrder;
  llvm::DenseMap<Value, Tensor> tensors;
  /// The lowered `!attn.seq` values.
  llvm::DenseMap<Value, SeqRows> seqs;
  /// Element type of each kernel tensor (null where the kernel has none).
  Type tensorElement[kNumTensors] = {};
  /// Rows per page of a paged KV cache (0: contiguous K and V).
  int64_t pageSize = 0;
  /// Lowers the ops of a nested block in place (the walker's, for ops with
  /// regions such as attn.warp_specialize).
  std::function<LogicalResult(Block &)> lowerBlock;

  int64_t numWarps() const { return tiling.getNumWarps(); }
  int64_t numThreads() const { return 32 * (numWarps() + producerWarps); }

  // Constants and casts.
  Value i32(int64_t v);
  Value i64(int64_t v);
  Value f32(float v);
  Value toI32(Value index);
  Value toI64(Value i32Value);
  /// The lowered form of a scalar (index) value of the tile program.
  Value scalar(Value v);

  /// i32 byte offset of `buffer` plus `extra` bytes.
  Value bufferOffset(const SmemBuffer &buffer, int64_t extra);
  /// Pointer `smemBase + offset` (i32 byte offset).
  Value smemPtr(Value byteOffset);
  /// Stores 16 zero bytes at shared-memory byte offset `byteOffset`.
  void zeroSharedChunk(Value byteOffset);
  /// The chunk walk of `threads` threads (this one is `thread`) over the
  /// first `filledCols` columns of `buffer` (0: all of them).
  ChunkWalk chunkWalk(const SmemBuffer &buffer, Value thread, int64_t threads,
                      int64_t filledCols = 0);
  /// Shared-memory address as a 32-bit integer (for descriptors).
  Value smemAddress(Value byteOffset);
  /// Byte offset of element (row, col) of a swizzled tile whose buffer
  /// starts at `base` (all i32; SwizzleGeometry's names, S = rowBytes):
  ///   panel = col / panelCols, chunk = (col % panelCols) / 8
  ///   base + panel * panelBytes + row * S
  ///        + ((chunk ^ ((row >> xorShift) & xorMask)) * 16) + (col % 8) * 2
  Value swizzledOffset(const SmemBuffer &buffer, Value row, Value col);
  /// The same offset for row = rowVar + rowConst, col = colVar + colConst
  /// where rowConst and colConst are multiples of 8 and 16, colVar is 0 or 8
  /// and colConst % panelCols + colVar < panelCols. The swizzle then splits
  /// into a per-thread part,
  /// `rowVar * S + 16 * ((colVar / 8) ^ ((rowVar >> xorShift) & xorMask))`,
  /// XORed with the constant chunk `(colConst % panelCols) / 8` (a multiple
  /// of 8 rows leaves the XOR source unchanged), plus a constant byte
  /// offset: a handful of per-thread registers serve every load and the
  /// rest folds into the instructions' immediate offsets.
  Value swizzledOffsetSplit(const SmemBuffer &buffer, Value rowVar,
                            int64_t rowConst, Value colVar, int64_t colConst);
  /// Global address of row `row` (i32), column `col` (i32) of head `head`,
  /// batch `batch` of a [B, N, H, D] tensor (element strides are i64; the
  /// element type is the tensor's); with a null `batch`, of a packed
  /// [total, H, D] tensor.
  Value globalAddress(Tensor tensor, Value batch, Value row, Value head,
                      Value col);
  /// The offset of element (batch, head, row) of a contiguous [B, H, Nq]
  /// f32 tensor (LSE, delta, the partial LSEs): (b * H + h) * Nq + row, in
  /// i64; with a null batch, of a packed batch's [H, total_q]:
  /// h * total_q + row.
  Value rowsOffset(Value batch, Value head, Value row);
  /// The rows a tile op with operands `batch` (an index or an `!attn.seq`)
  /// and `row` addresses in `tensor`.
  TileRows tileRows(Tensor tensor, Value batch, Value row);

  /// Whether `tensor` is indexed by query rows and heads (Q, O and the
  /// partial outputs) rather than key/value ones (K, V).
  static bool isQueryTensor(Tensor tensor) {
    return tensor == Tensor::Q || tensor == Tensor::O ||
           tensor == Tensor::OPartial || tensor == Tensor::Dout ||
           tensor == Tensor::Dq || tensor == Tensor::DqAccum;
  }
  /// Sequence length of a kernel tensor: Nq for Q and O, Nk for K and V.
  Value tensorRows(Tensor tensor) const {
    return isQueryTensor(tensor) ? params.nq : params.nk;
  }
  /// Bytes of one element of a kernel tensor (2 for f16/bf16, 4 for f32).
  int64_t elementBytes(Tensor tensor) const {
    Type t = tensorElement[static_cast<int>(tensor)];
    return t ? t.getIntOrFloatBitWidth() / 8 : 2;
  }
  /// The i32 entry `slot` (clamped to max_blocks - 1) of row `batch` of the
  /// block table: the page holding a paged cache's logical rows
  /// [slot * page_size, (slot + 1) * page_size).
  Value loadPage(Value batch, Value slot);
  /// A fragment row (i32, within the tile) of a tile packing `headPack`
  /// heads: its head offset `row / P` and its position `row % P`, with
  /// P = tile rows / headPack (1 head: 0 and the row).
  std::pair<Value, Value> packedRow(Value row, int64_t rows, int64_t headPack);
  /// Fragment row (t, h) of a `rows`-row tile packing `headPack` heads in
  /// global terms: its row from `row0` and head from `head0`, and whether
  /// the row lies before `end` (rows past it are not stored or loaded).
  struct GlobalRow {
    Value row, head, inside;
  };
  GlobalRow globalFragmentRow(int64_t t, int64_t h, int64_t rows,
                              int64_t headPack, Value row0, Value head0,
                              Value end);

  FragmentShape fragmentShape(RegTileType type) const;
  /// This warp's warpgroup among the warps of its role, as i32.
  Value warpgroupIndex();
  /// The row (within the tile) lane holds for m-tile t, half h (0/1), as i32.
  Value fragmentRow(int64_t t, int64_t h);
  /// The column (within the tile) for 8-column block n, element e (0/1).
  Value fragmentCol(int64_t n, int64_t e);

  /// Emits scf.if(cond) { body } with no results.
  void emitIf(Value cond, llvm::function_ref<void()> body);
  /// `value` combined across the four lanes that share a fragment row (two
  /// butterfly shuffles, 1 and 2): every lane gets the row's total.
  Value combineRowLanes(Value value,
                        llvm::function_ref<Value(Value, Value)> combine);
};

} // namespace mlir::attn

#endif // ATTN_CODEGEN_LOWERING_H
