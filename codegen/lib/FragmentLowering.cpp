//===- FragmentLowering.cpp - register-tile ops, shared by all targets ----===//
//
// Softmax, masking and the epilogue work on the MMA fragment layout described
// in Lowering.h, which mma.sync (sm_80) and wgmma (sm_90a) share, so this
// file is the same code for both targets.
//
//===----------------------------------------------------------------------===//
#include "Exp2Emulation.h"
#include "LoweringTable.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::attn;

//===----------------------------------------------------------------------===//
// Lowering helpers
//===----------------------------------------------------------------------===//

Value Lowering::i32(int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
}
Value Lowering::i64(int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
}
Value Lowering::f32(float v) {
  return arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                        llvm::APFloat(v));
}
Value Lowering::toI32(Value index) {
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
}
Value Lowering::toI64(Value v) {
  return arith::ExtUIOp::create(b, loc, b.getI64Type(), v);
}
Value Lowering::scalar(Value v) {
  Value mapped = scalars.lookup(v);
  assert(mapped && "tile-program scalar used before it was lowered");
  return mapped;
}

Value Lowering::smemPtr(Value byteOffset) {
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext(), kSharedAddressSpace);
  return LLVM::GEPOp::create(b, loc, ptrType, b.getI8Type(), smemBase,
                             ValueRange{byteOffset});
}

/// Rows after which the 128-byte swizzle's XOR pattern repeats.
static constexpr int64_t kSwizzleRows = 8;
/// 16-bit elements of one 16-byte chunk.
static constexpr int64_t kChunkElements = 8;

ChunkWalk Lowering::chunkWalk(const SmemBuffer &buffer, Value thread,
                              int64_t threads, int64_t filledCols) {
  ChunkWalk walk;
  SwizzleGeometry g(buffer.type);
  if (filledCols == 0)
    filledCols = buffer.type.getCols();
  int64_t usedSlots = filledCols / kChunkElements;
  int64_t chunksPerRow = llvm::PowerOf2Ceil(usedSlots);
  // Warps hold 32 threads and rows at most 32 chunk slots: R is whole.
  assert(threads % chunksPerRow == 0 && "a step must cover whole rows");
  walk.thread = thread;
  walk.threads = threads;
  walk.total = buffer.type.getRows() * chunksPerRow;
  walk.rowsPerStep = threads / chunksPerRow;
  walk.rowBytes = g.rowBytes;
  walk.period = kSwizzleRows / std::gcd(walk.rowsPerStep, kSwizzleRows);
  Value slot = arith::RemUIOp::create(b, loc, thread, i32(chunksPerRow));
  if (usedSlots != chunksPerRow)
    walk.slotUsed = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          slot, i32(usedSlots));
  walk.firstRow = arith::DivUIOp::create(b, loc, thread, i32(chunksPerRow));
  walk.col = arith::MulIOp::create(b, loc, slot, i32(kChunkElements));
  for (int64_t p = 0; p < walk.period; ++p)
    walk.dstBases.push_back(swizzledOffset(
        buffer,
        arith::AddIOp::create(b, loc, walk.firstRow,
                              i32(p * walk.rowsPerStep)),
        walk.col));
  return walk;
}

Value ChunkWalk::row(Lowering &l, int64_t step) const {
  return arith::AddIOp::create(l.b, l.loc, firstRow,
                               l.i32(step * rowsPerStep));
}

Value ChunkWalk::dstOffset(Lowering &l, int64_t step) const {
  int64_t rowOffset = (step / period) * period * rowsPerStep;
  return arith::AddIOp::create(l.b, l.loc, dstBases[step % period],
                               l.i32(rowOffset * rowBytes));
}

void ChunkWalk::forEach(Lowering &l,
                        llvm::function_ref<void(int64_t)> body) const {
  auto steps = [&] {
    for (int64_t step = 0; step * threads < total; ++step) {
      int64_t first = step * threads;
      if (first + threads <= total) {
        body(step);
        continue;
      }
      Value inRange = arith::CmpIOp::create(
          l.b, l.loc, arith::CmpIPredicate::ult, thread, l.i32(total - first));
      l.emitIf(inRange, [&] { body(step); });
    }
  };
  if (slotUsed)
    return l.emitIf(slotUsed, steps);
  steps();
}

void Lowering::zeroSharedChunk(Value byteOffset) {
  auto vecType = VectorType::get({4}, b.getI32Type());
  Value zero = LLVM::ZeroOp::create(b, loc, vecType);
  LLVM::StoreOp::create(b, loc, zero, smemPtr(byteOffset), /*alignment=*/16);
}

Value Lowering::smemAddress(Value byteOffset) {
  Value ptr = smemPtr(byteOffset);
  return LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), ptr);
}

SwizzleGeometry::SwizzleGeometry(SmemTileType type) {
  assert(type.getSwizzle() != 0 && "swizzled tile expected (the verifiers)");
  rowBytes = type.getPanelRowBytes();
  panelCols = type.getPanelCols();
  panelBytes = type.getPanelBytes();
  xorShift = llvm::Log2_64(kSwizzleLineBytes / rowBytes);
  xorMask = rowBytes / kChunkBytes - 1;
}

Value Lowering::swizzledOffset(const SmemBuffer &buffer, Value row,
                               Value col) {
  SwizzleGeometry g(buffer.type);
  int64_t chunksPerPanel = g.panelCols / 8;
  Value panel =
      arith::ShRUIOp::create(b, loc, col, i32(llvm::Log2_64(g.panelCols)));
  Value chunk =
      arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, col, i32(3)),
                            i32(chunksPerPanel - 1));
  Value xorSource = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, row, i32(g.xorShift)),
      i32(g.xorMask));
  Value swizzled = arith::XOrIOp::create(b, loc, chunk, xorSource);
  Value offset = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, panel, i32(g.panelBytes)),
      arith::MulIOp::create(b, loc, row, i32(g.rowBytes)));
  offset = arith::AddIOp::create(
      b, loc, offset, arith::ShLIOp::create(b, loc, swizzled, i32(4)));
  Value within = arith::ShLIOp::create(
      b, loc, arith::AndIOp::create(b, loc, col, i32(7)), i32(1));
  offset = arith::AddIOp::create(b, loc, offset, within);
  return arith::AddIOp::create(b, loc, offset, bufferOffset(buffer, 0));
}

Value Lowering::bufferOffset(const SmemBuffer &buffer, int64_t extra) {
  if (!buffer.dynamicOffset)
    return i32(buffer.offset + extra);
  if (extra == 0)
    return buffer.dynamicOffset;
  return arith::AddIOp::create(b, loc, buffer.dynamicOffset, i32(extra));
}

Value Lowering::swizzledOffsetSplit(const SmemBuffer &buffer, Value rowVar,
                                    int64_t rowConst, Value colVar,
                                    int64_t colConst) {
  SwizzleGeometry g(buffer.type);
  assert(rowConst % 8 == 0 && colConst % 16 == 0 && "misaligned split");
  Value xorSource = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, rowVar, i32(g.xorShift)),
      i32(g.xorMask));
  Value chunk = arith::XOrIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, colVar, i32(3)), xorSource);
  Value swizzled =
      arith::XOrIOp::create(b, loc, chunk, i32((colConst % g.panelCols) / 8));
  Value offset = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, rowVar, i32(g.rowBytes)),
      arith::ShLIOp::create(b, loc, swizzled, i32(4)));
  int64_t constant =
      (colConst / g.panelCols) * g.panelBytes + rowConst * g.rowBytes;
  return arith::AddIOp::create(b, loc, offset, bufferOffset(buffer, constant));
}

Value Lowering::rowsOffset(Value batch, Value head, Value row) {
  Value bh = toI64(head);
  if (batch)
    bh = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, toI64(batch), toI64(params.numHeads)),
        bh);
  return arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bh, toI64(params.nq)), toI64(row));
}

