//===- BackwardLowering.cpp - the backward's register-tile ops ------------===//
//
// The ops the backward pass adds to the forward's (AttnBackwardOps.td), in
// the fragment layout of Lowering.h, the same code for both targets. A `col`
// vector holds, per thread, the columns of its fragments: value n * 2 + e is
// column 8n + 2(l%4) + e, which element (t * nBlocks + n) * 4 + i of an
// `acc` tile uses with e = i % 2.
//
//===----------------------------------------------------------------------===//
#include "LoweringTable.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The index into a row or col vector that element `index` of an acc tile
/// of `type` reads.
int64_t vectorIndexOf(Lowering &l, RegTileType tile, RegTileType vector,
                      int64_t index) {
  FragmentShape shape = l.fragmentShape(tile);
  int64_t i = index % 4;
  if (vector.isRow()) {
    int64_t t = index / (shape.nBlocks * 4);
    return t * 2 + i / 2;
  }
  int64_t n = index / 4 % shape.nBlocks;
  return n * 2 + i % 2;
}

/// attn.load_cols: a warp's lanes share their columns (lane l's fragments
/// hold columns 8n + 2(l%4) + e, the same in every row group), so lane l
/// loads columns 2l and 2l + 1 of every 64 and hands each lane its own with
/// shuffles: N/32 loads and N/4 shuffles a thread where loading each
/// fragment column took N/4 loads and their address arithmetic (the bulk
/// of the dkdv step's non-GEMM instructions). Into a `lanes` tile it only
/// loads (the backward loads a step ahead); attn.spread_cols shuffles.
///
/// The two values lane l of each warp loads of every 64 columns of `op`'s
/// vector, columns 64j + 2l + e at [j * 2 + e]; columns at or past the
/// end (of the tile or of Nq) read 0. Each is one predicated load into a
/// register set to 0 first: no instruction reads the result here, so a
/// load issued a step ahead does not stall the step that issues it.
SmallVector<Value> loadColsOfLane(Lowering &l, LoadColsOp op, int64_t width) {
  OpBuilder &b = l.b;
  Tensor tensor = l.tensors.lookup(op.getSrc());
  // The columns are query rows of the [B, H, Nq] tensor.
  TileRows cols = l.tileRows(Tensor::Q, op.getBatch(), op.getCol());
  Value head = l.toI64(l.toI32(l.scalar(op.getHead())));
  Value base = l.params.ptr[static_cast<int>(tensor)];
  auto ptrType =
      LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
  // (b * H + h) * Nq, or h * total_q for a packed batch.
  Value batchHead = head;
  if (cols.batch)
    batchHead = arith::AddIOp::create(
        b, l.loc,
        arith::MulIOp::create(b, l.loc, l.toI64(cols.batch),
                              l.toI64(l.params.numHeads)),
        head);
  Value rowBase =
      arith::MulIOp::create(b, l.loc, batchHead, l.toI64(l.params.nq));
  Value pair = arith::ShLIOp::create(b, l.loc, l.lane, l.i32(1));
  SmallVector<Value> loaded;
  for (int64_t j = 0; j < (width + 63) / 64; ++j)
    for (int64_t e = 0; e < 2; ++e) {
      Value inTile = arith::AddIOp::create(b, l.loc, pair, l.i32(64 * j + e));
      Value col = arith::AddIOp::create(b, l.loc, cols.row, inTile);
      Value inside = arith::AndIOp::create(
          b, l.loc,
          arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::slt, inTile,
                                l.i32(width)),
          arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::slt, col,
                                cols.end));
      Value offset = arith::AddIOp::create(b, l.loc, rowBase, l.toI64(col));
      Value addr = LLVM::GEPOp::create(b, l.loc, ptrType, b.getF32Type(),
                                       base, ValueRange{offset});
      // The tensors are read-only in the kernel: the non-coherent path.
      loaded.push_back(
          LLVM::InlineAsmOp::create(
              b, l.loc, b.getF32Type(),
              ValueRange{arith::ExtUIOp::create(b, l.loc, b.getI32Type(),
                                                inside),
                         addr},
              "{\n.reg .pred p;\nsetp.ne.b32 p, $1, 0;\nmov.b32 $0, 0;\n"
              "@p ld.global.nc.f32 $0, [$2];\n}",
              "=f,r,l", /*has_side_effects=*/false,
              /*is_align_stack=*/false, LLVM::TailCallKind::None,
              LLVM::AsmDialectAttr(), ArrayAttr())
              .getResult(0));
    }
  return loaded;
}

