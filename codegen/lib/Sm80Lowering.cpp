//===- Sm80Lowering.cpp - copies and MMAs for sm_80 (A100 class) ----------===//
//
//   attn.copy_async -> cp.async.cg.shared.global 16-byte chunks (zero-filled
//                      past the end of the sequence, a packed batch's
//                      included; a tile padded past the head dim has its
//                      padding zeroed once at entry), cp.async.commit_group
//   attn.wait       -> cp.async.wait_group 0; bar.sync 0
//   attn.pipe_load  -> the same chunks into stage fill % stages, one
//                      commit group per fill (empty when its `if` is false)
//   attn.pipe_wait  -> cp.async.wait_group pending (the attn.barrier after
//                      it, placed by attn-multibuffer, makes it CTA-wide)
//   pipe_acquire/release -> nothing: the barriers order refills
//   attn.mma        -> ldmatrix.x4 (.trans for a row-major B; .x2 for an odd
//                      last 8-column block) + mma.sync m16n8k16, each warp
//                      on its own 16-row slices
//                      (FlashAttention-2's split-Q: warps never exchange data)
//   attn.dq_mma     -> bar.sync; the same, K^T read with ldmatrix.trans
//   attn.accumulate_dq -> bar.sync; red.global.add.f32 per value
//
//===----------------------------------------------------------------------===//
#include "LoweringTable.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Elements of one cp.async chunk (kChunkBytes of 16-bit elements).
constexpr int64_t kChunkElements = 8;
/// Rows after which every swizzle's XOR pattern repeats (the XOR source is
/// row % 8 for 128 bytes, row / 2 % 4 for 64, row / 4 % 2 for 32).
constexpr int64_t kSwizzleRows = 8;

/// The buffer of the stage of fill `fill` (fill % stages), its offset known
/// at run time.
SmemBuffer stageBuffer(Lowering &l, const SmemPipe &pipe, Value fill) {
  Value stage = arith::RemUIOp::create(l.b, l.loc, l.toI32(l.scalar(fill)),
                                       l.i32(pipe.type.getStages()));
  SmemBuffer buffer;
  buffer.type = pipe.type.getBuffer();
  buffer.dynamicOffset = arith::AddIOp::create(
      l.b, l.loc, l.i32(pipe.offset),
      arith::MulIOp::create(l.b, l.loc, stage, l.i32(pipe.stageBytes)));
  return buffer;
}

/// The source head dim of a copy into a tile: the columns it fills (the
/// tile may be padded past them to whole swizzle panels).
int64_t sourceHeadDim(Value src) {
  return cast<MemRefType>(src.getType()).getShape().back();
}

/// Runs `body(chunk)` for chunk = tid, tid + T, ... below `total` (T the
/// CTA's threads), guarding the last round when T does not divide it.
void forEachChunk(Lowering &l, int64_t total,
                  llvm::function_ref<void(Value)> body) {
  OpBuilder &b = l.b;
  int64_t threads = l.numThreads();
  for (int64_t first = 0; first < total; first += threads) {
    auto emit = [&] {
      body(arith::AddIOp::create(b, l.loc, l.tid, l.i32(first)));
    };
    if (first + threads <= total) {
      emit();
      continue;
    }
    l.emitIf(arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::ult, l.tid,
                                   l.i32(total - first)),
             emit);
  }
}

/// Zeroes the columns of `tile` from `filled` on (its padding), every row.
void zeroPadding(Lowering &l, const SmemBuffer &tile, int64_t filled) {
  OpBuilder &b = l.b;
  int64_t padChunks = (tile.type.getCols() - filled) / kChunkElements;
  if (padChunks == 0)
    return;
  Value zero =
      LLVM::ZeroOp::create(b, l.loc, VectorType::get({4}, b.getI32Type()));
  forEachChunk(l, tile.type.getRows() * padChunks, [&](Value chunk) {
    Value r = arith::DivUIOp::create(b, l.loc, chunk, l.i32(padChunks));
    Value c = arith::AddIOp::create(
        b, l.loc,
        arith::MulIOp::create(
            b, l.loc, arith::RemUIOp::create(b, l.loc, chunk, l.i32(padChunks)),
            l.i32(kChunkElements)),
        l.i32(filled));
    LLVM::StoreOp::create(b, l.loc, zero,
                          l.smemPtr(l.swizzledOffset(tile, r, c)),
                          /*alignment=*/kChunkBytes);
  });
}