Value Lowering::globalAddress(Tensor tensor, Value batch, Value row,
                              Value head, Value col) {
  int t = static_cast<int>(tensor);
  auto mul = [&](Value x, Value stride) {
    return arith::MulIOp::create(b, loc, toI64(x), stride);
  };
  // A packed tensor (null batch) has no batch dimension.
  Value offset = mul(row, params.stride[t][1]);
  if (batch)
    offset = arith::AddIOp::create(b, loc, mul(batch, params.stride[t][0]),
                                   offset);
  offset = arith::AddIOp::create(b, loc, offset, mul(head, params.stride[t][2]));
  offset = arith::AddIOp::create(b, loc, offset, toI64(col));
  auto ptrType =
      LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
  Type element = elementBytes(tensor) == 4 ? Type(b.getF32Type())
                                           : Type(b.getI16Type());
  return LLVM::GEPOp::create(b, loc, ptrType, element, params.ptr[t],
                             ValueRange{offset});
}

TileRows Lowering::tileRows(Tensor tensor, Value batch, Value row) {
  Value tileRow = toI32(scalar(row));
  auto seq = seqs.find(batch);
  if (seq == seqs.end())
    return {toI32(scalar(batch)), tileRow, tensorRows(tensor)};
  // Row r of sequence b is row start_b + r of the packed tensor.
  Value start = seq->second.start;
  return {Value(), arith::AddIOp::create(b, loc, start, tileRow),
          arith::AddIOp::create(b, loc, start, seq->second.length)};
}

Value Lowering::loadPage(Value batch, Value slot) {
  int t = static_cast<int>(Tensor::BlockTable);
  Value last = arith::SubIOp::create(b, loc, params.maxBlocks, i32(1));
  Value clamped = arith::MinUIOp::create(b, loc, slot, last);
  Value offset = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, toI64(batch), params.stride[t][0]),
      toI64(clamped));
  auto ptrType =
      LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
  Value addr = LLVM::GEPOp::create(b, loc, ptrType, b.getI32Type(),
                                   params.ptr[t], ValueRange{offset});
  // The block table is read-only during the kernel.
  auto load = LLVM::LoadOp::create(b, loc, b.getI32Type(), addr,
                                   /*alignment=*/4);
  load.setInvariant(true);
  return load;
}

std::pair<Value, Value> Lowering::packedRow(Value row, int64_t rows,
                                            int64_t headPack) {
  if (headPack == 1)
    return {i32(0), row};
  int64_t positions = rows / headPack;
  return {arith::DivUIOp::create(b, loc, row, i32(positions)),
          arith::RemUIOp::create(b, loc, row, i32(positions))};
}

Lowering::GlobalRow Lowering::globalFragmentRow(int64_t t, int64_t h,
                                                int64_t rows, int64_t headPack,
                                                Value row0, Value head0,
                                                Value end) {
  auto [headOffset, position] = packedRow(fragmentRow(t, h), rows, headPack);
  GlobalRow global;
  global.row = arith::AddIOp::create(b, loc, row0, position);
  global.head = arith::AddIOp::create(b, loc, head0, headOffset);
  global.inside =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, global.row, end);
  return global;
}

FragmentShape Lowering::fragmentShape(RegTileType type) const {
  int64_t rowsPerSlice = 16 * numWarps();
  FragmentShape shape;
  shape.mTiles = type.getRows() / rowsPerSlice;
  if (type.getFragment() == FragmentKind::acc)
    shape.nBlocks = type.getShape()[1] / 8;
  else if (type.getFragment() == FragmentKind::operand_a)
    shape.nBlocks = type.getShape()[1] / operandKStep(type.getElementType());
  return shape;
}

Value Lowering::warpgroupIndex() {
  return arith::ShRUIOp::create(b, loc, warp,
                                i32(llvm::Log2_64(kWarpgroupWarps)));
}

Value Lowering::fragmentRow(int64_t t, int64_t h) {
  // 16 * warp + 16 * W * t + lane / 4 + 8 * h
  Value base = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, warp, i32(16)),
      arith::ShRUIOp::create(b, loc, lane, i32(2)));
  return arith::AddIOp::create(b, loc, base,
                               i32(16 * numWarps() * t + 8 * h));
}

Value Lowering::fragmentCol(int64_t n, int64_t e) {
  // 8 * n + 2 * (lane % 4) + e
  Value base = arith::ShLIOp::create(
      b, loc, arith::AndIOp::create(b, loc, lane, i32(3)), i32(1));
  return arith::AddIOp::create(b, loc, base, i32(8 * n + e));
}

Value Lowering::combineRowLanes(
    Value value, llvm::function_ref<Value(Value, Value)> combine) {
  for (int64_t offset : {1, 2}) {
    Value other = NVVM::ShflOp::create(b, loc, b.getF32Type(), i32(-1), value,
                                       i32(offset), i32(0x1f),
                                       NVVM::ShflKind::bfly, UnitAttr());
    value = combine(value, other);
  }
  return value;
}

void Lowering::emitIf(Value cond, llvm::function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body();
}

//===----------------------------------------------------------------------===//
// Register-tile ops
//===----------------------------------------------------------------------===//

