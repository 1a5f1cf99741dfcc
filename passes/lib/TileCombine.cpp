//===- TileCombine.cpp - attn-tile: the split-KV combine program ----------===//
//
// attn.combine_splits  ->  one CTA per (query tile, head group, batch), the
// split kernel's tiles, merging the splits online as the softmax merges key
// blocks:
//
//   m = -inf, l = 0, acc = 0
//   for s in 0..num_splits:
//     lse_s = load_rows LSE_s;  O_s = load O_s        (row s * B + b)
//     m' = max(m, lse_s); alpha = exp(m - m'); w = exp(lse_s - m')
//     l = l * alpha + w;  acc = acc * alpha + O_s * w;  m = m'
//   O = acc / l;  LSE = m + log(l)
//
// The partial outputs are normalised, so the weights are the splits'
// shares of the softmax mass; a split that saw no key (lse_s = -inf) weighs
// 0, and a row no split saw ends with O = 0, LSE = -inf.
//
//===----------------------------------------------------------------------===//
#include "TileKvCache.h"

#include "attn/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::tileCombine(CombineSplitsOp op, func::FuncOp func,
                             const TileConfig &config) {
  MLIRContext *ctx = op.getContext();
  OpBuilder b(op);
  Location loc = op.getLoc();
  const int64_t pack = op.headPack();
  const int64_t positions = config.blockM / pack;
  const int64_t headDim =
      cast<MemRefType>(op.getO().getType()).getDimSize(3);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  IntegerAttr packAttr = pack > 1 ? b.getI64IntegerAttr(pack) : IntegerAttr();
  auto accType = RegTileType::get(ctx, {config.blockM, headDim},
                                  b.getF32Type(), FragmentKind::acc);
  auto rowType = RegTileType::get(ctx, {config.blockM}, b.getF32Type(),
                                  FragmentKind::row);
  FloatAttr log2e = b.getF32FloatAttr(llvm::numbers::log2e);

  Value c0 = index(0), c1 = index(1);
  Value qTile = ProgramIdOp::create(b, loc, b.getIndexType(), 0);
  Value headGroup = ProgramIdOp::create(b, loc, b.getIndexType(), 1);
  Value batch = ProgramIdOp::create(b, loc, b.getIndexType(), 2);
  Value row = arith::MulIOp::create(b, loc, qTile, index(positions));
  Value head = arith::MulIOp::create(b, loc, headGroup, index(pack));
  Value numSplits =
      ProblemSizeOp::create(b, loc, b.getIndexType(), SizeKind::num_splits);
  Value batches = memref::DimOp::create(b, loc, op.getO(), 0);

  Value acc0 = SplatOp::create(b, loc, accType, b.getF32FloatAttr(0.0f));
  Value max0 = SplatOp::create(
      b, loc, rowType,
      b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  Value sum0 = SplatOp::create(b, loc, rowType, b.getF32FloatAttr(0.0f));
  auto loop = scf::ForOp::create(
      b, loc, c0, numSplits, c1, ValueRange{acc0, max0, sum0},
      [&](OpBuilder &lb, Location l, Value s, ValueRange iter) {
        Value acc = iter[0], max = iter[1], sum = iter[2];
        Value partialBatch = arith::AddIOp::create(
            lb, l, arith::MulIOp::create(lb, l, s, batches), batch);
        Value lse = LoadRowsOp::create(lb, l, rowType, op.getLsePartial(),
                                       partialBatch, head, row, packAttr);
        Value out = LoadOp::create(lb, l, accType, op.getOPartial(),
                                   partialBatch, row, head, packAttr);
        Value newMax =
            ElementwiseOp::create(lb, l, rowType, ReduceKind::max, max, lse);
        Value alpha = Exp2DiffOp::create(lb, l, rowType, max, newMax,
                                         /*factor=*/Value(), log2e,
                                         /*emulated_eighths=*/IntegerAttr(),
                                         /*offset=*/FloatAttr());
        Value weight = Exp2DiffOp::create(lb, l, rowType, lse, newMax,
                                          /*factor=*/Value(), log2e,
                                          /*emulated_eighths=*/IntegerAttr(),
                                          /*offset=*/FloatAttr());
        Value keptSum = RescaleOp::create(lb, l, rowType, sum, alpha);
        Value newSum = ElementwiseOp::create(lb, l, rowType, ReduceKind::sum,
                                             keptSum, weight);
        Value keptAcc = RescaleOp::create(lb, l, accType, acc, alpha);
        Value weighted = RescaleOp::create(lb, l, accType, out, weight);
        Value newAcc = ElementwiseOp::create(lb, l, accType, ReduceKind::sum,
                                             keptAcc, weighted);
        scf::YieldOp::create(lb, l, ValueRange{newAcc, newMax, newSum});
      });
  Value out = NormalizeOp::create(b, loc, accType, loop.getResult(0),
                                  loop.getResult(2), /*factor=*/Value());
  StoreOp::create(b, loc, out, op.getO(), batch, row, head, packAttr);
  if (Value lse = op.getLse()) {
    Value merged = LogSumExpOp::create(b, loc, rowType, loop.getResult(1),
                                       loop.getResult(2), /*factor=*/Value(),
                                       b.getF32FloatAttr(1.0f),
                                       /*offset=*/FloatAttr());
    StoreRowsOp::create(b, loc, merged, lse, batch, head, row, packAttr);
  }

  // The kernel's attributes: its roles, the split kernel's tile space
  // without the splits, no softmax scale of its own (1: the partial LSEs
  // are already natural-log values).
  Builder ab(ctx);
  func->setAttr(kKernelAttrName, UnitAttr::get(ctx));
  func->setAttr(kTensorsAttrName,
                ab.getStrArrayAttr(kernelTensorRoles(op.problem())));
  func->setAttr(kGridAttrName,
                GridAttr::get(ctx,
                              ab.getArrayAttr(
                                  {GridDimAttr::get(ctx, SizeKind::nq,
                                                    positions),
                                   GridDimAttr::get(ctx, SizeKind::num_heads,
                                                    pack),
                                   GridDimAttr::get(ctx, SizeKind::batch, 1)}),
                              /*ctasPerSm=*/0));
  func->setAttr(kProblemAttrName, ProblemAttr::get(ctx, op.problem()));
  op.erase();
}
