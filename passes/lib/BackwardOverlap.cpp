//===- BackwardOverlap.cpp - attn-backward-overlap ------------------------===//
//
// The backward's intra-warpgroup overlap. A backward step issues two
// products (S, dP) and one or two accumulating GEMMs (dQ; or dK and dV),
// and reads each product back right away. Issued synchronously, the tensor
// cores idle while the warpgroup recomputes P and forms dS. This pass
// reorders one step so that
//
//   S, dP issued together     -> P is recomputed while dP runs
//   dV issued once P is known -> dS is formed while dV runs
//                                (hoist-accumulators; costs registers)
//   dQ product before dV      -> the dQ drain's stage writes run under dV
//                                (the one-kernel backward's attn.dq_mma)
//
// Three steps on each loop body: hoist the products (and, with
// hoist-accumulators, every GEMM) to where their operands are ready; make
// every GEMM async and wait for it just before its first reader; sink the
// buffer releases to the end of the step. No rotation across iterations:
// the accumulators are waited for inside the step.
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define DEBUG_TYPE "attn-backward-overlap"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNBACKWARDOVERLAP
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// A product: a GEMM without an accumulator, read back within the step.
/// GEMMs never move above one, so the products keep their order.
bool isProduct(Operation *op) {
  auto mma = dyn_cast<MmaOp>(op);
  return mma && !mma.getAcc();
}

/// Whether `op` may write memory (an op that declares nothing may).
bool writesMemory(Operation *op) {
  if (isMemoryEffectFree(op))
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return true;
  return effects.hasEffect<MemoryEffects::Write>() ||
         effects.hasEffect<MemoryEffects::Free>() ||
         effects.hasEffect<MemoryEffects::Allocate>();
}

/// The pipe a pipe op names, if it is one.
Value pipeOf(Operation *op) {
  if (auto wait = dyn_cast<PipeWaitOp>(op))
    return wait.getPipe();
  if (auto release = dyn_cast<PipeReleaseOp>(op))
    return release.getPipe();
  if (auto acquire = dyn_cast<PipeAcquireOp>(op))
    return acquire.getPipe();
  return {};
}

/// Moves `mma` up its block to just after the last op it cannot pass,
/// carrying the in-block buffer waits and single-use conversions that
/// produce its operands.
void hoist(MmaOp mma) {
  Block *body = mma->getBlock();
  SmallVector<Operation *> carried; // in reverse order
  DenseSet<Value> needed(mma->getOperands().begin(), mma->getOperands().end());
  DenseSet<Value> tiles = {mma.getA(), mma.getB()};
  DenseSet<Value> carriedPipes;
  Operation *stop = nullptr;
  for (Operation *op = mma->getPrevNode(); op; op = op->getPrevNode()) {
    bool defines = llvm::any_of(op->getResults(),
                                [&](Value v) { return needed.contains(v); });
    // Its buffer waits (waiting earlier is always safe) and conversions
    // that only it reads move along.
    if (defines && (isa<PipeWaitOp>(op) ||
                    (isa<ConvertOp>(op) && op->hasOneUse()))) {
      carried.push_back(op);
      needed.insert(op->getOperands().begin(), op->getOperands().end());
      if (Value pipe = pipeOf(op))
        carriedPipes.insert(pipe);
      continue;
    }
    if (defines || isProduct(op)) {
      stop = op;
      break;
    }
    Value pipe = pipeOf(op);
    if (pipe && carriedPipes.contains(pipe)) {
      stop = op;
      break;
    }
    if (isa<MmaOp, PipeWaitOp>(op))
      continue; // an accumulating GEMM, another buffer's wait
    if (auto store = dyn_cast<StoreSmemOp>(op)) {
      if (!tiles.contains(store.getBuffer()))
        continue;
      stop = op;
      break;
    }
    if (writesMemory(op)) {
      stop = op;
      break;
    }
  }
  auto place = [&](Operation *op) {
    if (stop)
      op->moveAfter(stop);
    else
      op->moveBefore(body, body->begin());
    stop = op;
  };
  for (Operation *op : llvm::reverse(carried))
    place(op);
  place(mma);
}

/// The GEMMs that read the buffer `release` gives back.
SmallVector<MmaOp> readersOf(PipeReleaseOp release) {
  SmallVector<MmaOp> readers;
  for (PipeWaitOp wait : release->getBlock()->getOps<PipeWaitOp>()) {
    if (wait.getPipe() != release.getPipe() ||
        wait.getFill() != release.getFill())
      continue;
    for (Operation *user : wait->getUsers())
      if (auto mma = dyn_cast<MmaOp>(user))
        readers.push_back(mma);
  }
  return readers;
}

/// A GEMM that may run asynchronously: attn.mma, or the one-kernel
/// backward's dQ product.
bool isAsyncGemm(Operation *op) { return isa<MmaOp, DqMmaOp>(op); }

void setAsync(Operation *op) {
  if (auto mma = dyn_cast<MmaOp>(op))
    mma.setAsync(true);
  else
    cast<DqMmaOp>(op).setAsync(true);
}