namespace {

/// Number of per-thread values of a register tile.
int64_t valueCount(Lowering &l, RegTileType type) {
  FragmentShape shape = l.fragmentShape(type);
  if (type.isRow())
    return shape.mTiles * 2;
  return shape.mTiles * shape.nBlocks * 4;
}

/// Row-vector index for element `index` of a tile (acc: (t, n, i) -> t*2 + i/2;
/// row: itself).
int64_t rowIndexOf(Lowering &l, RegTileType type, int64_t index) {
  if (type.isRow())
    return index;
  FragmentShape shape = l.fragmentShape(type);
  int64_t t = index / (shape.nBlocks * 4);
  int64_t i = index % 4;
  return t * 2 + i / 2;
}

Value exp2(Lowering &l, Value x) {
  auto fmf = LLVM::FastmathFlagsAttr::get(l.b.getContext(),
                                          LLVM::FastmathFlags::afn);
  return LLVM::Exp2Op::create(l.b, l.loc, x.getType(), x, fmf);
}

/// Packs two f32 into one i32 holding two 16-bit floats (a in the low half).
Value pack(Lowering &l, Value a, Value c) {
  OpBuilder &b = l.b;
  Type half = l.elementType;
  auto vecType = VectorType::get({2}, half);
  Value vec = LLVM::PoisonOp::create(b, l.loc, vecType);
  vec = LLVM::InsertElementOp::create(
      b, l.loc, vec, arith::TruncFOp::create(b, l.loc, half, a), l.i32(0));
  vec = LLVM::InsertElementOp::create(
      b, l.loc, vec, arith::TruncFOp::create(b, l.loc, half, c), l.i32(1));
  return LLVM::BitcastOp::create(b, l.loc, b.getI32Type(), vec);
}

void lowerSplat(Lowering &l, SplatOp op) {
  auto type = cast<RegTileType>(op.getType());
  Value c = l.f32(op.getValue().convertToFloat());
  l.tiles[op] = SmallVector<Value>(valueCount(l, type), c);
}

/// -inf where col >= kv_len, or col is outside the band the row sees around
/// its diagonal d = row (+ kv_len - q_len bottom-right): col > d (causal),
/// col > d + R (a window's right side), col < d - L (its left side). The
/// comparisons are signed: a row whose limit is negative is masked entirely.
///
/// A bottom-right causal limit row + 1 + kv_len - q_len is <= kv_len for
/// every row that exists (row < q_len), so it needs no min with kv_len:
/// padding rows past q_len (zero-filled Q, never stored) may see columns
/// past kv_len, which read as zero-filled K. That keeps kv_len out of the
/// mask, one live register fewer in the masked loop (sm_80 d256 would spill
/// otherwise). A right window side R > 0 can reach past kv_len, so its limit
/// is min(d + 1, kv_len - R) + R (= min(d + 1 + R, kv_len), never
/// overflowing); a left side L adds the per-row limit max(d, L) - L.
void lowerMask(Lowering &l, MaskOp op) {
  OpBuilder &b = l.b;
  auto type = cast<RegTileType>(op.getInput().getType());
  FragmentShape shape = l.fragmentShape(type);
  SmallVector<Value> values = l.tiles.lookup(op.getInput());
  Value row0 = l.toI32(l.scalar(op.getRow()));
  Value col0 = l.toI32(l.scalar(op.getCol()));
  Value kvLen = l.toI32(l.scalar(op.getKvLen()));
  // Bottom-right: shift the diagonal once per tile (loop-invariant, so
  // hoisted). kv_len - q_len cannot overflow: both are in [1, 2^31).
  bool bottomRight = op.isBottomRight();
  if (bottomRight) {
    Value qLen = l.toI32(l.scalar(op.getQLen()));
    row0 = arith::AddIOp::create(
        b, l.loc, row0, arith::SubIOp::create(b, l.loc, kvLen, qLen));
  }
  Value negInf = l.f32(-std::numeric_limits<float>::infinity());
  std::optional<int64_t> left = op.getLeftBound();
  std::optional<int64_t> right = op.getRightBound();
  // The window's constants, once per tile.
  Value rightSide, rightCap, leftSide;
  if (right && *right > 0) {
    rightSide = l.i32(*right);
    rightCap = arith::SubIOp::create(b, l.loc, kvLen, rightSide);
  }
  if (left)
    leftSide = l.i32(*left);
  // A window's limits are taken relative to the thread's first column
  // (2 * (lane % 4)), so that each element compares a per-row value with an
  // immediate (its offset 8 * n + e): no column index per element, none
  // live across rows (the two-sided compare would spill sm_90a d64 else).
  bool windowed = left || rightSide;
  Value laneCol = windowed ? l.fragmentCol(0, 0) : Value();
  for (int64_t t = 0; t < shape.mTiles; ++t)
    for (int64_t h = 0; h < 2; ++h) {
      // Columns at or past `limit`, and (left window) before `leftLimit`,
      // are masked for this row.
      Value limit = kvLen;
      Value row;
      if (right || left) {
        // A packed tile's rows are (head, position): the position counts.
        Value position =
            l.packedRow(l.fragmentRow(t, h), type.getRows(), op.headPack())
                .second;
        row = arith::AddIOp::create(b, l.loc, row0, position);
      }
      if (right) {
        Value rowEnd = arith::AddIOp::create(b, l.loc, row, l.i32(1));
        if (rightSide)
          limit = arith::AddIOp::create(
              b, l.loc, arith::MinSIOp::create(b, l.loc, rowEnd, rightCap),
              rightSide);
        else
          limit = bottomRight
                      ? rowEnd
                      : arith::MinSIOp::create(b, l.loc, kvLen, rowEnd)
                            .getResult();
      }
      Value relLimit = arith::SubIOp::create(b, l.loc, limit, col0);
      if (windowed) {
        // Masked iff offset >= limit - col0 - laneCol or offset <
        // leftLimit - col0 - laneCol; each difference is of values in
        // [-2^31, 2^31) whose sum the limits keep in range.
        Value rightRel = arith::SubIOp::create(b, l.loc, relLimit, laneCol);
        Value leftRel;
        if (left) {
          Value leftLimit = arith::SubIOp::create(
              b, l.loc, arith::MaxSIOp::create(b, l.loc, row, leftSide),
              leftSide);
          leftRel = arith::SubIOp::create(
              b, l.loc, arith::SubIOp::create(b, l.loc, leftLimit, col0),
              laneCol);
        }
        for (int64_t n = 0; n < shape.nBlocks; ++n)
          for (int64_t e = 0; e < 2; ++e) {
            int64_t index = (t * shape.nBlocks + n) * 4 + 2 * h + e;
            Value offset = l.i32(8 * n + e);
            Value masked = arith::CmpIOp::create(
                b, l.loc, arith::CmpIPredicate::sle, rightRel, offset);
            if (leftRel)
              masked = arith::OrIOp::create(
                  b, l.loc, masked,
                  arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::sgt,
                                        leftRel, offset));
            values[index] = arith::SelectOp::create(b, l.loc, masked, negInf,
                                                    values[index]);
          }
        continue;
      }
      for (int64_t n = 0; n < shape.nBlocks; ++n)
        for (int64_t e = 0; e < 2; ++e) {
          int64_t index = (t * shape.nBlocks + n) * 4 + 2 * h + e;
          Value masked = arith::CmpIOp::create(
              b, l.loc, arith::CmpIPredicate::sge, l.fragmentCol(n, e),
              relLimit);
          values[index] =
              arith::SelectOp::create(b, l.loc, masked, negInf, values[index]);
        }
    }
  l.tiles[op] = values;
}

/// ALiBi: x += -(slope * scale) * |d| with d = row + offset - col per
/// element. The slope is one invariant load (one per fragment row of a
/// tile that packs heads); d is an i32 per row (relative to the thread's
/// first column) converted once, minus the element's immediate column
/// offset 8 * n + e: a subtract and an FMA per score.
void lowerAlibi(Lowering &l, AlibiOp op) {
  OpBuilder &b = l.b;
  auto type = cast<RegTileType>(op.getInput().getType());
  FragmentShape shape = l.fragmentShape(type);
  SmallVector<Value> values = l.tiles.lookup(op.getInput());
  int t = static_cast<int>(Tensor::AlibiSlopes);
  Value batchEntry = arith::MulIOp::create(
      b, l.loc, l.toI64(l.toI32(l.scalar(op.getBatch()))),
      l.params.stride[t][0]);
  Value head0 = l.toI32(l.scalar(op.getHead()));
  auto ptrType =
      LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
  // -(slope * scale) of query head `head` (i32).
  auto coefOf = [&](Value head) -> Value {
    Value entry = arith::AddIOp::create(b, l.loc, batchEntry, l.toI64(head));
    Value addr = LLVM::GEPOp::create(b, l.loc, ptrType, b.getF32Type(),
                                     l.params.ptr[t], ValueRange{entry});
    auto slope = LLVM::LoadOp::create(b, l.loc, b.getF32Type(), addr,
                                      /*alignment=*/4);
    slope.setInvariant(true);
    return arith::MulFOp::create(b, l.loc, slope,
                                 l.f32(-op.getScale().convertToFloat()));
  };
  const int64_t pack = op.headPack();
  Value coef = pack == 1 ? coefOf(head0) : Value();
  // row + offset - col - 2 * (lane % 4): each element's distance is this
  // plus its fragment row (its position, in a tile that packs heads),
  // minus 8 * n + e.
  Value base = arith::SubIOp::create(
      b, l.loc,
      arith::AddIOp::create(b, l.loc, l.toI32(l.scalar(op.getRow())),
                            l.toI32(l.scalar(op.getOffset()))),
      arith::AddIOp::create(b, l.loc, l.toI32(l.scalar(op.getCol())),
                            l.fragmentCol(0, 0)));
  for (int64_t m = 0; m < shape.mTiles; ++m)
    for (int64_t h = 0; h < 2; ++h) {
      Value position = l.fragmentRow(m, h);
      if (pack > 1) {
        auto [headOffset, packedPosition] =
            l.packedRow(position, type.getRows(), pack);
        coef = coefOf(arith::AddIOp::create(b, l.loc, head0, headOffset));
        position = packedPosition;
      }
      Value rowDistance = arith::SIToFPOp::create(
          b, l.loc, b.getF32Type(),
          arith::AddIOp::create(b, l.loc, base, position));
      for (int64_t n = 0; n < shape.nBlocks; ++n)
        for (int64_t e = 0; e < 2; ++e) {
          int64_t index = (m * shape.nBlocks + n) * 4 + 2 * h + e;
          Value distance = arith::SubFOp::create(
              b, l.loc, rowDistance, l.f32(static_cast<float>(8 * n + e)));
          Value magnitude = LLVM::FAbsOp::create(b, l.loc, distance);
          values[index] =
              LLVM::FMAOp::create(b, l.loc, coef, magnitude, values[index]);
        }
    }
  l.tiles[op] = values;
}

/// The product of each factor's [batch, head] entry (an invariant load per
/// factor), in every row entry: FP8's descales.
void lowerDescaleProduct(Lowering &l, DescaleOp op);

