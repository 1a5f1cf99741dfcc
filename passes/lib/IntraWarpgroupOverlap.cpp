//===- IntraWarpgroupOverlap.cpp - attn-intra-wg-overlap ------------------===//
//
// Rotates each key/value loop by half an iteration so the softmax of block j
// runs while the tensor cores compute O += P_{j-1} V_{j-1}:
//
//   for j: S_j = QK_j; softmax_j; O = O*a_j + P_j V_j
//     ->
//   if (lo < hi) {
//     S_lo = QK_lo; softmax_lo; O' = O*a_lo                   (prologue)
//     for j in lo+1..hi: issue S_j = QK_j; issue O' + P_{j-1} V_{j-1};
//                        wait S_j (1 pending); softmax_j;
//                        wait PV (0 pending); convert P_j; O' = O*a_j
//     O = O' + P_{hi-1} V_{hi-1}                              (epilogue)
//   }
//
// The loop body is split into A (everything but the P V product) and
// B = {pipe_wait V, mma P V, pipe_release V}; A's ops that rescale the
// accumulator (A_acc) wait for the previous B, and so does FP8's
// conversion of P into the next B's register operand: registers written
// while a wgmma that reads registers is in flight make ptxas serialize
// every wgmma of the kernel, and that conversion's shuffles are not sunk
// past the wait by LLVM (the 16-bit conversions are, so they stay in A).
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#define DEBUG_TYPE "attn-intra-wg-overlap"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNINTRAWGOVERLAP
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The parts of a key/value loop body.
struct LoopParts {
  MmaOp scoreMma;                 ///< S = Q K^T
  MmaOp pvMma;                    ///< O = P V + acc
  unsigned accIndex = 0;          ///< iter arg / yield slot of O
  PipeWaitOp vWait;               ///< the value buffer P V reads
  PipeReleaseOp vRelease;         ///< its release
  SetVector<Operation *> b;       ///< vWait, pvMma, vRelease
  SetVector<Operation *> accOps;  ///< A's ops that read the accumulator
  SmallVector<Operation *> aOps;  ///< the rest of A, in order
  /// A's FP8 conversions whose only users are B's (P into the P V
  /// product's register operand): they go after the previous B's wait.
  SetVector<Operation *> operandOps;
  SmallVector<Value> carried;     ///< A values B reads (besides the acc)
};