/// Hands each thread its columns of a loaded vector (`loadColsOfLane`'s
/// order), made the exponent's bias first with `exp2Bias`.
SmallVector<Value> spreadCols(Lowering &l, ArrayRef<Value> loaded,
                              int64_t width, bool exp2Bias) {
  OpBuilder &b = l.b;
  SmallVector<Value> values(loaded);
  if (exp2Bias)
    for (Value &value : values) {
      // -x log2(e), and -inf for an infinite x (P = 0).
      Value magnitude = LLVM::FAbsOp::create(b, l.loc, value);
      Value infinite = arith::CmpFOp::create(
          b, l.loc, arith::CmpFPredicate::OEQ, magnitude,
          l.f32(std::numeric_limits<float>::infinity()));
      value = arith::SelectOp::create(
          b, l.loc, infinite, l.f32(-std::numeric_limits<float>::infinity()),
          arith::MulFOp::create(
              b, l.loc, value,
              l.f32(-static_cast<float>(llvm::numbers::log2e))));
    }
  // Column 8n + 2(l%4) + e is value e of lane 4(n%8) + l%4, chunk n/8.
  Value quad = arith::AndIOp::create(b, l.loc, l.lane, l.i32(3));
  SmallVector<Value> spread;
  for (int64_t n = 0; n < width / 8; ++n) {
    Value source = arith::AddIOp::create(b, l.loc, quad, l.i32(4 * (n % 8)));
    for (int64_t e = 0; e < 2; ++e)
      spread.push_back(NVVM::ShflOp::create(
          b, l.loc, b.getF32Type(), l.i32(-1), values[n / 8 * 2 + e], source,
          l.i32(0x1f), NVVM::ShflKind::idx, UnitAttr()));
  }
  return spread;
}

void lowerLoadCols(Lowering &l, LoadColsOp op) {
  auto type = cast<RegTileType>(op.getType());
  const int64_t width = type.getShape()[0];
  SmallVector<Value> loaded = loadColsOfLane(l, op, width);
  l.tiles[op] = type.isLanes()
                    ? loaded
                    : spreadCols(l, loaded, width, op.getExp2Bias());
}

void lowerSpreadCols(Lowering &l, SpreadColsOp op) {
  const int64_t width = cast<RegTileType>(op.getType()).getShape()[0];
  l.tiles[op] = spreadCols(l, l.tiles[op.getInput()], width, op.getExp2Bias());
}

/// exp2(s * c - lse * log2(e)) = exp2(fma(s, c, -lse * log2(e))); an
/// infinite LSE (a row without keys: -inf from attngen, +inf from
/// flash_attn) is taken as +inf, so P = 0 there.
void lowerRecomputeProbs(Lowering &l, RecomputeProbsOp op) {
  OpBuilder &b = l.b;
  auto tile = cast<RegTileType>(op.getInput().getType());
  auto vector = cast<RegTileType>(op.getLse().getType());
  Value c = l.f32(op.getScaleLog2e().convertToFloat());
  Value negLog2e = l.f32(-static_cast<float>(llvm::numbers::log2e));
  Value inf = l.f32(std::numeric_limits<float>::infinity());
  Value negInf = l.f32(-std::numeric_limits<float>::infinity());
  SmallVector<Value> negLse;
  for (Value lse : l.tiles[op.getLse()]) {
    if (op.getBiased()) {
      negLse.push_back(lse);
      continue;
    }
    Value empty =
        arith::CmpFOp::create(b, l.loc, arith::CmpFPredicate::OEQ, lse, negInf);
    Value safe = arith::SelectOp::create(b, l.loc, empty, inf, lse);
    negLse.push_back(arith::MulFOp::create(b, l.loc, safe, negLog2e));
  }
  SmallVector<Value> result;
  for (auto [index, s] : llvm::enumerate(l.tiles[op.getInput()])) {
    Value arg = LLVM::FMAOp::create(
        b, l.loc, s, c, negLse[vectorIndexOf(l, tile, vector, index)]);
    auto fmf = LLVM::FastmathFlagsAttr::get(b.getContext(),
                                            LLVM::FastmathFlags::afn);
    result.push_back(LLVM::Exp2Op::create(b, l.loc, arg.getType(), arg, fmf));
  }
  l.tiles[op] = result;
}