/// lowerDescaleProduct, then 1 / each entry where `reciprocal` asks.
void lowerDescale(Lowering &l, DescaleOp op) {
  lowerDescaleProduct(l, op);
  if (!op.getReciprocal())
    return;
  // Every entry is one of a few loads: divide each distinct value once.
  llvm::SmallDenseMap<Value, Value> inverse;
  for (Value &v : l.tiles[op]) {
    Value &inv = inverse[v];
    if (!inv)
      inv = arith::DivFOp::create(l.b, l.loc, l.f32(1.0f), v);
    v = inv;
  }
}

void lowerDescaleProduct(Lowering &l, DescaleOp op) {
  OpBuilder &b = l.b;
  auto type = cast<RegTileType>(op.getType());
  Value batch = l.toI64(l.toI32(l.scalar(op.getBatch())));
  Value head = l.toI64(l.toI32(l.scalar(op.getHead())));
  auto ptrType =
      LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
  auto loadAt = [&](int t, Value entry) -> Value {
    Value addr = LLVM::GEPOp::create(b, l.loc, ptrType, b.getF32Type(),
                                     l.params.ptr[t], ValueRange{entry});
    auto load =
        LLVM::LoadOp::create(b, l.loc, b.getF32Type(), addr, /*alignment=*/4);
    load.setInvariant(true);
    return load;
  };
  auto headEntry = [&](int t) -> Value {
    return arith::AddIOp::create(
        b, l.loc, arith::MulIOp::create(b, l.loc, batch, l.params.stride[t][0]),
        arith::MulIOp::create(b, l.loc, head, l.params.stride[t][2]));
  };
  // Block quantization: one rank-3 factor, its 128-row blocks contiguous.
  if (op.getRow() || op.getBlock()) {
    int t = static_cast<int>(l.tensors.lookup(op.getFactors().front()));
    Value first = headEntry(t);
    if (Value block = op.getBlock()) {
      Value entry = arith::AddIOp::create(
          b, l.loc, first, l.toI64(l.toI32(l.scalar(block))));
      // A key block of zeros may carry the descale 0 (amax / 448): any
      // descale dequantizes it, and 1 keeps the factors invertible.
      Value factor = loadAt(t, entry);
      Value zero = arith::CmpFOp::create(b, l.loc, arith::CmpFPredicate::OEQ,
                                         factor, l.f32(0.0f));
      factor = arith::SelectOp::create(b, l.loc, zero, l.f32(1.0f), factor);
      l.tiles[op] = SmallVector<Value>(valueCount(l, type), factor);
      return;
    }
    // Entry r: the block of row row + r, rows past Nq reading the last (a
    // packed batch's: past the longest sequence, which sizes its descales'
    // blocks).
    Value row0 = l.toI32(l.scalar(op.getRow()));
    Value rows = l.params.maxSeqlenQ ? l.params.maxSeqlenQ : l.params.nq;
    Value last = arith::SubIOp::create(b, l.loc, rows, l.i32(1));
    FragmentShape shape = l.fragmentShape(type);
    SmallVector<Value> values;
    for (int64_t m = 0; m < shape.mTiles; ++m)
      for (int64_t h = 0; h < 2; ++h) {
        Value r = arith::MinSIOp::create(
            b, l.loc, arith::AddIOp::create(b, l.loc, row0, l.fragmentRow(m, h)),
            last);
        Value blockOfRow = arith::ShRUIOp::create(b, l.loc, r, l.i32(7));
        values.push_back(loadAt(
            t, arith::AddIOp::create(b, l.loc, first, l.toI64(blockOfRow))));
      }
    l.tiles[op] = values;
    return;
  }
  Value product;
  for (Value factor : op.getFactors()) {
    int t = static_cast<int>(l.tensors.lookup(factor));
    Value load = loadAt(t, headEntry(t));
    product = product ? arith::MulFOp::create(b, l.loc, product, load).getResult()
                      : load;
  }
  l.tiles[op] = SmallVector<Value>(valueCount(l, type), product);
}

/// tanh(x * scale) per element: one multiply and one tanh.approx.f32 (llvm's
/// tanh with afn, which NVPTX selects as the approximate instruction).
void lowerSoftcap(Lowering &l, SoftcapOp op) {
  OpBuilder &b = l.b;
  Value scale = l.f32(op.getScale().convertToFloat());
  auto fmf = LLVM::FastmathFlagsAttr::get(b.getContext(),
                                          LLVM::FastmathFlags::afn);
  SmallVector<Value> values = l.tiles.lookup(op.getInput());
  for (Value &v : values) {
    Value scaled = arith::MulFOp::create(b, l.loc, v, scale);
    v = LLVM::TanhOp::create(b, l.loc, scaled.getType(), scaled, fmf);
  }
  l.tiles[op] = values;
}

/// In-thread reduction over the row's fragments, then butterfly shuffles
/// across the 4 lanes (xor 1, xor 2) that hold the same row.
void lowerRowReduce(Lowering &l, RowReduceOp op) {
  OpBuilder &b = l.b;
  auto type = cast<RegTileType>(op.getInput().getType());
  FragmentShape shape = l.fragmentShape(type);
  const SmallVector<Value> &values = l.tiles[op.getInput()];
  const SmallVector<Value> &init = l.tiles[op.getInit()];
  bool isMax = op.getKind() == ReduceKind::max;
  auto combine = [&](Value x, Value y) -> Value {
    if (isMax)
      return arith::MaxNumFOp::create(b, l.loc, x, y);
    return arith::AddFOp::create(b, l.loc, x, y);
  };
  // With `rounded`, the value the P V GEMM multiplies: the element rounded
  // to 16 bits as attn.convert's pack does (to nearest, ties to even), on
  // the integer pipe. A second conversion would run at the MUFU rate that
  // the soft-capped loop is bound by, and sharing attn.convert's changes
  // how the code generator carries P into the GEMM. bf16 is f32's top half:
  // add 0x7fff plus the kept part's lowest bit, then clear the low half.
  // f16 converts there and back.
  auto rounded = [&](Value v) -> Value {
    if (!op.getRounded())
      return v;
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    if (!l.elementType.isBF16()) {
      Value half = arith::TruncFOp::create(b, l.loc, l.elementType, v);
      return arith::ExtFOp::create(b, l.loc, f32, half);
    }
    Value bits = arith::BitcastOp::create(b, l.loc, i32, v);
    Value lsb = arith::AndIOp::create(
        b, l.loc, arith::ShRUIOp::create(b, l.loc, bits, l.i32(16)), l.i32(1));
    Value bias = arith::AddIOp::create(b, l.loc, lsb, l.i32(0x7fff));
    Value kept = arith::AndIOp::create(
        b, l.loc, arith::AddIOp::create(b, l.loc, bits, bias),
        l.i32(static_cast<int32_t>(0xffff0000u)));
    return arith::BitcastOp::create(b, l.loc, f32, kept);
  };
  SmallVector<Value> result;
  for (int64_t t = 0; t < shape.mTiles; ++t)
    for (int64_t h = 0; h < 2; ++h) {
      Value acc;
      for (int64_t n = 0; n < shape.nBlocks; ++n) {
        int64_t index = (t * shape.nBlocks + n) * 4 + 2 * h;
        for (int64_t e = 0; e < 2; ++e) {
          Value v = rounded(values[index + e]);
          acc = acc ? combine(acc, v) : v;
        }
      }
      acc = l.combineRowLanes(acc, combine);
      result.push_back(combine(init[t * 2 + h], acc));
    }
  l.tiles[op] = result;
}