/// Splits `loop`'s body, or says why it does not have the expected shape.
FailureOr<LoopParts> analyze(scf::ForOp loop, std::string &why) {
  LoopParts parts;
  Block *body = loop.getBody();
  if (loop.getConstantStep() != 1) {
    why = "the loop must step by 1 (the rotation shifts by one block)";
    return failure();
  }
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  SmallVector<MmaOp> mmas(body->getOps<MmaOp>());
  if (mmas.size() != 2) {
    why = "the loop body has " + std::to_string(mmas.size()) +
          " attn.mma ops, not the two GEMMs";
    return failure();
  }
  for (MmaOp mma : mmas) {
    if (mma.getAsync()) {
      why = "the loop is already pipelined";
      return failure();
    }
    if (mma.getAcc())
      parts.pvMma = mma;
    else
      parts.scoreMma = mma;
  }
  if (!parts.pvMma || !parts.scoreMma) {
    why = "expected one MMA without and one with an accumulator";
    return failure();
  }
  bool yielded = false;
  for (OpOperand &use : parts.pvMma->getUses())
    if (use.getOwner() == yield) {
      parts.accIndex = use.getOperandNumber();
      yielded = true;
    }
  if (!yielded || !parts.pvMma->hasOneUse()) {
    why = "the P V product must only feed the loop's accumulator";
    return failure();
  }
  auto vWait = parts.pvMma.getB().getDefiningOp<PipeWaitOp>();
  if (!vWait || vWait->getBlock() != body) {
    why = "the P V product must read a buffer from attn.pipe_wait in the loop";
    return failure();
  }
  if (vWait.getPipe().getType().getStages() < 2) {
    why = "the value pipe has one stage; intra-warpgroup overlap needs two "
          "(attn-multibuffer stages=2)";
    return failure();
  }
  if (!vWait->hasOneUse()) {
    why = "the value buffer must be read by the P V product alone";
    return failure();
  }
  parts.b.insert(vWait);
  parts.b.insert(parts.pvMma);
  for (PipeReleaseOp release : body->getOps<PipeReleaseOp>())
    if (release.getPipe() == vWait.getPipe() &&
        release.getFill() == vWait.getFill()) {
      parts.vRelease = release;
      parts.b.insert(release);
    }
  parts.vWait = vWait;
  if (parts.b.size() != 3) {
    why = "no attn.pipe_release of the value buffer in the loop";
    return failure();
  }
  // A_acc: what depends on the accumulator iter arg.
  Value accArg = loop.getRegionIterArgs()[parts.accIndex];
  DenseSet<Value> fromAcc = {accArg};
  for (Operation &op : body->without_terminator()) {
    if (parts.b.contains(&op))
      continue;
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return fromAcc.contains(v); })) {
      parts.accOps.insert(&op);
      fromAcc.insert(op.getResults().begin(), op.getResults().end());
    }
  }
  if (!parts.accOps.contains(parts.pvMma.getAcc().getDefiningOp()) &&
      parts.pvMma.getAcc() != accArg) {
    why = "the accumulator must reach the P V product through the rescale";
    return failure();
  }
  for (Operation *op : parts.accOps)
    for (Operation *user : op->getUsers())
      if (user != parts.pvMma && !parts.accOps.contains(user)) {
        why = "the rescaled accumulator is read by something besides P V";
        return failure();
      }
  for (Operation &op : body->without_terminator())
    if (!parts.b.contains(&op) && !parts.accOps.contains(&op))
      parts.aOps.push_back(&op);
  for (Operation *op : parts.aOps)
    if (isa<ConvertOp>(op) && !op->use_empty() &&
        isa<Float8E4M3FNType>(
            cast<RegTileType>(op->getResult(0).getType()).getElementType()) &&
        llvm::all_of(op->getUsers(),
                     [&](Operation *user) { return parts.b.contains(user); }))
      parts.operandOps.insert(op);
  // Values B reads from A (P, the fill index if computed) travel to the
  // next iteration.
  SetVector<Value> carried;
  for (Operation *op : parts.b)
    for (Value v : op->getOperands()) {
      auto arg = dyn_cast<BlockArgument>(v);
      if (arg && arg.getOwner() == body && v != loop.getInductionVar() &&
          v != loop.getRegionIterArgs()[parts.accIndex]) {
        why = "the P V product reads a loop-carried value other than the "
              "accumulator";
        return failure();
      }
    }
  for (Operation *op : parts.b)
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        if (def->getBlock() == body && !parts.b.contains(def) &&
            !parts.accOps.contains(def))
          carried.insert(v);
  parts.carried = carried.takeVector();
  return parts;
}

/// Clones B's wait and MMA with `mapping` (IV and A's values already
/// mapped); the MMA is asynchronous when `async`. Returns the cloned P V
/// result. The release is the caller's: it goes after the MMA's wait.
Value cloneB(OpBuilder &b, LoopParts &parts, IRMapping &mapping, bool async) {
  b.clone(*parts.vWait, mapping);
  auto pv = cast<MmaOp>(b.clone(*parts.pvMma, mapping));
  if (async)
    pv.setAsync(true);
  return pv.getResult();
}