/// Zeroes, once at kernel entry, the columns of each tile (each stage of a
/// pipe) past the head dim D its copies fill: a tile padded to whole
/// swizzle panels, 8 columns when D is an odd multiple of 8. The copies
/// never write them, so they stay zero across every refill, and the k
/// steps of Q K^T that reach into them add 0. (Zero-filling them in every
/// copy instead kept a loop-invariant predicate per chunk live across the
/// key loop: up to 28 bytes of spills.) The first wait's barrier orders
/// these stores before any MMA reads them.
LogicalResult lowerPrologue(Lowering &l) {
  for (Value buffer : l.bufferOrder) {
    SmemTileType type = isa<PipeType>(buffer.getType())
                            ? cast<PipeType>(buffer.getType()).getBuffer()
                            : cast<SmemTileType>(buffer.getType());
    int64_t filled = type.getCols();
    for (Operation *user : buffer.getUsers()) {
      if (auto copy = dyn_cast<CopyAsyncOp>(user);
          copy && copy.getDst() == buffer)
        filled = std::min(filled, sourceHeadDim(copy.getSrc()));
      if (auto load = dyn_cast<PipeLoadOp>(user);
          load && load.getPipe() == buffer)
        filled = std::min(filled, sourceHeadDim(load.getSrc()));
    }
    if (filled == type.getCols())
      continue;
    if (auto pipe = l.pipes.find(buffer); pipe != l.pipes.end()) {
      for (int64_t stage = 0; stage < pipe->second.type.getStages(); ++stage) {
        SmemBuffer tile;
        tile.type = type;
        tile.offset = pipe->second.offset + stage * pipe->second.stageBytes;
        zeroPadding(l, tile, filled);
      }
      continue;
    }
    zeroPadding(l, l.buffers[buffer], filled);
  }
  return success();
}

/// The `headDim` columns a copy fills of a [rows x C] tile (C >= headDim:
/// the padding was zeroed at entry) are 16-byte chunks, spread over the
/// threads: consecutive threads read consecutive 16 bytes of a row
/// (coalesced), and write them to the swizzled chunk positions (no bank
/// conflicts for the later ldmatrix). Issues the chunks only (no commit).
///
/// A row takes C' = the next power of two of headDim / 8 chunk slots (slots
/// past headDim / 8 idle: a thread whose slot is one skips the copy).
/// Thread t copies column (t % C') * 8 of rows r0 + i * R, r0 = t / C',
/// R = T / C' rows per step. The swizzle's XOR term depends on the row only
/// through row % 8, which repeats every P = 8 / gcd(R, 8) steps, so every
/// destination is one of P per-thread offsets plus an immediate; every
/// source is the thread's first address plus i * R rows; and a row is
/// inside the tensor when i * R is below the thread's remaining row count.
/// That keeps the per-chunk code to an add, a compare and two selects, and
/// the loop's live registers to a few. (With headDim / 8 slots a row, e.g.
/// 31 at d248, every step's row and column differed and stayed live across
/// the key loop: up to 336 bytes of spills.)
void copyChunks(Lowering &l, const SmemBuffer &buffer, Tensor tensor,
                int64_t headDim, Value batchIndex, Value rowIndex,
                Value headIndex) {
  OpBuilder &b = l.b;
  SwizzleGeometry g(buffer.type);
  int64_t rows = buffer.type.getRows();
  int64_t filledChunks = headDim / kChunkElements;
  int64_t chunksPerRow = llvm::PowerOf2Ceil(filledChunks);
  int64_t total = rows * chunksPerRow;
  int64_t threads = l.numThreads();
  // Warps hold 32 threads and rows at most 32 chunk slots: R is whole.
  assert(threads % chunksPerRow == 0 && "a step must cover whole rows");
  int64_t rowsPerStep = threads / chunksPerRow;
  int64_t period = kSwizzleRows / std::gcd(rowsPerStep, kSwizzleRows);
  Value head = l.toI32(l.scalar(headIndex));
  // Rows past N (past the sequence's end in a packed batch) read as zero.
  TileRows tileRows = l.tileRows(tensor, batchIndex, rowIndex);
  Value batch = tileRows.batch;
  Value row0 = tileRows.row;
  Value numRows = tileRows.end;
  Value slot = arith::RemUIOp::create(b, l.loc, l.tid, l.i32(chunksPerRow));
  auto emitCopy = [&] {
    Value firstRow =
        arith::DivUIOp::create(b, l.loc, l.tid, l.i32(chunksPerRow));
    Value col = arith::MulIOp::create(b, l.loc, slot, l.i32(kChunkElements));
    Value row = arith::AddIOp::create(b, l.loc, row0, firstRow);
    // Rows from this thread's first one to the end of the tensor (signed:
    // negative when the tile starts past it).
    Value remaining = arith::SubIOp::create(b, l.loc, numRows, row);
    Value src = l.globalAddress(tensor, batch, row, head, col);
    Value rowStride = l.params.stride[static_cast<int>(tensor)][1];
    SmallVector<Value> dstBases;
    for (int64_t p = 0; p < period; ++p)
      dstBases.push_back(l.swizzledOffset(
          buffer,
          arith::AddIOp::create(b, l.loc, firstRow, l.i32(p * rowsPerStep)),
          col));
    auto globalPtr =
        LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
    for (int64_t step = 0; step * threads < total; ++step) {
      auto emitChunk = [&] {
        Value valid =
            arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::sgt,
                                  remaining, l.i32(step * rowsPerStep));
        Value stepSrc = LLVM::GEPOp::create(
            b, l.loc, globalPtr, b.getI16Type(), src,
            ValueRange{arith::MulIOp::create(b, l.loc, rowStride,
                                             l.i64(step * rowsPerStep))});
        // Past the end: read 0 bytes (the chunk is zero-filled) from the
        // tensor's base, a valid address.
        Value safeSrc = arith::SelectOp::create(
            b, l.loc, valid, stepSrc, l.params.ptr[static_cast<int>(tensor)]);
        int64_t rowOffset = (step / period) * period * rowsPerStep;
        Value dst = l.smemPtr(arith::AddIOp::create(
            b, l.loc, dstBases[step % period], l.i32(rowOffset * g.rowBytes)));
        Value srcBytes = arith::SelectOp::create(b, l.loc, valid,
                                                 l.i32(kChunkBytes), l.i32(0));
        NVVM::CpAsyncOp::create(b, l.loc, dst, safeSrc, kChunkBytes,
                                NVVM::LoadCacheModifierKind::CG, srcBytes);
      };
      int64_t first = step * threads;
      if (first + threads <= total) {
        emitChunk();
      } else {
        Value inRange = arith::CmpIOp::create(
            b, l.loc, arith::CmpIPredicate::ult, l.tid, l.i32(total - first));
        l.emitIf(inRange, emitChunk);
      }
    }
  };
  if (chunksPerRow == filledChunks)
    return emitCopy();
  l.emitIf(arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::ult, slot,
                                 l.i32(filledChunks)),
           emitCopy);
}

