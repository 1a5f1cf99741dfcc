//===- WarpSpecialize.cpp - attn-warp-specialize: producer / consumers ----===//
//
//   create_pipe ...; scalars             create_pipe ...; scalars
//   <tile program with pipe loads,   ->  warp_specialize producer {
//    waits, MMAs, softmax, stores>         <the program, pipe acquires/loads only>
//                                        } consumers {
//                                          <the program without them>
//                                        }
//
// The producer warpgroup only waits for empty stages and issues TMA, so it
// gives its registers to the consumers (setmaxnreg) and runs ahead of them
// by the pipes' depth; the consumers never issue a copy or wait on a CTA
// barrier.
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

#define DEBUG_TYPE "attn-warp-specialize"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNWARPSPECIALIZE
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Warps of the producer role: one warpgroup (setmaxnreg works per
/// warpgroup; one thread of it issues every TMA).
constexpr int64_t kProducerWarps = 4;
/// FlashAttention-3's register split: 24/240 with up to two consumer
/// warpgroups, 32/160 with three.
constexpr int64_t kProducerRegs = 24, kConsumerRegs = 240;
constexpr int64_t kProducerRegs3 = 32, kConsumerRegs3 = 160;
/// With FP8's transposing warps in the producer warpgroup: 40/232 with two
/// consumer warpgroups (the 168 registers each of 384 threads start with,
/// moved: 128 x 40 + 256 x 232 = 384 x 168), 32/160 with three.
constexpr int64_t kTransposerRegs = 40, kConsumerRegsBesideTransposer = 232;
/// The SM's register file, and setmaxnreg's step.
constexpr int64_t kRegisterFile = 64 * 1024, kRegStep = 8;

bool isProducerOp(Operation *op) {
  return isa<PipeAcquireOp, PipeLoadOp>(op);
}

/// Ops only the consumers run: everything that computes on register tiles,
/// reads a pipe's buffer or writes the output.
bool isConsumerOp(Operation *op) {
  if (isa<scf::ForOp, scf::IfOp, scf::YieldOp>(op))
    return false;
  return touchesRegisterTiles(op) ||
         isa<PipeWaitOp, PipeReleaseOp, MmaOp, MmaWaitOp, StoreOp, StoreRowsOp,
             WaitOp, CopyAsyncOp, DqMmaOp, AccumulateDqOp>(op);
}

/// Rebuilds `loop` without the iteration arguments whose type is a register
/// tile (their uses are gone) and returns the new loop.
scf::ForOp dropTileIterArgs(scf::ForOp loop) {
  SmallVector<unsigned> kept;
  for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs()))
    if (!isa<RegTileType>(arg.getType()))
      kept.push_back(i);
  if (kept.size() == loop.getNumRegionIterArgs())
    return loop;
  OpBuilder b(loop);
  SmallVector<Value> inits;
  for (unsigned i : kept)
    inits.push_back(loop.getInitArgs()[i]);
  auto newLoop = scf::ForOp::create(b, loop.getLoc(), loop.getLowerBound(),
                                    loop.getUpperBound(), loop.getStep(),
                                    inits);
  Block *newBody = newLoop.getBody();
  if (!newBody->empty())
    newBody->getTerminator()->erase();
  Block *oldBody = loop.getBody();
  loop.getInductionVar().replaceAllUsesWith(newLoop.getInductionVar());
  for (auto [n, i] : llvm::enumerate(kept)) {
    loop.getRegionIterArgs()[i].replaceAllUsesWith(
        newLoop.getRegionIterArgs()[n]);
    loop.getResult(i).replaceAllUsesWith(newLoop.getResult(n));
  }
  auto yield = cast<scf::YieldOp>(oldBody->getTerminator());
  SmallVector<Value> yielded;
  for (unsigned i : kept)
    yielded.push_back(yield.getOperand(i));
  newBody->getOperations().splice(newBody->end(), oldBody->getOperations(),
                                  oldBody->begin(), std::prev(oldBody->end()));
  b.setInsertionPointToEnd(newBody);
  scf::YieldOp::create(b, yield.getLoc(), yielded);
  // A dropped result may still feed a later loop's dropped init.
  for (Value result : loop.getResults())
    result.dropAllUses();
  loop.erase();
  return newLoop;
}