/// 2^t on the FMA and integer pipes instead of MUFU.EX2 (Exp2Emulation.h):
///   t = max(t, -127); y = t + 0x1.8p23; f = t - (y - 0x1.8p23)
///   p = fma(fma(fma(c3, f, c2), f, c1), f, 1); bits(p) + (bits(y) << 23)
/// A clamp, three adds, three FMAs, a shift and an integer add per element.
Value exp2Emulated(Lowering &l, Value t) {
  OpBuilder &b = l.b;
  namespace emu = exp2emu;
  Type i32 = b.getI32Type();
  Value clamped = arith::MaxNumFOp::create(b, l.loc, t, l.f32(emu::kMinArg));
  Value magic = l.f32(emu::kRoundMagic);
  Value rounded = arith::AddFOp::create(b, l.loc, clamped, magic);
  Value integer = arith::SubFOp::create(b, l.loc, rounded, magic);
  Value frac = arith::SubFOp::create(b, l.loc, clamped, integer);
  Value poly = l.f32(emu::kC3);
  for (float c : {emu::kC2, emu::kC1, 1.0f})
    poly = LLVM::FMAOp::create(b, l.loc, poly, frac, l.f32(c));
  Value exponent = arith::ShLIOp::create(
      b, l.loc, arith::BitcastOp::create(b, l.loc, i32, rounded),
      l.i32(emu::kExponentShift));
  Value bits = arith::AddIOp::create(
      b, l.loc, arith::BitcastOp::create(b, l.loc, i32, poly), exponent);
  return arith::BitcastOp::create(b, l.loc, b.getF32Type(), bits);
}

/// exp2((x - m[row]) * c) = exp2(fma(x, c, -m[row] * c)); m = -inf -> 0.
/// With emulated_eighths, the selected fragment blocks take exp2Emulated.
void lowerExp2Diff(Lowering &l, Exp2DiffOp op) {
  OpBuilder &b = l.b;
  auto type = cast<RegTileType>(op.getInput().getType());
  const SmallVector<Value> &values = l.tiles[op.getInput()];
  const SmallVector<Value> &max = l.tiles[op.getMax()];
  Value c = l.f32(op.getScaleLog2e().convertToFloat());
  Value negInf = l.f32(-std::numeric_limits<float>::infinity());
  // Per row: the constant, or with FP8's factor the constant times it; the
  // exponent's offset joins the row's term, so each element stays one FMA.
  SmallVector<Value> rowScale, negScaledMax;
  for (auto [r, m] : llvm::enumerate(max)) {
    Value scale = c;
    if (Value factor = op.getFactor())
      scale = arith::MulFOp::create(b, l.loc, c, l.tiles[factor][r]);
    rowScale.push_back(scale);
    Value isNegInf =
        arith::CmpFOp::create(b, l.loc, arith::CmpFPredicate::OEQ, m, negInf);
    Value safe = arith::SelectOp::create(b, l.loc, isNegInf, l.f32(0.0f), m);
    Value term = arith::NegFOp::create(
        b, l.loc, arith::MulFOp::create(b, l.loc, safe, scale));
    if (FloatAttr offset = op.getOffsetAttr())
      term = arith::AddFOp::create(b, l.loc, term,
                                   l.f32(offset.getValueAsDouble()));
    negScaledMax.push_back(term);
  }
  // An acc tile's scalars are (t, n, i): block n of a fragment row is
  // values [(t * nBlocks + n) * 4, +4) (the verifier allows emulation only
  // on acc tiles).
  int64_t eighths = op.getEmulatedEighths().value_or(0);
  int64_t nBlocks = type.isRow() ? 1 : l.fragmentShape(type).nBlocks;
  SmallVector<Value> result;
  for (auto [index, v] : llvm::enumerate(values)) {
    int64_t row = rowIndexOf(l, type, index);
    Value arg =
        LLVM::FMAOp::create(b, l.loc, v, rowScale[row], negScaledMax[row]);
    int64_t block = int64_t(index) / 4 % nBlocks;
    bool emulated = eighths > 0 && exp2emu::isEmulatedBlock(block, eighths);
    result.push_back(emulated ? exp2Emulated(l, arg) : exp2(l, arg));
  }
  l.tiles[op] = result;
}

void lowerRescale(Lowering &l, RescaleOp op) {
  auto type = cast<RegTileType>(op.getInput().getType());
  const SmallVector<Value> &values = l.tiles[op.getInput()];
  const SmallVector<Value> &factor = l.tiles[op.getFactor()];
  SmallVector<Value> result;
  for (auto [index, v] : llvm::enumerate(values))
    result.push_back(arith::MulFOp::create(
        l.b, l.loc, v, factor[rowIndexOf(l, type, index)]));
  l.tiles[op] = result;
}

/// One reciprocal per row (0 for an empty row), one multiply per element.
void lowerNormalize(Lowering &l, NormalizeOp op) {
  OpBuilder &b = l.b;
  auto type = cast<RegTileType>(op.getInput().getType());
  SmallVector<Value> inverse;
  for (auto [r, s] : llvm::enumerate(l.tiles[op.getSum()])) {
    Value isZero = arith::CmpFOp::create(b, l.loc, arith::CmpFPredicate::OEQ,
                                         s, l.f32(0.0f));
    Value numerator =
        op.getFactor() ? l.tiles[op.getFactor()][r] : l.f32(1.0f);
    Value inv = arith::DivFOp::create(b, l.loc, numerator, s);
    inverse.push_back(
        arith::SelectOp::create(b, l.loc, isZero, l.f32(0.0f), inv));
  }
  SmallVector<Value> result;
  for (auto [index, v] : llvm::enumerate(l.tiles[op.getInput()]))
    result.push_back(arith::MulFOp::create(b, l.loc, v,
                                           inverse[rowIndexOf(l, type, index)]));
  l.tiles[op] = result;
}

/// scale * m + ln(l) = scale * m + log2(l) * ln(2); -inf for l == 0. FP8:
/// scale * factor * m + (log2(l) - offset) * ln(2).
void lowerLogSumExp(Lowering &l, LogSumExpOp op) {
  OpBuilder &b = l.b;
  Value ln2 = l.f32(llvm::numbers::ln2f);
  Value negInf = l.f32(-std::numeric_limits<float>::infinity());
  SmallVector<Value> result;
  for (auto [r, m, s] : llvm::enumerate(l.tiles[op.getMax()],
                                        l.tiles[op.getSum()])) {
    Value scale = l.f32(op.getScale().convertToFloat());
    if (Value factor = op.getFactor())
      scale = arith::MulFOp::create(b, l.loc, scale, l.tiles[factor][r]);
    // NVPTX has no libcall for log2; lg2.approx.f32 is its fast log.
    Value log2 = LLVM::CallIntrinsicOp::create(
                     b, l.loc, s.getType(),
                     b.getStringAttr("llvm.nvvm.lg2.approx.f"), ValueRange{s})
                     .getResult(0);
    if (FloatAttr offset = op.getOffsetAttr())
      log2 = arith::SubFOp::create(b, l.loc, log2,
                                   l.f32(offset.getValueAsDouble()));
    Value lse = LLVM::FMAOp::create(b, l.loc, log2, ln2,
                                    arith::MulFOp::create(b, l.loc, m, scale));
    Value isZero = arith::CmpFOp::create(b, l.loc, arith::CmpFPredicate::OEQ,
                                         s, l.f32(0.0f));
    result.push_back(arith::SelectOp::create(b, l.loc, isZero, negInf, lse));
  }
  l.tiles[op] = result;
}