/// The chunks of a tile that packs `headPack` heads or reads a paged cache
/// (`pages`): each chunk's source row is computed on its own (a packed
/// row's head and position; a paged row's page from the block table, whose
/// pages outside [0, num_blocks) read as zeros), except in a tile that lies
/// in one page, whose page is looked up once, and one that covers whole
/// pages, whose pages are looked up once each. Rows past N read as zero.
/// A paged tile's first row is a multiple of its rows (attn-tile and
/// attn-causal-blocks place key blocks at multiples of block_n, which the
/// pages divide or hold whole).
void copyChunksMapped(Lowering &l, const SmemBuffer &buffer, Tensor tensor,
                      int64_t headDim, Value batchIndex, Value rowIndex,
                      Value headIndex, Value pages, int64_t headPack) {
  OpBuilder &b = l.b;
  int64_t rows = buffer.type.getRows();
  ChunkWalk walk = l.chunkWalk(buffer, l.tid, l.numThreads(), headDim);
  Value batch = l.toI32(l.scalar(batchIndex));
  Value head = l.toI32(l.scalar(headIndex));
  Value row0 = l.toI32(l.scalar(rowIndex));
  Value base = l.params.ptr[static_cast<int>(tensor)];
  if (pages && l.pageSize % rows == 0) {
    // The tile lies in one page (its first row is a multiple of its
    // rows): one block-table lookup and one address per thread,
    // each step a constant number of rows further, as in copyChunks. (A
    // lookup per chunk kept 16 page indices live at d256: 52 bytes of
    // spills on sm_80.)
    Value page = l.loadPage(
        batch, arith::DivUIOp::create(b, l.loc, row0, l.i32(l.pageSize)));
    Value valid = arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::ult,
                                        page, l.params.numBlocks);
    Value firstRow = arith::AddIOp::create(
        b, l.loc, arith::RemUIOp::create(b, l.loc, row0, l.i32(l.pageSize)),
        walk.firstRow);
    Value src = l.globalAddress(tensor, page, firstRow, head, walk.col);
    Value rowStride = l.params.stride[static_cast<int>(tensor)][1];
    Value srcBytes = arith::SelectOp::create(b, l.loc, valid,
                                             l.i32(kChunkBytes), l.i32(0));
    auto globalPtr =
        LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
    walk.forEach(l, [&](int64_t step) {
      Value stepSrc = LLVM::GEPOp::create(
          b, l.loc, globalPtr, b.getI16Type(), src,
          ValueRange{arith::MulIOp::create(b, l.loc, rowStride,
                                           l.i64(step * walk.rowsPerStep))});
      // A page outside the cache reads 0 bytes from the tensor's base.
      Value safeSrc = arith::SelectOp::create(b, l.loc, valid, stepSrc, base);
      NVVM::CpAsyncOp::create(b, l.loc, l.smemPtr(walk.dstOffset(l, step)),
                              safeSrc, kChunkBytes,
                              NVVM::LoadCacheModifierKind::CG, srcBytes);
    });
    return;
  }
  if (pages && rows % l.pageSize == 0 && l.pageSize % walk.rowsPerStep == 0) {
    // The tile covers whole pages and a step's rows lie in one page: the
    // page of step s is slot row0 / page_size + s * rowsPerStep /
    // page_size, known when the step is emitted, so each page a thread
    // touches is looked up once (rows / page_size loads, not one per
    // chunk: those spilled 56-112 bytes at d128 with 16- and 32-row
    // pages) and its steps are constant row offsets from one address.
    Value slot0 = arith::DivUIOp::create(b, l.loc, row0, l.i32(l.pageSize));
    Value rowStride = l.params.stride[static_cast<int>(tensor)][1];
    auto globalPtr =
        LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
    SmallVector<Value> pageSrc, pageBytes;
    for (int64_t p = 0; p < rows / l.pageSize; ++p) {
      Value page = l.loadPage(
          batch, arith::AddIOp::create(b, l.loc, slot0, l.i32(p)));
      Value valid = arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::ult,
                                          page, l.params.numBlocks);
      // A page outside the cache reads 0 bytes from the tensor's base.
      pageSrc.push_back(arith::SelectOp::create(
          b, l.loc, valid,
          l.globalAddress(tensor, page, walk.firstRow, head, walk.col), base));
      pageBytes.push_back(arith::SelectOp::create(
          b, l.loc, valid, l.i32(kChunkBytes), l.i32(0)));
    }
    walk.forEach(l, [&](int64_t step) {
      int64_t first = step * walk.rowsPerStep;
      int64_t p = first / l.pageSize;
      Value src = LLVM::GEPOp::create(
          b, l.loc, globalPtr, b.getI16Type(), pageSrc[p],
          ValueRange{arith::MulIOp::create(b, l.loc, rowStride,
                                           l.i64(first % l.pageSize))});
      NVVM::CpAsyncOp::create(b, l.loc, l.smemPtr(walk.dstOffset(l, step)),
                              src, kChunkBytes, NVVM::LoadCacheModifierKind::CG,
                              pageBytes[p]);
    });
    return;
  }
  walk.forEach(l, [&](int64_t step) {
    Value rowInTile = walk.row(l, step);
    Value srcBatch = batch, srcRow, srcHead = head, valid;
    if (pages) {
      Value logical = arith::AddIOp::create(b, l.loc, row0, rowInTile);
      Value slot = arith::DivUIOp::create(b, l.loc, logical, l.i32(l.pageSize));
      srcRow = arith::RemUIOp::create(b, l.loc, logical, l.i32(l.pageSize));
      srcBatch = l.loadPage(batch, slot);
      valid = arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::ult,
                                    srcBatch, l.params.numBlocks);
    } else {
      auto [headOffset, position] = l.packedRow(rowInTile, rows, headPack);
      srcRow = arith::AddIOp::create(b, l.loc, row0, position);
      srcHead = arith::AddIOp::create(b, l.loc, head, headOffset);
      valid = arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::slt,
                                    srcRow, l.tensorRows(tensor));
    }
    Value src = l.globalAddress(tensor, srcBatch, srcRow, srcHead, walk.col);
    Value safeSrc = arith::SelectOp::create(b, l.loc, valid, src, base);
    Value srcBytes = arith::SelectOp::create(b, l.loc, valid,
                                             l.i32(kChunkBytes), l.i32(0));
    NVVM::CpAsyncOp::create(b, l.loc, l.smemPtr(walk.dstOffset(l, step)),
                            safeSrc, kChunkBytes,
                            NVVM::LoadCacheModifierKind::CG, srcBytes);
  });
}