/// Ops only the producer warpgroup's transposing warps run (FP8's V,
/// attn-transpose-v).
bool isTransposerOp(Operation *op) { return isa<PipeTransposeOp>(op); }

/// Keeps only the producer's part of a copy of the tile program, or with
/// `transposer` only the transposing warps' part.
void keepProducerPart(Block &block, bool transposer = false) {
  SmallVector<Operation *> doomed;
  block.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isConsumerOp(op) || (transposer ? isProducerOp(op) : isTransposerOp(op)))
      doomed.push_back(op);
  });
  // Loops still name the doomed tiles as inits and yields; those slots are
  // cut off the loops below, so the uses can go first.
  for (Operation *op : doomed)
    op->dropAllUses();
  for (Operation *op : llvm::reverse(doomed))
    op->erase();
  SmallVector<scf::ForOp> loops;
  block.walk([&](scf::ForOp loop) { loops.push_back(loop); });
  for (scf::ForOp loop : loops)
    dropTileIterArgs(loop);
}

/// Keeps only the consumers' part of a copy of the tile program.
void keepConsumerPart(Block &block) {
  SmallVector<Operation *> doomed;
  block.walk([&](Operation *op) {
    if (isProducerOp(op) || isTransposerOp(op))
      doomed.push_back(op);
  });
  for (Operation *op : doomed)
    op->erase();
}

/// Erases ops whose results are unused and that have no effects (scalars
/// one role no longer needs, emptied loops and ifs), innermost first.
void eraseDeadOps(Block &block) {
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<Operation *> dead;
    block.walk([&](Operation *op) {
      if (op->getBlock() && !op->hasTrait<OpTrait::IsTerminator>() &&
          isOpTriviallyDead(op))
        dead.push_back(op);
    });
    for (Operation *op : dead) {
      op->erase();
      changed = true;
    }
  }
}

/// Whether `op` may stay in front of the warp roles, shared by both: the
/// allocations and effect-free scalar ops whose operands are shared too.
bool staysShared(Operation *op, const DenseSet<Value> &shared) {
  if (isa<CreatePipeOp, AllocSmemOp>(op))
    return true;
  if (op->getNumRegions() != 0 || !isMemoryEffectFree(op) ||
      touchesRegisterTiles(op))
    return false;
  return llvm::all_of(op->getOperands(),
                      [&](Value v) { return shared.contains(v); });
}