/// Inline PTX of one i32 result from i32/f32 operands (no side effects).
Value asmI32(Lowering &l, StringRef text, StringRef constraints,
             ValueRange operands) {
  return LLVM::InlineAsmOp::create(
             l.b, l.loc, l.b.getI32Type(), operands, text, constraints,
             /*has_side_effects=*/false, /*is_align_stack=*/false,
             LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

/// The bytes of `a` and `b` that `selector` picks (prmt.b32).
Value bytePermute(Lowering &l, Value a, Value b, Value selector) {
  return asmI32(l, "prmt.b32 $0, $1, $2, $3;", "=r,r,r,r",
                ValueRange{a, b, selector});
}

/// Four f32 as four e4m3 bytes of an i32, `a` in the lowest (satfinite:
/// out of range saturates to +-448, NaN stays NaN).
Value packE4m3(Lowering &l, Value a, Value b, Value c, Value d) {
  return asmI32(l,
                "{\n.reg .b16 lo, hi;\n"
                "cvt.rn.satfinite.e4m3x2.f32 lo, $2, $1;\n"
                "cvt.rn.satfinite.e4m3x2.f32 hi, $4, $3;\n"
                "mov.b32 $0, {lo, hi};\n}",
                "=r,f,f,f,f", ValueRange{a, b, c, d});
}

/// acc (f32) -> FP8 operand_a. In a k32 step lane q = l % 4 of a quad holds
/// the byte pairs P0..P3 (columns 8j + 2q, +1 of blocks j = 0..3) of each of
/// its two rows, and its A fragment wants columns 4q..4q+3 (register 0) and
/// 16 + 4q.. (register 2): pairs j = q / 2 and 2 + q / 2 of lanes
/// s0 = 2q % 4 (low half) and s0 + 1 (high half). Each lane s offers
/// (P_a, P_a+2) twice, a = s % 2 then 1 - s % 2, and each requester reads
/// the lane that holds its a in each round: two shuffles per row and step.
/// With `interleaved_keys` B's keys follow the accumulator's order instead
/// and each register is the lane's own words.
void lowerConvertFp8(Lowering &l, ConvertOp op) {
  OpBuilder &b = l.b;
  auto inType = cast<RegTileType>(op.getInput().getType());
  FragmentShape shape = l.fragmentShape(inType);
  const SmallVector<Value> &v = l.tiles[op.getInput()];
  Value q = arith::AndIOp::create(b, l.loc, l.lane, l.i32(3));
  Value quadBase = arith::SubIOp::create(b, l.loc, l.lane, q);
  Value odd = arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::ne,
                                    arith::AndIOp::create(b, l.loc, q, l.i32(1)),
                                    l.i32(0));
  Value upper = arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::uge, q,
                                      l.i32(2));
  auto pick = [&](Value cond, uint32_t yes, uint32_t no) -> Value {
    return arith::SelectOp::create(b, l.loc, cond, l.i32(int32_t(yes)),
                                   l.i32(int32_t(no)));
  };
  // What this lane offers: the low or the high pair of each packed word.
  Value offerFirst = pick(odd, 0x7632, 0x5410);
  Value offerSecond = pick(odd, 0x5410, 0x7632);
  // Whom it asks: lane 2q % 4 + q / 2, then lane 2q % 4 + 1 - q / 2.
  Value s0 = arith::AndIOp::create(
      b, l.loc, arith::ShLIOp::create(b, l.loc, q, l.i32(1)), l.i32(3));
  Value half = arith::ShRUIOp::create(b, l.loc, q, l.i32(1));
  Value srcFirst = arith::AddIOp::create(
      b, l.loc, quadBase, arith::AddIOp::create(b, l.loc, s0, half));
  Value srcSecond = arith::AddIOp::create(
      b, l.loc, quadBase,
      arith::AddIOp::create(b, l.loc, s0,
                            arith::SubIOp::create(b, l.loc, l.i32(1), half)));
  // Which round brought lane s0's bytes: the first when q < 2.
  Value lowSel = pick(upper, 0x1054, 0x5410);
  Value highSel = pick(upper, 0x3276, 0x7632);
  Value mask = l.i32(-1);
  auto shuffle = [&](Value value, Value src) -> Value {
    return NVVM::ShflOp::create(b, l.loc, b.getI32Type(), mask, value, src,
                                l.i32(0x1f), NVVM::ShflKind::idx,
                                UnitAttr())
        .getResult();
  };
  SmallVector<Value> result;
  for (int64_t t = 0; t < shape.mTiles; ++t)
    for (int64_t k = 0; k < shape.nBlocks / 4; ++k) {
      Value regs[4];
      for (int64_t h = 0; h < 2; ++h) {
        // This row's pairs of blocks 4k..4k+3: words (P0, P1), (P2, P3).
        auto at = [&](int64_t j, int64_t e) {
          return v[(t * shape.nBlocks + 4 * k + j) * 4 + 2 * h + e];
        };
        Value w01 = packE4m3(l, at(0, 0), at(0, 1), at(1, 0), at(1, 1));
        Value w23 = packE4m3(l, at(2, 0), at(2, 1), at(3, 0), at(3, 1));
        // B's keys in the accumulator's order: the lane's own pairs are its
        // A columns already.
        if (op.getInterleavedKeys()) {
          regs[h] = w01;
          regs[2 + h] = w23;
          continue;
        }
        Value first =
            shuffle(bytePermute(l, w01, w23, offerFirst), srcFirst);
        Value second =
            shuffle(bytePermute(l, w01, w23, offerSecond), srcSecond);
        regs[h] = bytePermute(l, first, second, lowSel);
        regs[2 + h] = bytePermute(l, first, second, highSel);
      }
      result.append(std::begin(regs), std::end(regs));
    }
  l.tiles[op] = result;
}

/// acc (f32) -> operand_a (16-bit): k step k takes 8-column blocks 2k, 2k+1.
void lowerConvert(Lowering &l, ConvertOp op) {
  if (isa<Float8E4M3FNType>(
          cast<RegTileType>(op.getType()).getElementType()))
    return lowerConvertFp8(l, op);
  auto inType = cast<RegTileType>(op.getInput().getType());
  FragmentShape shape = l.fragmentShape(inType);
  const SmallVector<Value> &v = l.tiles[op.getInput()];
  SmallVector<Value> result;
  for (int64_t t = 0; t < shape.mTiles; ++t)
    for (int64_t k = 0; k < shape.nBlocks / 2; ++k) {
      int64_t lo = (t * shape.nBlocks + 2 * k) * 4;
      int64_t hi = (t * shape.nBlocks + 2 * k + 1) * 4;
      result.push_back(pack(l, v[lo + 0], v[lo + 1]));
      result.push_back(pack(l, v[lo + 2], v[lo + 3]));
      result.push_back(pack(l, v[hi + 0], v[hi + 1]));
      result.push_back(pack(l, v[hi + 2], v[hi + 3]));
    }
  l.tiles[op] = result;
}

/// Two f32 as one vector<2xf32> (an 8-byte store).
Value pairOf(Lowering &l, Value a, Value c) {
  auto vecType = VectorType::get({2}, l.b.getF32Type());
  Value vec = LLVM::PoisonOp::create(l.b, l.loc, vecType);
  vec = LLVM::InsertElementOp::create(l.b, l.loc, vec, a, l.i32(0));
  return LLVM::InsertElementOp::create(l.b, l.loc, vec, c, l.i32(1));
}

/// Each thread stores its column pairs as 32-bit words (16-bit elements) or
/// 64-bit words (f32, a split kernel's partial output); rows >= Nq (or past
/// the end of a packed batch's sequence) skipped, and so are the 8-column
/// blocks past the destination's head dimension (an output computed on a V
/// padded to whole swizzle panels). A packed tile's rows go to their head
/// and position.
void lowerStore(Lowering &l, StoreOp op) {
  OpBuilder &b = l.b;
  auto type = cast<RegTileType>(op.getValue().getType());
  FragmentShape shape = l.fragmentShape(type);
  int64_t storedBlocks =
      cast<MemRefType>(op.getDst().getType()).getShape().back() / 8;
  const SmallVector<Value> &v = l.tiles[op.getValue()];
  Tensor tensor = l.tensors.lookup(op.getDst());
  bool f32 = l.elementBytes(tensor) == 4;
  Value head0 = l.toI32(l.scalar(op.getHead()));
  TileRows rows = l.tileRows(tensor, op.getBatch(), op.getRow());
  for (int64_t t = 0; t < shape.mTiles; ++t)
    for (int64_t h = 0; h < 2; ++h) {
      Lowering::GlobalRow r = l.globalFragmentRow(
          t, h, type.getRows(), op.headPack(), rows.row, head0, rows.end);
      l.emitIf(r.inside, [&] {
        for (int64_t n = 0; n < std::min(shape.nBlocks, storedBlocks); ++n) {
          int64_t index = (t * shape.nBlocks + n) * 4 + 2 * h;
          Value addr = l.globalAddress(tensor, rows.batch, r.row, r.head,
                                       l.fragmentCol(n, 0));
          if (f32)
            LLVM::StoreOp::create(b, l.loc, pairOf(l, v[index], v[index + 1]),
                                  addr, /*alignment=*/8);
          else
            LLVM::StoreOp::create(b, l.loc, pack(l, v[index], v[index + 1]),
                                  addr, /*alignment=*/4);
        }
      });
    }
}