/// The copy of one tile (plain, packed or paged), without the commit.
void copyTile(Lowering &l, const SmemBuffer &buffer, Tensor tensor,
              int64_t headDim, Value batch, Value row, Value head, Value pages,
              int64_t headPack) {
  if (pages || headPack > 1)
    copyChunksMapped(l, buffer, tensor, headDim, batch, row, head, pages,
                     headPack);
  else
    copyChunks(l, buffer, tensor, headDim, batch, row, head);
}

/// Zeroes the chunks of rows [from, rows) that this thread copied, once its
/// cp.async groups landed and before the barrier that makes them visible:
/// no other thread writes those chunks, so no further barrier is needed.
void zeroOwnChunksFrom(Lowering &l, const SmemBuffer &buffer, Value from) {
  OpBuilder &b = l.b;
  Value pending = arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::slt,
                                        from, l.i32(buffer.type.getRows()));
  l.emitIf(pending, [&] {
    ChunkWalk walk = l.chunkWalk(buffer, l.tid, l.numThreads());
    walk.forEach(l, [&](int64_t step) {
      Value zero = arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::sge,
                                         walk.row(l, step), from);
      l.emitIf(zero, [&] { l.zeroSharedChunk(walk.dstOffset(l, step)); });
    });
  });
}