/// p * scale (dp - delta), times 1 - t^2 under a soft cap.
void lowerSoftmaxGrad(Lowering &l, SoftmaxGradOp op) {
  OpBuilder &b = l.b;
  auto tile = cast<RegTileType>(op.getProbs().getType());
  auto vector = cast<RegTileType>(op.getDelta().getType());
  const SmallVector<Value> &p = l.tiles[op.getProbs()];
  const SmallVector<Value> &dp = l.tiles[op.getDprobs()];
  const SmallVector<Value> &delta = l.tiles[op.getDelta()];
  const SmallVector<Value> *tanh =
      op.getTanh() ? &l.tiles[op.getTanh()] : nullptr;
  Value scale = l.f32(op.getScale().convertToFloat());
  // scale (dp - delta) = fma(dp, scale, -scale delta): the product once
  // per vector entry, then one FMA and one multiply per element.
  SmallVector<Value> negScaledDelta;
  for (Value d : delta)
    negScaledDelta.push_back(arith::MulFOp::create(
        b, l.loc, d, l.f32(-op.getScale().convertToFloat())));
  SmallVector<Value> result;
  for (size_t index = 0; index < p.size(); ++index) {
    Value d = LLVM::FMAOp::create(
        b, l.loc, dp[index], scale,
        negScaledDelta[vectorIndexOf(l, tile, vector, index)]);
    Value grad = p[index];
    if (tanh) {
      Value t = (*tanh)[index];
      // 1 - t^2 = fma(-t, t, 1)
      Value slope = LLVM::FMAOp::create(
          b, l.loc, arith::NegFOp::create(b, l.loc, t), t, l.f32(1.0f));
      grad = arith::MulFOp::create(b, l.loc, grad, slope);
    }
    result.push_back(arith::MulFOp::create(b, l.loc, grad, d));
  }
  l.tiles[op] = result;
}

/// Per row: the thread's products summed, then across the row's four lanes.
void lowerRowDot(Lowering &l, RowDotOp op) {
  OpBuilder &b = l.b;
  auto type = cast<RegTileType>(op.getLhs().getType());
  FragmentShape shape = l.fragmentShape(type);
  const SmallVector<Value> &x = l.tiles[op.getLhs()];
  const SmallVector<Value> &y = l.tiles[op.getRhs()];
  SmallVector<Value> result;
  for (int64_t t = 0; t < shape.mTiles; ++t)
    for (int64_t h = 0; h < 2; ++h) {
      Value acc = l.f32(0.0f);
      for (int64_t n = 0; n < shape.nBlocks; ++n)
        for (int64_t e = 0; e < 2; ++e) {
          int64_t index = (t * shape.nBlocks + n) * 4 + 2 * h + e;
          acc = LLVM::FMAOp::create(b, l.loc, x[index], y[index], acc);
        }
      result.push_back(l.combineRowLanes(acc, [&](Value x, Value y) -> Value {
        return arith::AddFOp::create(b, l.loc, x, y);
      }));
    }
  l.tiles[op] = result;
}

/// A row's 16-byte runs, dealt to the threads: run c = tid + i * threads is
/// run c % perRow of tile row c / perRow, so consecutive threads take
/// consecutive runs of a row and a warp whole rows. `inside`: the run
/// exists and its row lies before `end`.
struct RowRun {
  Value row, run, inside;
};
SmallVector<RowRun> rowRuns(Lowering &l, Value row0, Value end, int64_t rows,
                            int64_t perRow) {
  OpBuilder &b = l.b;
  const int64_t runs = rows * perRow, threads = l.numThreads();
  SmallVector<RowRun> result;
  for (int64_t first = 0; first < runs; first += threads) {
    Value c = arith::AddIOp::create(b, l.loc, l.tid, l.i32(first));
    RowRun r;
    r.row = arith::AddIOp::create(
        b, l.loc, row0, arith::DivUIOp::create(b, l.loc, c, l.i32(perRow)));
    r.run = arith::RemUIOp::create(b, l.loc, c, l.i32(perRow));
    r.inside =
        arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::slt, r.row, end);
    if (first + threads > runs)
      r.inside = arith::AndIOp::create(
          b, l.loc, r.inside,
          arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::slt, c,
                                l.i32(runs)));
    result.push_back(r);
  }
  return result;
}