/// Makes the loop's GEMMs asynchronous, waiting for each just before the
/// first op that reads its result or gives back a buffer it reads.
void waitLazily(Block *body) {
  SmallVector<Operation *> inFlight; // in issue order
  SmallVector<Operation *> ops;
  for (Operation &op : *body)
    ops.push_back(&op);
  for (Operation *op : ops) {
    // Its operands, and those of the ops in its regions (a mask under a
    // branch reads S there).
    SmallVector<Operation *> needs;
    op->walk([&](Operation *reader) {
      for (Value operand : reader->getOperands()) {
        Operation *gemm = operand.getDefiningOp();
        if (gemm && isAsyncGemm(gemm) && gemm->getBlock() == body &&
            !llvm::is_contained(needs, gemm))
          needs.push_back(gemm);
      }
    });
    if (auto release = dyn_cast<PipeReleaseOp>(op))
      for (MmaOp mma : readersOf(release))
        needs.push_back(mma);
    int64_t last = -1;
    for (Operation *mma : needs) {
      auto *it = llvm::find(inFlight, mma);
      if (it != inFlight.end())
        last = std::max<int64_t>(last, it - inFlight.begin());
    }
    if (last >= 0) {
      // Waiting for inFlight[last] retires it and everything before it.
      int64_t pending = static_cast<int64_t>(inFlight.size()) - 1 - last;
      OpBuilder b(op);
      for (int64_t i = 0; i <= last; ++i) {
        Value result = inFlight[i]->getResult(0);
        auto wait = MmaWaitOp::create(b, inFlight[i]->getLoc(),
                                      result.getType(), result, pending);
        result.replaceAllUsesExcept(wait.getResult(), wait);
      }
      inFlight.erase(inFlight.begin(), inFlight.begin() + last + 1);
    }
    if (isAsyncGemm(op)) {
      setAsync(op);
      inFlight.push_back(op);
    }
  }
}

/// Moves the step's buffer releases just before its terminator, ordered by
/// when the last GEMM reading each buffer is issued.
void sinkReleases(Block *body) {
  DenseMap<Operation *, unsigned> issueIndex;
  unsigned index = 0;
  for (MmaOp mma : body->getOps<MmaOp>())
    issueIndex[mma] = index++;
  SmallVector<std::pair<unsigned, PipeReleaseOp>> releases;
  for (PipeReleaseOp release :
       SmallVector<PipeReleaseOp>(body->getOps<PipeReleaseOp>())) {
    unsigned lastReader = 0;
    for (MmaOp mma : readersOf(release))
      lastReader = std::max(lastReader, issueIndex[mma]);
    releases.push_back({lastReader, release});
  }
  llvm::stable_sort(releases, [](const auto &a, const auto &b) {
    return a.first < b.first;
  });
  for (auto &[lastReader, release] : releases)
    release->moveBefore(body->getTerminator());
}

/// Why the loop cannot be reordered, or "" when it can.
std::string checkLoop(scf::ForOp loop) {
  Block *body = loop.getBody();
  unsigned products = 0, accumulating = 0;
  for (MmaOp mma : body->getOps<MmaOp>()) {
    if (mma.getAsync())
      return "the loop is already pipelined";
    (mma.getAcc() ? accumulating : products) += 1;
  }
  if (products != 2 || accumulating == 0)
    return "expected the two products (S, dP) and the accumulating GEMMs of "
           "a backward step, found " +
           std::to_string(products) + " products and " +
           std::to_string(accumulating) + " accumulating GEMMs";
  return "";
}

struct AttnBackwardOverlapPass
    : public mlir::attn::impl::AttnBackwardOverlapBase<
          AttnBackwardOverlapPass> {
  using AttnBackwardOverlapBase::AttnBackwardOverlapBase;

  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    SmallVector<scf::ForOp> loops;
    module.walk([&](scf::ForOp loop) {
      auto func = loop->getParentOfType<func::FuncOp>();
      if (func && isBackwardKernel(func) &&
          !loop.getBody()->getOps<MmaOp>().empty() &&
          scheduleApplies(func, &AttentionSchedule::intraWgOverlap))
        loops.push_back(loop);
    });
    if (loops.empty())
      return;
    if (getTarget(module) != TargetKind::sm_90a) {
      module.emitError("attn-backward-overlap needs #attn.target<sm_90a>: "
                       "sm_80's mma.sync cannot run asynchronously");
      return signalPassFailure();
    }
    for (scf::ForOp loop : loops) {
      std::string why = checkLoop(loop);
      if (!why.empty()) {
        loop.emitOpError() << "attn-backward-overlap cannot reorder this "
                              "backward step: "
                           << why;
        return signalPassFailure();
      }
      // Releases first out of the way (a GEMM does not pass one), then the
      // GEMMs up, then the releases in the GEMMs' new order.
      Block *body = loop.getBody();
      SmallVector<PipeReleaseOp> releases(body->getOps<PipeReleaseOp>());
      for (PipeReleaseOp release : releases)
        release->moveBefore(body->getTerminator());
      SmallVector<MmaOp> mmas(body->getOps<MmaOp>());
      for (MmaOp mma : mmas)
        if (!mma.getAcc() || hoistAccumulators)
          hoist(mma);
      sinkReleases(body);
      waitLazily(body);
    }
  }
};

} // namespace