LogicalResult lowerCopy(Lowering &l, CopyAsyncOp op) {
  copyTile(l, l.buffers[op.getDst()], l.tensors.lookup(op.getSrc()),
           sourceHeadDim(op.getSrc()), op.getBatch(), op.getRow(),
           op.getHead(), op.getPages(), op.headPack());
  NVVM::CpAsyncCommitGroupOp::create(l.b, l.loc);
  return success();
}

/// The group commits whether or not the fill copies anything, so that
/// wait_group counts hold on every path.
LogicalResult lowerPipeLoad(Lowering &l, PipeLoadOp op) {
  auto tensor = l.tensors.find(op.getSrc());
  if (tensor == l.tensors.end())
    return op.emitOpError("loads from a value that is not a kernel tensor");
  SmemBuffer buffer = stageBuffer(l, l.pipes[op.getPipe()], op.getFill());
  auto copy = [&] {
    copyTile(l, buffer, tensor->second, sourceHeadDim(op.getSrc()),
             op.getBatch(), op.getRow(), op.getHead(), op.getPages(),
             op.headPack());
  };
  if (Value valid = op.getValid())
    l.emitIf(l.scalar(valid), copy);
  else
    copy();
  NVVM::CpAsyncCommitGroupOp::create(l.b, l.loc);
  return success();
}

LogicalResult lowerPipeWait(Lowering &l, PipeWaitOp op) {
  std::optional<int64_t> pending = op.getPending();
  if (!pending)
    return op.emitOpError("has no 'pending' group count; run "
                          "attn-multibuffer to schedule sm_80 pipes");
  NVVM::CpAsyncWaitGroupOp::create(l.b, l.loc, *pending);
  SmemBuffer buffer = stageBuffer(l, l.pipes[op.getPipe()], op.getFill());
  if (Value from = op.getZeroFrom())
    zeroOwnChunksFrom(l, buffer, l.toI32(l.scalar(from)));
  l.buffers[op.getBuffer()] = buffer;
  return success();
}

LogicalResult lowerWait(Lowering &l, WaitOp op) {
  NVVM::CpAsyncWaitGroupOp::create(l.b, l.loc, 0);
  if (Value from = op.getZeroFrom())
    zeroOwnChunksFrom(l, l.buffers[op.getBuffer()], l.toI32(l.scalar(from)));
  NVVM::Barrier0Op::create(l.b, l.loc);
  return success();
}

/// ldmatrix.x4 (or .x2) of four (two) 8x8 16-bit matrices; lane l supplies
/// the address of row l % 8 of matrix l / 8 (lanes 16-31 are unused by .x2).
/// Rows are `rowVar + rowConst`, columns `colVar + colConst` (see
/// Lowering::swizzledOffsetSplit).
SmallVector<Value> loadMatrices(Lowering &l, const SmemBuffer &buffer,
                                Value rowVar, int64_t rowConst, Value colVar,
                                int64_t colConst, bool transpose,
                                int64_t count = 4, Value extraBytes = {}) {
  OpBuilder &b = l.b;
  MLIRContext *ctx = b.getContext();
  Value offset =
      l.swizzledOffsetSplit(buffer, rowVar, rowConst, colVar, colConst);
  if (extraBytes)
    offset = arith::AddIOp::create(b, l.loc, offset, extraBytes);
  Value ptr = l.smemPtr(offset);
  Type i32 = b.getI32Type();
  auto structType =
      LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(count, i32));
  Value result = NVVM::LdMatrixOp::create(
      b, l.loc, structType, ptr, count,
      transpose ? NVVM::MMALayout::col : NVVM::MMALayout::row,
      NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8), NVVM::LdStMatrixEltType::B16);
  SmallVector<Value> regs;
  for (int64_t i = 0; i < count; ++i)
    regs.push_back(LLVM::ExtractValueOp::create(b, l.loc, result, i));
  return regs;
}

