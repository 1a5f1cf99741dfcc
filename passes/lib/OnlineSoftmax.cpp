//===- OnlineSoftmax.cpp - attn-online-softmax ----------------------------===//
//
// attn.online_softmax / attn.softmax_finalize  ->  running max and sum,
// exp2 with the scale folded in, rescale of the accumulator, one division
// by the row sum after the loop and LSE = scale * m + log(l).
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "attn-online-softmax"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNONLINESOFTMAX
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// exp2-emulate counts eighths (attn.exp2_diff's emulated_eighths).
constexpr int64_t kExp2EmulatePeriod = 8;

/// exp(scale * x) == exp2(scale * log2(e) * x): one ex2.approx per element.
FloatAttr foldLog2e(OpBuilder &b, FloatAttr scale) {
  return b.getF32FloatAttr(scale.getValueAsDouble() * llvm::numbers::log2e);
}

/// online_softmax(s, m, l) ->
///   m1 = max(m, rowmax(s)); p = exp2((s - m1) * c); alpha = exp2((m - m1) * c)
///   l1 = alpha * l + rowsum(p)
/// and with fixed_max: m1 = m, p = exp2((s - m) * c), alpha = 1,
///   l1 = l + rowsum(bf16(p)).
/// With `emulatedEighths` > 0, p's exp2_diff says which eighths of its
/// fragment blocks take the software exp2.
struct ExpandOnlineSoftmax : public OpRewritePattern<OnlineSoftmaxOp> {
  ExpandOnlineSoftmax(MLIRContext *ctx, std::optional<int64_t> emulatedEighths)
      : OpRewritePattern(ctx), asked(emulatedEighths) {}
  /// The pass's exp2-emulate when given; else each kernel's schedule says.
  std::optional<int64_t> asked;
  LogicalResult matchAndRewrite(OnlineSoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t emulatedEighths = asked.value_or(0);
    if (!asked)
      if (auto func = op->getParentOfType<func::FuncOp>())
        if (std::optional<AttentionSchedule> schedule = getSchedule(func))
          emulatedEighths = schedule->exp2EmulatedEighths;
    FloatAttr c = foldLog2e(rewriter, op.getScaleAttr());
    Type rowType = op.getMax().getType();
    // FP8: the descales' run-time factor of the scale, and P scaled by 2^k
    // (the exponent's offset; alpha, a ratio, has none).
    Value factor = op.getFactor();
    FloatAttr offset;
    if (std::optional<int64_t> k = op.getProbsLog2Scale())
      offset = rewriter.getF32FloatAttr(static_cast<float>(*k));
    // A fixed max (attn-bounded-softmax) is the offset itself: no row max,
    // alpha = 1, and the sum is not rescaled.
    bool fixed = op.getFixedMax();
    Value newMax =
        fixed ? op.getMax()
              : RowReduceOp::create(rewriter, loc, rowType, ReduceKind::max,
                                    op.getScores(), op.getMax())
                    .getResult();
    // Scores s * k (k > 0, per row): the max over the raw scores of m / k,
    // times k, is the new max; the raw max is P's offset for the raw s, and
    // k joins the scale's factor: exp2((s - m1 / k) * c * f * k).
    Value probsMax = newMax, probsFactor = factor;
    if (Value k = op.getBlockFactor()) {
      auto rescale = [&](Value row, Value by) -> Value {
        return RescaleOp::create(rewriter, loc, rowType, row, by);
      };
      probsMax = RowReduceOp::create(rewriter, loc, rowType, ReduceKind::max,
                                     op.getScores(),
                                     rescale(op.getMax(),
                                             op.getInverseBlockFactor()));
      newMax = rescale(probsMax, k);
      probsFactor = factor ? rescale(factor, k) : k;
    }
    Value probs = Exp2DiffOp::create(
        rewriter, loc, op.getScores().getType(), op.getScores(), probsMax,
        probsFactor, c,
        emulatedEighths > 0 ? rewriter.getI64IntegerAttr(emulatedEighths)
                            : IntegerAttr(),
        offset);
    Value alpha, scaledSum;
    if (fixed) {
      alpha = SplatOp::create(rewriter, loc, rowType,
                              rewriter.getF32FloatAttr(1.0f));
      scaledSum = op.getSum();
    } else {
      alpha = Exp2DiffOp::create(rewriter, loc, rowType, op.getMax(), newMax,
                                 factor, c, IntegerAttr(), FloatAttr());
      scaledSum = RescaleOp::create(rewriter, loc, op.getSum().getType(),
                                    op.getSum(), alpha);
    }
    // With a fixed max the largest P is not exactly 1: the sum adds the P
    // that P V multiplies (rounded to 16 bits), or a single-key row would
    // be off by the rounding.
    Value newSum = RowReduceOp::create(
        rewriter, loc, op.getSum().getType(), ReduceKind::sum, probs, scaledSum,
        /*rounded=*/fixed);
    rewriter.replaceOp(op, {probs, newMax, newSum, alpha});
    return success();
  }
};

/// softmax_finalize(acc, m, l[, lx]) -> (acc / l, scale * m + log(lx or l)),
/// with FP8's factors and P scale passed on.
struct ExpandSoftmaxFinalize : public OpRewritePattern<SoftmaxFinalizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxFinalizeOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value out = NormalizeOp::create(rewriter, loc, op.getAcc().getType(),
                                    op.getAcc(), op.getSum(),
                                    op.getOutFactor());
    // A fixed-max softmax's LSE reads the sum of the f32 P (lse_sum).
    Value lseSum = op.getLseSum() ? op.getLseSum() : op.getSum();
    FloatAttr offset;
    if (std::optional<int64_t> k = op.getProbsLog2Scale())
      offset = rewriter.getF32FloatAttr(static_cast<float>(*k));
    Value lse = LogSumExpOp::create(rewriter, loc, op.getMax().getType(),
                                    op.getMax(), lseSum, op.getFactor(),
                                    op.getScaleAttr(), offset);
    rewriter.replaceOp(op, {out, lse});
    return success();
  }
};

struct AttnOnlineSoftmaxPass
    : public mlir::attn::impl::AttnOnlineSoftmaxBase<AttnOnlineSoftmaxPass> {
  using AttnOnlineSoftmaxBase::AttnOnlineSoftmaxBase;
  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    int64_t eighths = exp2Emulate;
    if (eighths < 0 || eighths > kExp2EmulatePeriod) {
      getOperation().emitError() << "attn-online-softmax: exp2-emulate="
                                 << eighths
                                 << " is out of range; use 0 (all on MUFU) "
                                    "to 8 (eighths of the score blocks)";
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandOnlineSoftmax>(
        &getContext(),
        exp2Emulate.hasValue() ? std::optional<int64_t>(eighths) : std::nullopt);
    patterns.add<ExpandSoftmaxFinalize>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
