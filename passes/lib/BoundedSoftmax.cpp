//===- BoundedSoftmax.cpp - attn-bounded-softmax --------------------------===//
//
// The online softmax keeps a running row max only so that exp(s - m) cannot
// overflow. Soft-capped scores are bounded by the cap, so a constant offset
// does that job: the loop no longer reduces each score row to its max (an
// FMNMX per score and two shuffles per row), no longer waits for that max
// before the first exponential, and never rescales the accumulator (an FMUL
// per output element per block). Applies where P is bf16 (f32's exponent
// range); f16's is too narrow for the caps in use.
//
//   %p, %m1, %l1, %a = attn.online_softmax %t, %m, %l {scale = c}
//   (%m: the loop's iter arg, initially -inf)
// becomes
//   %p, %m1, %l1, %a = attn.online_softmax %t, %m, %l {fixed_max, scale = c}
//   %lx1 = attn.row_reduce sum %p, %lx
// with %m's init a splat of the offset and %m yielded unchanged. The largest
// P is then no longer exactly 1: the expanded softmax sums P rounded as the
// P V GEMM takes it (%l, which normalises O), and the loop carries the sum
// of the f32 P beside it (%lx, a new iter arg), from which
// attn.softmax_finalize forms the LSE: O is exact for a row with one key, and
// so is the P the backward recomputes from the LSE.
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/BoundedSoftmax.h"
#include "attn/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <limits>

#define DEBUG_TYPE "attn-bounded-softmax"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNBOUNDEDSOFTMAX
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Whether every element of `v` is tanh-bounded (|x| <= 1) or -inf: an
/// attn.softcap, seen through masks and through scf.if branches.
bool isBoundedByOne(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (isa<SoftcapOp>(def))
    return true;
  if (auto mask = dyn_cast<MaskOp>(def))
    return isBoundedByOne(mask.getInput());
  if (auto branch = dyn_cast<scf::IfOp>(def)) {
    unsigned index = cast<OpResult>(v).getResultNumber();
    if (branch.getElseRegion().empty())
      return false;
    return isBoundedByOne(branch.thenYield().getOperand(index)) &&
           isBoundedByOne(branch.elseYield().getOperand(index));
  }
  return false;
}

/// Whether P only feeds bf16 operand tiles (f32's exponent range).
bool probsAreBf16(OnlineSoftmaxOp op) {
  Value probs = op.getProbs();
  if (probs.use_empty())
    return false;
  return llvm::all_of(probs.getUsers(), [](Operation *user) {
    auto convert = dyn_cast<ConvertOp>(user);
    if (!convert)
      return false;
    auto type = cast<RegTileType>(convert.getResult().getType());
    return type.getElementType().isBF16();
  });
}

bool isSplatOf(Value v, double value) {
  auto splat = v.getDefiningOp<SplatOp>();
  return splat && splat.getValue().isExactlyValue(value);
}

/// Whether `max` is the offset: its splat, or the result of earlier loops
/// already made fixed at it (a kernel whose masked blocks are peeled at both
/// ends chains three loops: the third's max comes through the second).
bool isFixedAt(Value max, double offset) {
  auto earlier = max.getDefiningOp<scf::ForOp>();
  if (!earlier)
    return isSplatOf(max, offset);
  unsigned index = cast<OpResult>(max).getResultNumber();
  auto yield = cast<scf::YieldOp>(earlier.getBody()->getTerminator());
  return yield.getOperand(index) == earlier.getRegionIterArgs()[index] &&
         isFixedAt(earlier.getInitArgs()[index], offset);
}

/// Makes `op`'s max fixed at `offset` if its loop carries the max as the
/// online softmax does: init -inf (or the result of earlier loops already
/// made fixed at the same offset), yielded from `op`.
bool fixMax(OnlineSoftmaxOp op, double offset) {
  auto loop = dyn_cast<scf::ForOp>(op->getParentOp());
  auto arg = dyn_cast<BlockArgument>(op.getMax());
  if (!loop || !arg || arg.getOwner() != loop.getBody() ||
      arg == loop.getInductionVar())
    return false;
  unsigned index = arg.getArgNumber() - loop.getNumInductionVars();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  if (yield.getOperand(index) != op.getNewMax() || !op.getNewMax().hasOneUse())
    return false;
  Value init = loop.getInitArgs()[index];
  if (init.getDefiningOp<scf::ForOp>()) {
    // A peeled loop before this one: it must already carry the offset.
    if (!isFixedAt(init, offset))
      return false;
  } else if (!isSplatOf(init, -std::numeric_limits<double>::infinity())) {
    return false;
  } else {
    auto splat = init.getDefiningOp<SplatOp>();
    OpBuilder b(splat->getContext());
    b.setInsertionPointAfter(splat);
    Value fixed = SplatOp::create(b, splat.getLoc(), splat.getType(),
                                  b.getF32FloatAttr(offset));
    loop.getInitArgsMutable()[index].set(fixed);
  }
  yield->setOperand(index, arg);
  op.setFixedMax(true);
  return true;
}