/// A 16-byte load of `type` at column `col` of `row` when `inside`, else of
/// the tensor's base (so every load is issued before any is used).
Value loadRun(Lowering &l, Tensor tensor, TileRows rows, Value head,
              const RowRun &r, Value col, VectorType type) {
  OpBuilder &b = l.b;
  Value addr = arith::SelectOp::create(
      b, l.loc, r.inside, l.globalAddress(tensor, rows.batch, r.row, head, col),
      l.params.ptr[static_cast<int>(tensor)]);
  auto load = LLVM::LoadOp::create(b, l.loc, type, addr, /*alignment=*/16);
  load.setInvariant(true);
  return load;
}

int64_t headDimOf(Value tensor) {
  return cast<MemRefType>(tensor.getType()).getShape().back();
}

/// attn.convert_rows: runs of four f32, all loaded first, then each stored
/// as four 16-bit values (8 bytes) where it lies inside.
void lowerConvertRows(Lowering &l, ConvertRowsOp op) {
  OpBuilder &b = l.b;
  Tensor src = l.tensors.lookup(op.getSrc());
  Tensor dst = l.tensors.lookup(op.getDst());
  Value head = l.toI32(l.scalar(op.getHead()));
  TileRows rows = l.tileRows(src, op.getBatch(), op.getRow());
  TileRows outRows = l.tileRows(dst, op.getBatch(), op.getRow());
  Type outElement = cast<MemRefType>(op.getDst().getType()).getElementType();
  auto inType = VectorType::get({4}, b.getF32Type());
  auto outType = VectorType::get({4}, outElement);
  SmallVector<RowRun> runs =
      rowRuns(l, rows.row, rows.end, op.getRows(), headDimOf(op.getSrc()) / 4);
  SmallVector<Value> values;
  for (const RowRun &r : runs) {
    Value col = arith::MulIOp::create(b, l.loc, r.run, l.i32(4));
    values.push_back(loadRun(l, src, rows, head, r, col, inType));
  }
  for (auto [r, value] : llvm::zip(runs, values))
    l.emitIf(r.inside, [&] {
      Value col = arith::MulIOp::create(b, l.loc, r.run, l.i32(4));
      Value out = arith::TruncFOp::create(b, l.loc, outType, value);
      LLVM::StoreOp::create(
          b, l.loc, out, l.globalAddress(dst, outRows.batch, r.row, head, col),
          /*alignment=*/8);
    });
}

/// attn.clear_rows: a 16-byte store of zeros per run inside.
void lowerClearRows(Lowering &l, ClearRowsOp op) {
  OpBuilder &b = l.b;
  Tensor dst = l.tensors.lookup(op.getDst());
  Value head = l.toI32(l.scalar(op.getHead()));
  TileRows rows = l.tileRows(dst, op.getBatch(), op.getRow());
  auto type = VectorType::get({4}, b.getF32Type());
  Value zeros = arith::ConstantOp::create(
      b, l.loc, type, DenseElementsAttr::get(type, b.getF32FloatAttr(0.0f)));
  for (const RowRun &r :
       rowRuns(l, rows.row, rows.end, op.getRows(), headDimOf(op.getDst()) / 4))
    l.emitIf(r.inside, [&] {
      Value col = arith::MulIOp::create(b, l.loc, r.run, l.i32(4));
      LLVM::StoreOp::create(b, l.loc, zeros,
                            l.globalAddress(dst, rows.batch, r.row, head, col),
                            /*alignment=*/16);
    });
}