LogicalResult rotate(scf::ForOp loop, LoopParts &parts) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  Block *body = loop.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  Value iv = loop.getInductionVar();
  Value lo = loop.getLowerBound(), hi = loop.getUpperBound();
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value nonEmpty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lo, hi);
  auto ifOp = scf::IfOp::create(b, loc, loop.getResultTypes(), nonEmpty,
                                /*withElseRegion=*/true);
  // Empty loop: the initial values.
  {
    OpBuilder eb = OpBuilder::atBlockEnd(ifOp.elseBlock());
    scf::YieldOp::create(eb, loc, loop.getInitArgs());
  }
  OpBuilder tb = OpBuilder::atBlockEnd(ifOp.thenBlock());

  // Prologue: A(lo) with the initial values.
  IRMapping pro;
  pro.map(iv, lo);
  for (auto [arg, init] :
       llvm::zip(loop.getRegionIterArgs(), loop.getInitArgs()))
    pro.map(arg, init);
  for (Operation &op : body->without_terminator())
    if (!parts.b.contains(&op))
      tb.clone(op, pro);

  // Loop over lo+1..hi carrying the original slots (the acc slot holds the
  // rescaled accumulator B will add to) and A's values B reads.
  SmallVector<Value> inits;
  for (auto [i, v] : llvm::enumerate(yield.getOperands()))
    inits.push_back(i == parts.accIndex ? pro.lookup(parts.pvMma.getAcc())
                                        : pro.lookupOrDefault(v));
  for (Value v : parts.carried)
    inits.push_back(pro.lookup(v));
  Value loPlus1 = arith::AddIOp::create(tb, loc, lo, c1);
  unsigned numSlots = yield.getNumOperands();
  auto newLoop = scf::ForOp::create(
      tb, loc, loPlus1, hi, loop.getStep(), inits,
      [&](OpBuilder &lb, Location l, Value j, ValueRange args) {
        IRMapping a;
        a.map(iv, j);
        for (unsigned i = 0; i < numSlots; ++i)
          if (i != parts.accIndex)
            a.map(loop.getRegionIterArgs()[i], args[i]);
        // B(j-1) reads the previous iteration's values.
        IRMapping bm;
        bm.map(iv, arith::SubIOp::create(lb, l, j, c1));
        bm.map(parts.pvMma.getAcc(), args[parts.accIndex]);
        for (auto [k, v] : llvm::enumerate(parts.carried))
          bm.map(v, args[numSlots + k]);
        Value pv;
        for (Operation *op : parts.aOps) {
          if (parts.operandOps.contains(op))
            continue;
          Operation *clone = lb.clone(*op, a);
          if (op != parts.scoreMma.getOperation())
            continue;
          // Issue S_j, then O += P_{j-1} V_{j-1}, then wait for S_j only.
          cast<MmaOp>(clone).setAsync(true);
          pv = cloneB(lb, parts, bm, /*async=*/true);
          Value s = MmaWaitOp::create(lb, l, clone->getResult(0).getType(),
                                      clone->getResult(0),
                                      lb.getI64IntegerAttr(1));
          a.map(op->getResult(0), s);
        }
        Value o = MmaWaitOp::create(lb, l, pv.getType(), pv,
                                    lb.getI64IntegerAttr(0));
        lb.clone(*parts.vRelease, bm);
        for (Operation *op : parts.operandOps)
          lb.clone(*op, a);
        a.map(loop.getRegionIterArgs()[parts.accIndex], o);
        for (Operation *op : parts.accOps)
          lb.clone(*op, a);
        SmallVector<Value> next;
        for (auto [i, v] : llvm::enumerate(yield.getOperands()))
          next.push_back(i == parts.accIndex
                             ? a.lookupOrDefault(parts.pvMma.getAcc())
                             : a.lookupOrDefault(v));
        for (Value v : parts.carried)
          next.push_back(a.lookupOrDefault(v));
        scf::YieldOp::create(lb, l, next);
      });

  // Epilogue: B(hi-1) with what the loop carried out.
  IRMapping epi;
  epi.map(iv, arith::SubIOp::create(tb, loc, hi, c1));
  epi.map(parts.pvMma.getAcc(), newLoop.getResult(parts.accIndex));
  for (auto [k, v] : llvm::enumerate(parts.carried))
    epi.map(v, newLoop.getResult(numSlots + k));
  Value acc = cloneB(tb, parts, epi, /*async=*/false);
  tb.clone(*parts.vRelease, epi);
  SmallVector<Value> results;
  for (unsigned i = 0; i < numSlots; ++i)
    results.push_back(i == parts.accIndex ? acc : newLoop.getResult(i));
  scf::YieldOp::create(tb, loc, results);

  loop.replaceAllUsesWith(ifOp.getResults());
  loop.erase();
  return success();
}

struct AttnIntraWgOverlapPass
    : public mlir::attn::impl::AttnIntraWgOverlapBase<AttnIntraWgOverlapPass> {
  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    SmallVector<scf::ForOp> loops;
    module.walk([&](scf::ForOp loop) {
      auto func = loop->getParentOfType<func::FuncOp>();
      // The backward's steps are attn-backward-overlap's.
      if (func && func->hasAttr(kKernelAttrName) && !isBackwardKernel(func) &&
          !loop.getBody()->getOps<MmaOp>().empty() &&
          scheduleApplies(func, &AttentionSchedule::intraWgOverlap))
        loops.push_back(loop);
    });
    if (loops.empty())
      return;
    if (getTarget(module) != TargetKind::sm_90a) {
      module.emitError("attn-intra-wg-overlap needs #attn.target<sm_90a>: "
                       "sm_80's mma.sync cannot run asynchronously");
      return signalPassFailure();
    }
    for (scf::ForOp loop : loops) {
      std::string why;
      FailureOr<LoopParts> parts = analyze(loop, why);
      if (failed(parts)) {
        loop.emitOpError() << "attn-intra-wg-overlap cannot pipeline this "
                              "key/value loop: "
                           << why;
        return signalPassFailure();
      }
      if (failed(rotate(loop, *parts)))
        return signalPassFailure();
    }
  }
};

} // namespace