/// mma.sync operands: bf16 pairs stay i32, f16 pairs are vector<2xf16>.
Value asMultiplicand(Lowering &l, Value packed) {
  if (l.elementType.isBF16())
    return packed;
  return LLVM::BitcastOp::create(l.b, l.loc,
                                 VectorType::get({2}, l.b.getF16Type()),
                                 packed);
}

/// The operands of one mma.sync product: A from registers (`aRegs`) or a
/// shared-memory tile (`aBuffer`, [M, K], or [K, M] with `transposeA`), B
/// from a shared-memory tile ([K, N], or [N, K] with `transposeB`).
struct MmaSyncOperands {
  const SmallVector<Value> *aRegs = nullptr;
  const SmemBuffer *aBuffer = nullptr;
  bool transposeA = false;
  const SmemBuffer *bBuffer = nullptr;
  bool transposeB = false;
};

/// C (+)= A B with mma.sync m16n8k16, each warp on its own 16-row slices of
/// `resultType` (rows 16 w + 16 W t), from the accumulator `acc` (empty:
/// zeros).
SmallVector<Value> mmaSync(Lowering &l, RegTileType resultType,
                           const MmaSyncOperands &ops, SmallVector<Value> acc) {
  OpBuilder &b = l.b;
  MLIRContext *ctx = b.getContext();
  FragmentShape shape = l.fragmentShape(resultType);
  int64_t nBlocks = shape.nBlocks;
  const SmemBuffer &bBuffer = *ops.bBuffer;
  bool transposeB = ops.transposeB;
  int64_t k = transposeB ? bBuffer.type.getCols() : bBuffer.type.getRows();
  int64_t kSteps = k / 16;
  if (acc.empty())
    acc.assign(shape.mTiles * nBlocks * 4, l.f32(0.0f));

  // Lane-dependent parts of the ldmatrix addresses.
  Value lane8 = arith::AndIOp::create(b, l.loc, l.lane, l.i32(7));
  Value matrixLow = arith::AndIOp::create(
      b, l.loc, arith::ShRUIOp::create(b, l.loc, l.lane, l.i32(3)), l.i32(1));
  Value matrixHigh = arith::ShRUIOp::create(b, l.loc, l.lane, l.i32(4));
  // Rows l%8 + 8*((l/8)%2), columns 8*(l/16): A fragments and transposed B.
  Value rowInStep = arith::AddIOp::create(
      b, l.loc, lane8, arith::ShLIOp::create(b, l.loc, matrixLow, l.i32(3)));
  Value colInStep = arith::ShLIOp::create(b, l.loc, matrixHigh, l.i32(3));
  // Rows l%8 + 8*(l/16), columns 8*((l/8)%2): B stored [N, K], and A
  // stored [K, M] (matrix j of an A fragment is its m-half j % 2 and
  // k-half j / 2, read transposed).
  Value rowInPair = arith::AddIOp::create(
      b, l.loc, lane8, arith::ShLIOp::create(b, l.loc, matrixHigh, l.i32(3)));
  Value colInPair = arith::ShLIOp::create(b, l.loc, matrixLow, l.i32(3));
  Value warpRow = arith::MulIOp::create(b, l.loc, l.warp, l.i32(16));
  Value aRow = arith::AddIOp::create(b, l.loc, warpRow, rowInStep);
  // A stored [K, M]: the warp's 16 columns of a slice join the per-thread
  // part. Where a slice spans several swizzle panels (16 W > panel
  // columns; both powers of two), the warp's panel is a per-warp byte
  // offset and its columns within the panel the per-thread part.
  Value aCol, aPanelBytes;
  if (ops.aBuffer && ops.transposeA) {
    SwizzleGeometry g(ops.aBuffer->type);
    Value warpCol = warpRow;
    if (16 * l.numWarps() > g.panelCols) {
      warpCol =
          arith::AndIOp::create(b, l.loc, warpRow, l.i32(g.panelCols - 1));
      aPanelBytes = arith::MulIOp::create(
          b, l.loc,
          arith::ShRUIOp::create(b, l.loc, warpRow,
                                 l.i32(llvm::Log2_64(g.panelCols))),
          l.i32(g.panelBytes));
    }
    aCol = arith::AddIOp::create(b, l.loc, warpCol, colInPair);
  }

  Type f32 = b.getF32Type();
  auto accStruct = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
  NVVM::MMATypes ptxType = l.elementType.isBF16() ? NVVM::MMATypes::bf16
                                                  : NVVM::MMATypes::f16;
  for (int64_t ks = 0; ks < kSteps; ++ks) {
    // A fragments of every m-tile for this k step.
    SmallVector<SmallVector<Value>> aFrags;
    for (int64_t t = 0; t < shape.mTiles; ++t) {
      int64_t sliceRow = 16 * l.numWarps() * t;
      if (ops.aBuffer && ops.transposeA) {
        aFrags.push_back(loadMatrices(l, *ops.aBuffer, rowInPair, 16 * ks, aCol,
                                      sliceRow, true, 4, aPanelBytes));
      } else if (ops.aBuffer) {
        aFrags.push_back(loadMatrices(l, *ops.aBuffer, aRow, sliceRow,
                                      colInStep, 16 * ks, false));
      } else {
        const SmallVector<Value> &regs = *ops.aRegs;
        int64_t base = (t * kSteps + ks) * 4;
        aFrags.push_back({regs[base], regs[base + 1], regs[base + 2],
                          regs[base + 3]});
      }
    }
    // B fragments of two 8-column blocks per ldmatrix.x4; an odd last block
    // (a head dim of 8 * odd columns) takes an ldmatrix.x2.
    for (int64_t np = 0; np < (nBlocks + 1) / 2; ++np) {
      int64_t halves = std::min<int64_t>(2, nBlocks - 2 * np);
      SmallVector<Value> bRegs;
      if (transposeB)
        bRegs = loadMatrices(l, bBuffer, rowInPair, 16 * np, colInPair, 16 * ks,
                             false, 2 * halves);
      else
        bRegs = loadMatrices(l, bBuffer, rowInStep, 16 * ks, colInStep, 16 * np,
                             true, 2 * halves);
      for (int64_t t = 0; t < shape.mTiles; ++t)
        for (int64_t half = 0; half < halves; ++half) {
          int64_t n = 2 * np + half;
          int64_t base = (t * nBlocks + n) * 4;
          SmallVector<Value> aOps, bOps;
          for (Value a : aFrags[t])
            aOps.push_back(asMultiplicand(l, a));
          bOps.push_back(asMultiplicand(l, bRegs[2 * half]));
          bOps.push_back(asMultiplicand(l, bRegs[2 * half + 1]));
          SmallVector<Value> cOps(acc.begin() + base, acc.begin() + base + 4);
          Value d = NVVM::MmaOp::create(
              b, l.loc, accStruct, aOps, bOps, cOps, {16, 8, 16},
              std::nullopt, std::nullopt,
              std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
              std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                             NVVM::MMALayout::col});
          for (int64_t i = 0; i < 4; ++i)
            acc[base + i] = LLVM::ExtractValueOp::create(b, l.loc, d, i);
        }
    }
  }
  return acc;
}

