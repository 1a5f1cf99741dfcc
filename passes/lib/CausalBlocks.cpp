//===- CausalBlocks.cpp - attn-causal-blocks: skip and peel masked blocks -===//
//
// One masked loop over all key/value blocks
//   ->  loop bound lowered past the last visible block (causal skipping)
//       + an unmasked loop over the fully visible blocks
//       + a masked loop over the diagonal / ragged-tail blocks only.
// Masking costs a compare and select per score; skipping saves whole GEMMs.
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#define DEBUG_TYPE "attn-causal-blocks"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNCAUSALBLOCKS
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The single attn.mask directly in `loop`'s body, if any.
MaskOp findMask(scf::ForOp loop) {
  MaskOp found;
  for (Operation &op : loop.getBody()->without_terminator())
    if (auto mask = dyn_cast<MaskOp>(op)) {
      if (found)
        return {};
      found = mask;
    }
  return found;
}

/// Splits `loop` (which masks every block) into skip / unmasked / masked,
/// or with `peel` false keeps one loop whose mask runs only on the blocks
/// from the first masked one on.
LogicalResult peelMaskedBlocks(scf::ForOp loop, MaskOp mask,
                               TilingAttr tiling, bool peel) {
  if (!loop.getLowerBound().getDefiningOp<arith::ConstantIndexOp>() ||
      loop.getConstantStep() != 1)
    return mask.emitOpError("attn-causal-blocks expects the key/value loop "
                            "to start at a constant with step 1");
  SmallVector<Value, 3> bounds = {mask.getRow(), mask.getKvLen()};
  if (Value qLen = mask.getQLen())
    bounds.push_back(qLen);
  for (Value v : bounds)
    if (loop->isAncestor(v.getParentBlock()->getParentOp()))
      return mask.emitOpError("mask bounds must be defined outside the "
                              "key/value loop");
  // The mask's column must be the block index times block_n.
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  Value ub = loop.getUpperBound();
  Value blockM = arith::ConstantIndexOp::create(b, loc, tiling.getBlockM());
  Value blockN = arith::ConstantIndexOp::create(b, loc, tiling.getBlockN());
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value row = mask.getRow(), kvLen = mask.getKvLen();

  // Blocks wholly inside the keys: j < kv_len / block_n.
  Value full = arith::DivUIOp::create(b, loc, kvLen, blockN);
  Value hi = ub;
  if (mask.getCausal()) {
    // The query block's first row sees columns <= diag: diag = row
    // (top-left), or row + kv_len - q_len (bottom-right; signed, negative
    // when Nq > Nk and the first rows see no key).
    Value diag = row;
    if (mask.isBottomRightCausal())
      diag = arith::AddIOp::create(
          b, loc, row,
          arith::SubIOp::create(b, loc, kvLen, mask.getQLen()));
    // Bottom-right bounds are clamped at 0 where rows see nothing.
    auto clampAtZero = [&](Value v) -> Value {
      if (!mask.isBottomRightCausal())
        return v;
      return arith::MaxSIOp::create(
          b, loc, v, arith::ConstantIndexOp::create(b, loc, 0));
    };
    // The last query row of the block sees columns <= diag + block_m - 1, so
    // blocks from (diag + block_m - 1) / block_n + 1 on are all -inf: skip.
    // Clamped, this keeps one (fully masked) block even when no row of the
    // query block sees a key: the prologue's first K copy is then always
    // consumed, and those rows end with l = 0, i.e. O = 0 and LSE = -inf.
    Value lastCol = clampAtZero(arith::SubIOp::create(
        b, loc, arith::AddIOp::create(b, loc, diag, blockM), c1));
    Value visible = arith::AddIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, lastCol, blockN), c1);
    hi = arith::MinUIOp::create(b, loc, ub, visible);
    // Block j is below the diagonal for every row iff (j + 1) * block_n - 1
    // <= diag, i.e. j < (diag + 1) / block_n.
    Value diagEnd = clampAtZero(arith::AddIOp::create(b, loc, diag, c1));
    Value belowDiagonal = arith::DivUIOp::create(b, loc, diagEnd, blockN);
    full = arith::MinUIOp::create(b, loc, full, belowDiagonal);
  }
  full = arith::MinUIOp::create(b, loc, full, hi);

  // Every use of the block count inside the loop (its bound, the prefetch
  // guard) now means "one past the last visible block".
  ub.replaceUsesWithIf(hi, [&](OpOperand &use) {
    return loop->isAncestor(use.getOwner());
  });

  if (!peel) {
    OpBuilder ib(mask);
    Value masked = arith::CmpIOp::create(ib, mask.getLoc(),
                                         arith::CmpIPredicate::uge,
                                         loop.getInductionVar(), full);
    auto branch = scf::IfOp::create(ib, mask.getLoc(), mask.getType(), masked,
                                    /*withElseRegion=*/true);
    OpBuilder thenB = OpBuilder::atBlockEnd(branch.thenBlock());
    mask->moveBefore(thenB.getInsertionBlock(), thenB.getInsertionPoint());
    scf::YieldOp::create(thenB, mask.getLoc(), mask.getResult());
    OpBuilder elseB = OpBuilder::atBlockEnd(branch.elseBlock());
    scf::YieldOp::create(elseB, mask.getLoc(), mask.getInput());
    mask.getResult().replaceAllUsesExcept(branch.getResult(0),
                                          branch.thenBlock()->getTerminator());
    return success();
  }

  IRMapping mapping;
  auto unmasked = cast<scf::ForOp>(b.clone(*loop, mapping));
  unmasked.setUpperBound(full);
  auto clonedMask = cast<MaskOp>(mapping.lookup(mask.getOperation()));
  clonedMask.replaceAllUsesWith(clonedMask.getInput());
  clonedMask.erase();

  loop.setLowerBound(full);
  loop.getInitArgsMutable().assign(unmasked.getResults());
  return success();
}

struct AttnCausalBlocksPass
    : public mlir::attn::impl::AttnCausalBlocksBase<AttnCausalBlocksPass> {
  using AttnCausalBlocksBase::AttnCausalBlocksBase;
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      auto tiling = func->getAttrOfType<TilingAttr>(kTilingAttrName);
      if (!tiling)
        return;
      SmallVector<std::pair<scf::ForOp, MaskOp>> loops;
      func.walk([&](scf::ForOp loop) {
        if (MaskOp mask = findMask(loop))
          loops.emplace_back(loop, mask);
      });
      for (auto [loop, mask] : loops)
        if (failed(peelMaskedBlocks(loop, mask, tiling, peel)))
          return signalPassFailure();
    });
  }
};

} // namespace