/// sm_80's attn.store_smem (no stmatrix): each pair of values (row l/4 + 8h
/// of the slice, columns 8n + 2(l%4) and one more) is one 4-byte
/// st.shared. The eight rows a store touches sit in eight different 16-byte
/// chunks of their 128-byte lines under every swizzle: no bank conflict.
void storeSmemPairs(Lowering &l, FragmentShape shape, ArrayRef<Value> v,
                    const SmemBuffer &buffer) {
  OpBuilder &b = l.b;
  Value rowVar = arith::AddIOp::create(
      b, l.loc, arith::MulIOp::create(b, l.loc, l.warp, l.i32(16)),
      arith::ShRUIOp::create(b, l.loc, l.lane, l.i32(2)));
  Value pairBytes = arith::ShLIOp::create(
      b, l.loc, arith::AndIOp::create(b, l.loc, l.lane, l.i32(3)), l.i32(2));
  for (int64_t t = 0; t < shape.mTiles; ++t)
    for (int64_t n = 0; n < shape.nBlocks; ++n)
      for (int64_t h = 0; h < 2; ++h) {
        int64_t index = (t * shape.nBlocks + n) * 4 + 2 * h;
        Value offset = arith::AddIOp::create(
            b, l.loc,
            l.swizzledOffsetSplit(buffer, rowVar, 16 * l.numWarps() * t + 8 * h,
                                  l.i32(8 * (n % 2)), 16 * (n / 2)),
            pairBytes);
        LLVM::StoreOp::create(b, l.loc, pack(l, v[index], v[index + 1]),
                              l.smemPtr(offset), /*alignment=*/4);
      }
}

/// sm_90a's attn.store_smem: per m-tile and pair of 8-column blocks, one
/// stmatrix.x4 of the four 8x8 matrices the lane's fragments are part of
/// (rows 0-7 and 8-15 of the slice, the two blocks); lane l gives the
/// address of row l % 8 of matrix l / 8: slice row (l & 7) + (l & 8),
/// column 8 * (l >> 4) of the pair. In a 128-byte swizzle the eight rows of
/// a matrix sit in eight different 16-byte chunks: no bank conflict. Then a
/// proxy fence, so that the TMA (the async proxy) reads what was written.
void storeSmemMatrices(Lowering &l, FragmentShape shape, ArrayRef<Value> v,
                       const SmemBuffer &buffer) {
  OpBuilder &b = l.b;
  Value rowVar = arith::AddIOp::create(
      b, l.loc, arith::MulIOp::create(b, l.loc, l.warp, l.i32(16)),
      arith::AndIOp::create(b, l.loc, l.lane, l.i32(15)));
  Value colVar = arith::ShRUIOp::create(
      b, l.loc, arith::AndIOp::create(b, l.loc, l.lane, l.i32(16)), l.i32(1));
  auto layout = NVVM::MMALayoutAttr::get(b.getContext(), NVVM::MMALayout::row);
  auto matrix = NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8);
  auto element = NVVM::LdStMatrixEltTypeAttr::get(b.getContext(),
                                                  NVVM::LdStMatrixEltType::B16);
  for (int64_t t = 0; t < shape.mTiles; ++t)
    for (int64_t n = 0; n < shape.nBlocks; n += 2) {
      int64_t lo = (t * shape.nBlocks + n) * 4;
      int64_t hi = lo + 4;
      SmallVector<Value> matrices = {
          pack(l, v[lo + 0], v[lo + 1]), pack(l, v[lo + 2], v[lo + 3]),
          pack(l, v[hi + 0], v[hi + 1]), pack(l, v[hi + 2], v[hi + 3])};
      Value offset = l.swizzledOffsetSplit(
          buffer, rowVar, 16 * l.numWarps() * t, colVar, 8 * n);
      NVVM::StMatrixOp::create(b, l.loc, l.smemPtr(offset), matrices, layout,
                               matrix, element);
    }
  NVVM::FenceProxyOp::create(
      b, l.loc,
      NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

/// attn.store_smem: the accumulator tile, converted, into its swizzled
/// shared-memory tile.
void lowerStoreSmem(Lowering &l, StoreSmemOp op) {
  FragmentShape shape =
      l.fragmentShape(cast<RegTileType>(op.getValue().getType()));
  const SmallVector<Value> &v = l.tiles[op.getValue()];
  const SmemBuffer &buffer = l.buffers[op.getBuffer()];
  if (l.target == TargetKind::sm_80)
    storeSmemPairs(l, shape, v, buffer);
  else
    storeSmemMatrices(l, shape, v, buffer);
}

/// attn.load: each thread loads its column pairs as 8-byte words (f32) or
/// 4-byte words (16-bit, widened); rows at or past N read 0 (their address
/// is the tensor's base).
void lowerLoad(Lowering &l, LoadOp op) {
  OpBuilder &b = l.b;
  auto type = cast<RegTileType>(op.getType());
  FragmentShape shape = l.fragmentShape(type);
  Tensor tensor = l.tensors.lookup(op.getSrc());
  // The batch's rows, or a packed batch's sequence (null batch).
  TileRows rows = l.tileRows(tensor, op.getBatch(), op.getRow());
  Value batch = rows.batch;
  Value head0 = l.toI32(l.scalar(op.getHead()));
  Value row0 = rows.row;
  Value numRows = rows.end;
  Value base = l.params.ptr[static_cast<int>(tensor)];
  bool f32 = l.elementBytes(tensor) == 4;
  auto vecType = VectorType::get({2}, f32 ? b.getF32Type() : l.elementType);
  Value zero = l.f32(0.0f);
  SmallVector<Value> values(valueCount(l, type));
  for (int64_t t = 0; t < shape.mTiles; ++t)
    for (int64_t h = 0; h < 2; ++h) {
      Lowering::GlobalRow r = l.globalFragmentRow(
          t, h, type.getRows(), op.headPack(), row0, head0, numRows);
      for (int64_t n = 0; n < shape.nBlocks; ++n) {
        Value addr = arith::SelectOp::create(
            b, l.loc, r.inside,
            l.globalAddress(tensor, batch, r.row, r.head, l.fragmentCol(n, 0)),
            base);
        auto load = LLVM::LoadOp::create(b, l.loc, vecType, addr,
                                         /*alignment=*/f32 ? 8 : 4);
        load.setInvariant(true);
        int64_t index = (t * shape.nBlocks + n) * 4 + 2 * h;
        for (int64_t e = 0; e < 2; ++e) {
          Value element =
              LLVM::ExtractElementOp::create(b, l.loc, load, l.i32(e));
          if (!f32)
            element = arith::ExtFOp::create(b, l.loc, b.getF32Type(), element);
          values[index + e] =
              arith::SelectOp::create(b, l.loc, r.inside, element, zero);
        }
      }
    }
  l.tiles[op] = values;
}

/// One lane of the four that share a row writes it: lse[b, h, row], or for
/// a packed batch lse[h, start + row] (a packed tile's rows: their head and
/// position).
void lowerStoreRows(Lowering &l, StoreRowsOp op) {
  OpBuilder &b = l.b;
  auto type = cast<RegTileType>(op.getValue().getType());
  FragmentShape shape = l.fragmentShape(type);
  const SmallVector<Value> &v = l.tiles[op.getValue()];
  Tensor tensor = l.tensors.lookup(op.getDst());
  // The rows are query rows: Nq (or the sequence's end) bounds them.
  TileRows rows = l.tileRows(Tensor::Q, op.getBatch(), op.getRow());
  // A tile that packs heads computes each row's offset on its own (its
  // head varies by row); any other one row offset for the whole tile.
  bool packedHeads = op.headPack() > 1;
  Value batch = rows.batch && !packedHeads ? l.toI64(rows.batch) : Value();
  Value head0 = l.toI32(l.scalar(op.getHead()));
  Value head = packedHeads ? Value() : l.toI64(head0);
  Value row0 = rows.row;
  Value base = l.params.ptr[static_cast<int>(tensor)];
  auto ptrType =
      LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
  Value notNull = arith::CmpIOp::create(
      b, l.loc, arith::CmpIPredicate::ne,
      LLVM::PtrToIntOp::create(b, l.loc, b.getI64Type(), base), l.i64(0));
  Value firstLane = arith::CmpIOp::create(
      b, l.loc, arith::CmpIPredicate::eq,
      arith::AndIOp::create(b, l.loc, l.lane, l.i32(3)), l.i32(0));
  l.emitIf(arith::AndIOp::create(b, l.loc, notNull, firstLane), [&] {
    if (packedHeads) {
      for (int64_t t = 0; t < shape.mTiles; ++t)
        for (int64_t h = 0; h < 2; ++h) {
          Lowering::GlobalRow r = l.globalFragmentRow(
              t, h, type.getRows(), op.headPack(), row0, head0, rows.end);
          l.emitIf(r.inside, [&] {
            Value addr = LLVM::GEPOp::create(
                b, l.loc, ptrType, b.getF32Type(), base,
                ValueRange{l.rowsOffset(rows.batch, r.head, r.row)});
            LLVM::StoreOp::create(b, l.loc, v[t * 2 + h], addr,
                                  /*alignment=*/4);
          });
        }
      return;
    }
    // (b * H + h) * Nq, or h * total_q for a packed batch.
    Value rowsPerHead = l.toI64(l.params.nq);
    Value batchHead = head;
    if (batch)
      batchHead = arith::AddIOp::create(
          b, l.loc,
          arith::MulIOp::create(b, l.loc, batch, l.toI64(l.params.numHeads)),
          head);
    Value rowBase = arith::MulIOp::create(b, l.loc, batchHead, rowsPerHead);
    for (int64_t t = 0; t < shape.mTiles; ++t)
      for (int64_t h = 0; h < 2; ++h) {
        Value row = arith::AddIOp::create(b, l.loc, row0, l.fragmentRow(t, h));
        Value inside = arith::CmpIOp::create(
            b, l.loc, arith::CmpIPredicate::slt, row, rows.end);
        l.emitIf(inside, [&] {
          Value offset = arith::AddIOp::create(b, l.loc, rowBase, l.toI64(row));
          Value addr = LLVM::GEPOp::create(b, l.loc, ptrType, b.getF32Type(),
                                           base, ValueRange{offset});
          LLVM::StoreOp::create(b, l.loc, v[t * 2 + h], addr, /*alignment=*/4);
        });
      }
  });
}

/// attn.load_rows: every lane of a row loads it (rows past Nq: -inf, their
/// address the tensor's base).
void lowerLoadRows(Lowering &l, LoadRowsOp op) {
  OpBuilder &b = l.b;
  auto type = cast<RegTileType>(op.getType());
  FragmentShape shape = l.fragmentShape(type);
  // Query rows: Nq, or the packed batch's sequence, bounds them.
  TileRows rows = l.tileRows(Tensor::Q, op.getBatch(), op.getRow());
  Value batch = rows.batch;
  Value head0 = l.toI32(l.scalar(op.getHead()));
  Value row0 = rows.row;
  Value base = l.params.ptr[static_cast<int>(l.tensors.lookup(op.getSrc()))];
  auto ptrType =
      LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
  Value negInf = l.f32(-std::numeric_limits<float>::infinity());
  SmallVector<Value> values;
  for (int64_t t = 0; t < shape.mTiles; ++t)
    for (int64_t h = 0; h < 2; ++h) {
      Lowering::GlobalRow r = l.globalFragmentRow(
          t, h, type.getRows(), op.headPack(), row0, head0, rows.end);
      Value addr = arith::SelectOp::create(
          b, l.loc, r.inside,
          LLVM::GEPOp::create(b, l.loc, ptrType, b.getF32Type(), base,
                              ValueRange{l.rowsOffset(batch, r.head, r.row)}),
          base);
      auto load = LLVM::LoadOp::create(b, l.loc, b.getF32Type(), addr,
                                       /*alignment=*/4);
      load.setInvariant(true);
      values.push_back(
          arith::SelectOp::create(b, l.loc, r.inside, load, negInf));
    }
  l.tiles[op] = values;
}

/// attn.elementwise: each thread combines its own elements.
void lowerElementwise(Lowering &l, ElementwiseOp op) {
  SmallVector<Value> result;
  for (auto [x, y] : llvm::zip(l.tiles[op.getLhs()], l.tiles[op.getRhs()]))
    result.push_back(op.getKind() == ReduceKind::max
                         ? arith::MaxNumFOp::create(l.b, l.loc, x, y)
                               .getResult()
                         : arith::AddFOp::create(l.b, l.loc, x, y).getResult());
  l.tiles[op] = result;
}

} // namespace