LogicalResult lowerMma(Lowering &l, MmaOp op) {
  MmaSyncOperands ops;
  if (isa<SmemTileType>(op.getA().getType()))
    ops.aBuffer = &l.buffers[op.getA()];
  else
    ops.aRegs = &l.tiles[op.getA()];
  ops.bBuffer = &l.buffers[op.getB()];
  ops.transposeB = op.getTransposeB();
  SmallVector<Value> acc;
  if (op.getAcc())
    acc = l.tiles[op.getAcc()];
  l.tiles[op] = mmaSync(l, cast<RegTileType>(op.getType()), ops, acc);
  return success();
}

/// attn.dq_mma: a barrier (every warp wrote its rows of dS^T), then
/// dQ^T = K^T dS^T, K^T read transposed from the K tile, and dS^T [keys x
/// queries] a B stored [K, N].
LogicalResult lowerDqMma(Lowering &l, DqMmaOp op) {
  const SmemBuffer &kBuffer = l.buffers[op.getK()];
  SwizzleGeometry g(kBuffer.type);
  int64_t sliceCols = 16 * l.numWarps();
  if (!llvm::isPowerOf2_64(l.numWarps()) || sliceCols > 16 * 8)
    return op.emitOpError()
           << "splits the head dim into 16-row slices of 1, 2, 4 or 8 "
              "warps, not "
           << l.numWarps();
  NVVM::Barrier0Op::create(l.b, l.loc);
  MmaSyncOperands ops;
  ops.aBuffer = &kBuffer;
  ops.transposeA = true;
  ops.bBuffer = &l.buffers[op.getDs()];
  l.tiles[op] = mmaSync(l, cast<RegTileType>(op.getType()), ops, {});
  return success();
}