/// attn.dot_rows: runs of eight 16-bit elements of both tensors, all loaded
/// first; each thread sums its run's products in f32, the D / 8 threads of
/// a row (a power of two within a warp) add theirs with butterfly
/// shuffles, and the row's first thread writes the sum.
void lowerDotRows(Lowering &l, DotRowsOp op) {
  OpBuilder &b = l.b;
  Tensor lhs = l.tensors.lookup(op.getLhs());
  Tensor rhs = l.tensors.lookup(op.getRhs());
  Tensor dst = l.tensors.lookup(op.getDst());
  Value head = l.toI32(l.scalar(op.getHead()));
  TileRows rows = l.tileRows(lhs, op.getBatch(), op.getRow());
  const int64_t perRow = headDimOf(op.getLhs()) / 8;
  Type element = cast<MemRefType>(op.getLhs().getType()).getElementType();
  auto type = VectorType::get({8}, element);
  SmallVector<RowRun> runs =
      rowRuns(l, rows.row, rows.end, op.getRows(), perRow);
  SmallVector<std::pair<Value, Value>> values;
  for (const RowRun &r : runs) {
    Value col = arith::MulIOp::create(b, l.loc, r.run, l.i32(8));
    values.push_back({loadRun(l, lhs, rows, head, r, col, type),
                      loadRun(l, rhs, rows, head, r, col, type)});
  }
  auto ptrType =
      LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
  Value base = l.params.ptr[static_cast<int>(dst)];
  for (auto [r, pair] : llvm::zip(runs, values)) {
    Value sum = l.f32(0.0f);
    for (int64_t e = 0; e < 8; ++e) {
      auto at = [&](Value v) -> Value {
        Value x = LLVM::ExtractElementOp::create(b, l.loc, v, l.i32(e));
        return arith::ExtFOp::create(b, l.loc, b.getF32Type(), x);
      };
      sum = LLVM::FMAOp::create(b, l.loc, at(pair.first), at(pair.second), sum);
    }
    for (int64_t offset = perRow / 2; offset >= 1; offset /= 2)
      sum = arith::AddFOp::create(
          b, l.loc, sum,
          NVVM::ShflOp::create(b, l.loc, b.getF32Type(), l.i32(-1), sum,
                               l.i32(offset), l.i32(0x1f), NVVM::ShflKind::bfly,
                               UnitAttr()));
    Value first = arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::eq,
                                        r.run, l.i32(0));
    l.emitIf(arith::AndIOp::create(b, l.loc, r.inside, first), [&] {
      Value addr = LLVM::GEPOp::create(
          b, l.loc, ptrType, b.getF32Type(), base,
          ValueRange{l.rowsOffset(rows.batch, head, r.row)});
      LLVM::StoreOp::create(b, l.loc, sum, addr, /*alignment=*/4);
    });
  }
}

} // namespace

void mlir::attn::populateBackwardLowerings(LoweringTable &table) {
  table.add<LoadColsOp>(lowerLoadCols)
      .checkedBy([](Operation *op, const KernelFacts &facts) {
        return facts.expect(op, cast<LoadColsOp>(op).getSrc(),
                            {Tensor::Lse, Tensor::Delta},
                            "must read the kernel's \"lse\" or \"delta\" "
                            "argument");
      });
  table.add<SpreadColsOp>(lowerSpreadCols);
  table.add<RecomputeProbsOp>(lowerRecomputeProbs);
  table.add<SoftmaxGradOp>(lowerSoftmaxGrad);
  table.add<RowDotOp>(lowerRowDot);
  table.add<DotRowsOp>(lowerDotRows)
      .checkedBy([](Operation *op, const KernelFacts &facts) {
        auto dot = cast<DotRowsOp>(op);
        for (Value tensor : {dot.getLhs(), dot.getRhs()})
          if (failed(facts.expect(op, tensor, {Tensor::O, Tensor::Dout},
                                  "must read the kernel's \"o\" or \"dout\" "
                                  "argument")))
            return failure();
        return facts.expect(op, dot.getDst(), {Tensor::Delta},
                            "must write the kernel's \"delta\" argument");
      });
  table.add<ClearRowsOp>(lowerClearRows)
      .checkedBy([](Operation *op, const KernelFacts &facts) {
        return facts.expect(op, cast<ClearRowsOp>(op).getDst(),
                            {Tensor::DqAccum},
                            "must write the kernel's \"dq_accum\" argument");
      });
  table.add<ConvertRowsOp>(lowerConvertRows)
      .checkedBy([](Operation *op, const KernelFacts &facts) {
        auto convert = cast<ConvertRowsOp>(op);
        if (failed(facts.expect(op, convert.getSrc(), {Tensor::DqAccum},
                                "must read the kernel's \"dq_accum\" "
                                "argument")))
          return failure();
        return facts.expect(op, convert.getDst(), {Tensor::Dq},
                            "must write the kernel's \"dq\" argument");
      });
}