LogicalResult specialize(func::FuncOp func, int64_t producerRegs,
                         int64_t consumerRegs) {
  auto tiling = func->getAttrOfType<TilingAttr>(kTilingAttrName);
  if (!tiling)
    return func.emitOpError("kernel has no 'attn.tiling' attribute; run "
                            "attn-tile first");
  if (tiling.getNumWarps() % 4 != 0 || tiling.getNumWarps() > 12)
    return func.emitOpError() << "attn-warp-specialize needs 1 to 3 whole "
                                 "consumer warpgroups, but num_warps = "
                              << tiling.getNumWarps();
  WalkResult leftover = func.walk([&](Operation *op) {
    if (isa<CopyAsyncOp, WaitOp>(op)) {
      op->emitOpError("must become a pipe before warp specialization (run "
                      "attn-multibuffer first): the warp roles share data "
                      "only through pipes");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (leftover.wasInterrupted())
    return failure();

  int64_t warpgroups = tiling.getNumWarps() / 4;
  // FP8's in-kernel V transpose runs on the producer warpgroup's other
  // warps, whose addresses and four data registers need more than the
  // TMA thread's budget.
  bool transposes = false;
  func.walk([&](PipeTransposeOp) { transposes = true; });
  if (producerRegs == 0)
    producerRegs = warpgroups == 3 ? kProducerRegs3
                   : transposes    ? kTransposerRegs
                                   : kProducerRegs;
  // The transposer's 40 registers cost the consumers theirs only when two
  // consumer warpgroups share the register file with it (one, as in FP8
  // decoding, keeps the 240 at one CTA per SM).
  // An asked-for budget is kept as asked (the warp_specialize verifier
  // refuses one the CTA cannot start with).
  const bool chosen = consumerRegs == 0;
  if (chosen)
    consumerRegs = warpgroups == 3                    ? kConsumerRegs3
                   : transposes && warpgroups == 2    ? kConsumerRegsBesideTransposer
                                                      : kConsumerRegs;
  // Several CTAs per SM share the register file: the consumers get what
  // the CTA's share leaves beside the producer (216 of 128 x 2 for FP8
  // decoding's 256 threads at two CTAs per SM).
  if (int64_t ctas = tiling.getMinCtasPerSm(); chosen && ctas > 1) {
    int64_t threads = kProducerWarps * 32 + 128 * warpgroups;
    int64_t share = kRegisterFile / ctas / threads / kRegStep * kRegStep;
    int64_t left = (share * threads - kProducerWarps * 32 * producerRegs) /
                   (128 * warpgroups) / kRegStep * kRegStep;
    consumerRegs = std::min(consumerRegs, left);
  }

  Block &body = func.getBody().front();
  DenseSet<Value> shared(body.getArguments().begin(),
                         body.getArguments().end());
  SmallVector<Operation *> moved;
  for (Operation &op : body.without_terminator()) {
    if (staysShared(&op, shared)) {
      shared.insert(op.getResults().begin(), op.getResults().end());
      continue;
    }
    moved.push_back(&op);
  }

  OpBuilder b(body.getTerminator());
  // The consumers' warp index broadcast from lane 0 (uniform registers for
  // what derives from it), where there is a warpgroup-dependent descriptor
  // to gain (two consumer warpgroups or more) and the registers allow it:
  // a causal kernel past d192 spills more in its peeled masked loop that
  // way (docs/PERF.md, "uniform registers").
  std::optional<AttentionProblem> problem = getProblem(func);
  bool wideCausal = problem && problem->causal && problem->headDim > 192;
  bool uniformWarpIndex = warpgroups > 1 && !wideCausal;
  auto ws = WarpSpecializeOp::create(
      b, func.getLoc(), b.getI64IntegerAttr(kProducerWarps),
      b.getI64IntegerAttr(producerRegs), b.getI64IntegerAttr(warpgroups),
      b.getI64IntegerAttr(consumerRegs),
      uniformWarpIndex ? b.getUnitAttr() : UnitAttr());
  SmallVector<Region *, 3> regions = {&ws.getProducer(), &ws.getConsumers()};
  if (transposes)
    regions.push_back(&ws.getTransposer());
  for (Region *region : regions) {
    Block *roleBlock = new Block();
    region->push_back(roleBlock);
    OpBuilder rb = OpBuilder::atBlockEnd(roleBlock);
    IRMapping mapping;
    for (Operation *op : moved)
      rb.clone(*op, mapping);
    if (region == &ws.getConsumers())
      keepConsumerPart(*roleBlock);
    else
      keepProducerPart(*roleBlock,
                       /*transposer=*/region == &ws.getTransposer());
    eraseDeadOps(*roleBlock);
    // The dQ drain's last TMA reduction may still read its stage when the
    // loop ends (each attn.accumulate_dq waits for the previous one only):
    // the consumers wait for it before the CTA exits.
    if (region == &ws.getConsumers()) {
      bool drains = false;
      roleBlock->walk([&](AccumulateDqOp) { drains = true; });
      if (drains)
        TmaStoreWaitOp::create(rb, func.getLoc(), rb.getI64IntegerAttr(0));
    }
  }
  for (Operation *op : llvm::reverse(moved))
    op->erase();
  LLVM_DEBUG(llvm::dbgs() << "warp-specialized " << func.getName() << " with "
                          << warpgroups << " consumer warpgroups\n");
  return success();
}

struct AttnWarpSpecializePass
    : public mlir::attn::impl::AttnWarpSpecializeBase<AttnWarpSpecializePass> {
  using AttnWarpSpecializeBase::AttnWarpSpecializeBase;

  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    module.walk([&](func::FuncOp func) {
      if (func->hasAttr(kKernelAttrName) &&
          func.getBody().front().getOps<WarpSpecializeOp>().empty() &&
          scheduleApplies(func, &AttentionSchedule::warpSpecialize))
        kernels.push_back(func);
    });
    if (kernels.empty())
      return;
    if (getTarget(module) != TargetKind::sm_90a) {
      module.emitError("attn-warp-specialize needs #attn.target<sm_90a> "
                       "(setmaxnreg and mbarrier pipes)");
      return signalPassFailure();
    }
    for (func::FuncOp func : kernels)
      if (failed(specialize(func, producerRegs, consumerRegs)))
        return signalPassFailure();
  }
};

} // namespace