/// attn.accumulate_dq: a barrier (every warp has read dS^T; the next step
/// writes it again), then one red.global.add.f32 per value of the dQ^T
/// block: value (head-dim row r, query c) goes to row col + c, column r of
/// head `head` of dq_accum, queries at or past N skipped. A warp's
/// reduction covers 8 consecutive head-dim columns (32 bytes) of 4 rows.
LogicalResult lowerAccumulateDq(Lowering &l, AccumulateDqOp op) {
  OpBuilder &b = l.b;
  NVVM::Barrier0Op::create(b, l.loc);
  auto type = cast<RegTileType>(op.getBlock().getType());
  FragmentShape shape = l.fragmentShape(type);
  const SmallVector<Value> &v = l.tiles[op.getBlock()];
  Tensor tensor = Tensor::DqAccum;
  TileRows rows = l.tileRows(tensor, op.getBatch(), op.getCol());
  Value head = l.toI32(l.scalar(op.getHead()));
  // The thread's first value (query 2(l%4), head-dim row 16w + l/4); the
  // others are whole rows (8n + e) and head-dim columns (16Wt + 8h) away.
  Value firstQuery =
      arith::AddIOp::create(b, l.loc, rows.row, l.fragmentCol(0, 0));
  Value first = l.globalAddress(tensor, rows.batch, firstQuery, head,
                                l.fragmentRow(0, 0));
  Value rowStride = l.params.stride[static_cast<int>(tensor)][1];
  auto ptrType =
      LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
  auto advance = [&](Value ptr, Value elements) -> Value {
    return LLVM::GEPOp::create(b, l.loc, ptrType, b.getF32Type(), ptr,
                               ValueRange{elements});
  };
  Value oddQuery = advance(first, rowStride);
  Value blockStride = arith::MulIOp::create(b, l.loc, rowStride, l.i64(8));
  for (int64_t n = 0; n < shape.nBlocks; ++n)
    for (int64_t e = 0; e < 2; ++e) {
      Value query =
          arith::AddIOp::create(b, l.loc, firstQuery, l.i32(8 * n + e));
      Value inside = arith::ExtUIOp::create(
          b, l.loc, b.getI32Type(),
          arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::slt, query,
                                rows.end));
      Value row =
          advance(e ? oddQuery : first,
                  arith::MulIOp::create(b, l.loc, blockStride, l.i64(n)));
      for (int64_t t = 0; t < shape.mTiles; ++t)
        for (int64_t h = 0; h < 2; ++h) {
          Value addr = advance(row, l.i64(16 * l.numWarps() * t + 8 * h));
          LLVM::InlineAsmOp::create(
              b, l.loc, TypeRange(),
              ValueRange{inside, addr,
                         v[(t * shape.nBlocks + n) * 4 + 2 * h + e]},
              "{\n.reg .pred p;\nsetp.ne.b32 p, $0, 0;\n"
              "@p red.global.add.f32 [$1], $2;\n}",
              "r,l,f", /*has_side_effects=*/true, /*is_align_stack=*/false,
              LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
        }
    }
  return success();
}

} // namespace

void mlir::attn::populateSm80Lowerings(LoweringTable &table) {
  table.prologue = lowerPrologue;
  table.add<CopyAsyncOp>(lowerCopy).checkedBy(
      [](Operation *op, const KernelFacts &facts) {
        auto copy = cast<CopyAsyncOp>(op);
        return checkCopySource(op, copy.getSrc(), copy.getPages(), facts,
                               "copies from the kernel's q, k or v argument "
                               "(or a backward kernel's dout) only");
      });
  table.add<WaitOp>(lowerWait);
  table.add<MmaOp>(lowerMma);
  table.add<DqMmaOp>(lowerDqMma);
  table.add<AccumulateDqOp>(lowerAccumulateDq).checkedBy(checkAccumulateDq);
  // mma.sync is synchronous: the verifiers already refuse asynchronous
  // MMAs on sm_80.
  table.add<MmaWaitOp>([](Lowering &, MmaWaitOp op) -> LogicalResult {
    return op->emitOpError("is not supported on sm_80 (mma.sync is "
                           "synchronous; it needs sm_90a's wgmma)");
  });
  // Every thread is a consumer: the attn.barrier between a release and the
  // refill (placed and checked by attn-multibuffer) is the whole protocol.
  table.add<PipeAcquireOp>([](Lowering &, PipeAcquireOp) {});
  table.add<PipeReleaseOp>([](Lowering &, PipeReleaseOp) {});
  table.add<PipeLoadOp>(lowerPipeLoad).checkedBy(
      [](Operation *op, const KernelFacts &facts) {
        auto load = cast<PipeLoadOp>(op);
        return checkCopySource(op, load.getSrc(), load.getPages(), facts,
                               "loads from the kernel's q, k or v argument "
                               "only");
      });
  table.add<PipeWaitOp>(lowerPipeWait);
}
