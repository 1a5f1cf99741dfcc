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
}