/// Where a loop made fixed carries its sums: the rounded one (which
/// normalises O) and the f32 one (for the LSE).
struct SumSlots {
  unsigned rounded, exact;
};

/// Carries the sum of `op`'s f32 P across its loop in a new iter arg: from
/// 0, or from the earlier peeled loop's. Returns the new loop, or null when
/// the loop does not carry the sum as expected (the LSE then reads the
/// rounded sum).
scf::ForOp carryExactSum(OnlineSoftmaxOp op,
                         llvm::DenseMap<Operation *, SumSlots> &slots) {
  auto loop = cast<scf::ForOp>(op->getParentOp());
  auto arg = dyn_cast<BlockArgument>(op.getSum());
  if (!arg || arg.getOwner() != loop.getBody() ||
      arg == loop.getInductionVar())
    return nullptr;
  unsigned index = arg.getArgNumber() - loop.getNumInductionVars();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  if (yield.getOperand(index) != op.getNewSum())
    return nullptr;
  Value init = loop.getInitArgs()[index];
  Value exactInit;
  if (auto earlier = init.getDefiningOp<scf::ForOp>()) {
    auto it = slots.find(earlier);
    if (it == slots.end() ||
        cast<OpResult>(init).getResultNumber() != it->second.rounded)
      return nullptr;
    exactInit = earlier->getResult(it->second.exact);
  } else if (isSplatOf(init, 0.0)) {
    exactInit = init;
  } else {
    return nullptr;
  }
  IRRewriter rewriter(op->getContext());
  rewriter.setInsertionPoint(loop);
  FailureOr<LoopLikeOpInterface> replaced = loop.replaceWithAdditionalYields(
      rewriter, exactInit, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &b, Location loc, ArrayRef<BlockArgument> args) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointAfter(op);
        Value exact = RowReduceOp::create(b, loc, op.getSum().getType(),
                                          ReduceKind::sum, op.getProbs(),
                                          args.front(), /*rounded=*/false);
        return SmallVector<Value>{exact};
      });
  if (failed(replaced))
    return nullptr;
  auto newLoop = cast<scf::ForOp>(replaced->getOperation());
  slots[newLoop] = {index, newLoop.getNumResults() - 1};
  return newLoop;
}

struct AttnBoundedSoftmaxPass
    : public mlir::attn::impl::AttnBoundedSoftmaxBase<AttnBoundedSoftmaxPass> {
  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    // Program order, so a peeled loop is fixed before the one it feeds.
    SmallVector<OnlineSoftmaxOp> candidates;
    getOperation().walk<WalkOrder::PreOrder>(
        [&](OnlineSoftmaxOp op) { candidates.push_back(op); });
    llvm::DenseMap<Operation *, SumSlots> slots;
    for (OnlineSoftmaxOp op : candidates) {
      if (op.getFixedMax() || !isBoundedByOne(op.getScores()) ||
          !probsAreBf16(op))
        continue;
      // The kernel's schedule may keep the running max (the ablation).
      auto func = op->getParentOfType<func::FuncOp>();
      if (func && !scheduleApplies(func, &AttentionSchedule::boundedSoftmax))
        continue;
      std::optional<double> offset =
          boundedSoftmaxOffset(op.getScale().convertToDouble());
      if (offset && fixMax(op, *offset))
        carryExactSum(op, slots);
    }
    // The LSE of each finalize fed by such a loop reads the f32 sum.
    getOperation().walk([&](SoftmaxFinalizeOp finalize) {
      auto result = dyn_cast<OpResult>(finalize.getSum());
      if (!result)
        return;
      auto it = slots.find(result.getOwner());
      if (it != slots.end() && result.getResultNumber() == it->second.rounded)
        finalize.getLseSumMutable().assign(
            result.getOwner()->getResult(it->second.exact));
    });
  }
};

} // namespace