void mlir::attn::populateFragmentLowerings(LoweringTable &table) {
  table.add<SplatOp>(lowerSplat);
  table.add<MaskOp>(lowerMask);
  table.add<SoftcapOp>(lowerSoftcap);
  table.add<AlibiOp>(lowerAlibi).checkedBy(
      [](Operation *op, const KernelFacts &facts) {
        return facts.expect(op, cast<AlibiOp>(op).getSlopes(),
                            {Tensor::AlibiSlopes},
                            "must read the kernel's \"alibi_slopes\" "
                            "argument");
      });
  table.add<DescaleOp>(lowerDescale).checkedBy(
      [](Operation *op, const KernelFacts &facts) {
        for (Value factor : cast<DescaleOp>(op).getFactors())
          if (failed(facts.expect(
                  op, factor,
                  {Tensor::QDescale, Tensor::KDescale, Tensor::VDescale},
                  "must read the kernel's \"q_descale\", \"k_descale\" "
                  "and \"v_descale\" arguments")))
            return failure();
        return success();
      });
  table.add<RowReduceOp>(lowerRowReduce);
  table.add<Exp2DiffOp>(lowerExp2Diff);
  table.add<RescaleOp>(lowerRescale);
  table.add<NormalizeOp>(lowerNormalize);
  table.add<LogSumExpOp>(lowerLogSumExp);
  table.add<ConvertOp>(lowerConvert);
  table.add<ElementwiseOp>(lowerElementwise);
  table.add<StoreSmemOp>(lowerStoreSmem);
  // The kernel ABI has one parameter per tensor role: each store and load
  // names the one it writes or reads.
  table.add<StoreOp>(lowerStore).checkedBy(
      [](Operation *op, const KernelFacts &facts) {
        return facts.expect(op, cast<StoreOp>(op).getDst(),
                            {Tensor::O, Tensor::OPartial, Tensor::Dq,
                             Tensor::Dk, Tensor::Dv, Tensor::DqAccum},
                            "must write the kernel's \"o\" argument (a "
                            "split kernel's \"o_partial\", a backward "
                            "kernel's \"dq\", \"dk\", \"dv\" or "
                            "\"dq_accum\")");
      });
  table.add<StoreRowsOp>(lowerStoreRows)
      .checkedBy([](Operation *op, const KernelFacts &facts) {
        return facts.expect(op, cast<StoreRowsOp>(op).getDst(),
                            {Tensor::Lse, Tensor::LsePartial, Tensor::Delta},
                            "must write the kernel's \"lse\" (or "
                            "\"lse_partial\", or a backward kernel's "
                            "\"delta\") argument");
      });
  table.add<LoadOp>(lowerLoad).checkedBy(
      [](Operation *op, const KernelFacts &facts) {
        return facts.expect(op, cast<LoadOp>(op).getSrc(),
                            {Tensor::OPartial, Tensor::O, Tensor::Dout,
                             Tensor::DqAccum},
                            "must read the kernel's \"o_partial\" argument "
                            "(or a backward kernel's \"o\", \"dout\" or "
                            "\"dq_accum\")");
      });
  table.add<LoadRowsOp>(lowerLoadRows)
      .checkedBy([](Operation *op, const KernelFacts &facts) {
        return facts.expect(op, cast<LoadRowsOp>(op).getSrc(),
                            {Tensor::LsePartial, Tensor::Lse},
                            "must read the kernel's \"lse_partial\" "
                            "argument (or a backward kernel's \"lse\")");
      });
}
