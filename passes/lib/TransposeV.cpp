//===- TransposeV.cpp - attn-transpose-v: FP8's V transposed in the kernel -===//
//
//   attn.pipe_acquire %vp[%f]             %vs = attn.create_pipe  (keys x D)
//   attn.pipe_load %V[..] -> %vp[%f]  ->  attn.pipe_acquire %vs[%f]
//     {transpose}                         attn.pipe_load %V[..] -> %vs[%f]
//                                         attn.pipe_transpose %vs -> %vp[%f]
//
// The FP8 wgmma reads V K-major (keys contiguous), but V is usually stored
// with its head dim contiguous. Rather than a pass over V in memory before
// the kernel, the TMA lands each row-major V tile in a staging pipe and the
// producer warpgroup's idle warps write it transposed into the pipe the
// consumers read (FlashAttention-3's in-kernel transpose). The consumers'
// program does not change: only who fills %vp does, and a paged cache's
// `zero_from` on the consumers' wait of V (the keys past a sequence's end,
// in the KV-cache and the varlen loops) moves to the transpose, which
// zeroes those keys in registers.
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/Passes.h"
#include "attn/Passes/TileConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define DEBUG_TYPE "attn-transpose-v"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNTRANSPOSEV
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The acquire of fill `fill` of `pipe` that precedes `load` in its block.
PipeAcquireOp acquireBefore(PipeLoadOp load) {
  for (Operation *op = load->getPrevNode(); op; op = op->getPrevNode())
    if (auto acquire = dyn_cast<PipeAcquireOp>(op);
        acquire && acquire.getPipe() == load.getPipe() &&
        acquire.getFill() == load.getFill())
      return acquire;
  return nullptr;
}

/// The P V products' P conversions when every product that reads `vt`
/// takes its A operand straight from an FP8 attn.convert: the transposes
/// can then store the keys in the accumulator's order and the conversions
/// skip their shuffles. Empty otherwise.
SmallVector<ConvertOp> convertsReading(CreatePipeOp vt) {
  SmallVector<ConvertOp> converts;
  for (Operation *user : vt->getUsers()) {
    auto wait = dyn_cast<PipeWaitOp>(user);
    if (!wait)
      continue;
    for (Operation *reader : wait.getBuffer().getUsers()) {
      auto mma = dyn_cast<MmaOp>(reader);
      auto convert = mma ? mma.getA().getDefiningOp<ConvertOp>() : ConvertOp();
      if (!convert || mma.getB() != wait.getBuffer() ||
          !isa<Float8E4M3FNType>(
              cast<RegTileType>(convert.getType()).getElementType()) ||
          !convert->hasOneUse())
        return {};
      converts.push_back(convert);
    }
  }
  return converts;
}

/// Whether two fill indices are the same value: one SSA value, or the same
/// pure op on the same operands (the dense loop computes a fill's index
/// once for its copy and again for its wait).
bool sameFill(Value a, Value b) {
  if (a == b)
    return true;
  Operation *x = a.getDefiningOp(), *y = b.getDefiningOp();
  return x && y && isPure(x) && x->getBlock() == y->getBlock() &&
         OperationEquivalence::isEquivalentTo(
             x, y, OperationEquivalence::IgnoreLocations);
}

/// The consumers' wait of fill `fill` of `vt` that zeroes rows, or null.
PipeWaitOp zeroingWaitOf(CreatePipeOp vt, Value fill) {
  for (Operation *user : vt->getUsers())
    if (auto wait = dyn_cast<PipeWaitOp>(user);
        wait && wait.getZeroFrom() && sameFill(wait.getFill(), fill))
      return wait;
  return nullptr;
}

/// FlashAttention-3's layout trick: V's keys stored in the order the FP8
/// accumulator holds P's columns, so P needs no shuffles into the A operand.
void interleaveKeysOf(CreatePipeOp vt) {
  SmallVector<ConvertOp> converts = convertsReading(vt);
  if (converts.empty())
    return;
  for (ConvertOp convert : converts)
    convert.setInterleavedKeys(true);
  for (Operation *user : vt->getUsers())
    if (auto transpose = dyn_cast<PipeTransposeOp>(user))
      transpose.setInterleaveKeys(true);
}

/// Gives the transposed pipe `vt` a row-major staging pipe and the
/// transposing warps. `stagingStages` 0: as many stages as `vt` where they
/// fit in the target's shared memory beside the kernel's other tiles, else
/// one.
LogicalResult transposePipe(func::FuncOp func, CreatePipeOp vt,
                            ArrayRef<PipeLoadOp> loads, int64_t stagingStages,
                            bool interleaveKeys) {
  SmemTileType vtTile = vt.getType().getBuffer();
  auto stagingTile = SmemTileType::get(
      vt.getContext(), {vtTile.getCols(), vtTile.getRows()},
      vtTile.getElementType(),
      smemTileSwizzle(vtTile.getRows(), /*elementBytes=*/1));
  int64_t stages = stagingStages;
  if (stages == 0) {
    stages = vt.getType().getStages();
    SmallVector<SmemAllocation> sizes;
    for (auto &[buffer, allocation] : smemAllocationsOf(func))
      sizes.push_back(allocation);
    sizes.push_back({stagingTile.getSizeInBytes(), stages});
    if (sharedMemoryLayoutBytes(sizes) > maxSharedMemoryBytes(TargetKind::sm_90a))
      stages = 1;
  }
  OpBuilder b(vt);
  b.setInsertionPointAfter(vt);
  auto staging = CreatePipeOp::create(
      b, vt.getLoc(), PipeType::get(vt.getContext(), stages, stagingTile));
  staging.setReleaseArrivalsAttr(b.getI64IntegerAttr(kTransposerWarps));
  vt.setFillArrivalsAttr(b.getI64IntegerAttr(kTransposerWarps));

  DominanceInfo dominance(func);
  for (PipeLoadOp load : loads) {
    PipeAcquireOp acquire = acquireBefore(load);
    if (!acquire)
      return load.emitOpError("has no attn.pipe_acquire of its fill before "
                              "it in its block; attn-transpose-v moves the "
                              "acquire to the staging pipe with the load");
    acquire.getPipeMutable().assign(staging);
    b.setInsertionPoint(load);
    PipeLoadOp::create(b, load.getLoc(), load.getSrc(), load.getBatch(),
                       load.getRow(), load.getHead(), staging, load.getFill(),
                       load.getValid(), load.getPages(), load.getHeadPackAttr(),
                       /*transpose=*/UnitAttr());
    // The keys the consumers would zero after the wait are zeroed by the
    // transpose: the wait's count must be known where the fill is issued.
    Value zeroFrom;
    if (PipeWaitOp wait = zeroingWaitOf(vt, load.getFill())) {
      zeroFrom = wait.getZeroFrom();
      if (!dominance.properlyDominates(zeroFrom, load))
        return wait.emitOpError(
            "zeroes rows from a count computed after the fill it waits for "
            "is issued; attn-transpose-v moves the zeroing to that fill's "
            "transpose: compute the count before the fill");
      wait.getZeroFromMutable().clear();
    }
    PipeTransposeOp::create(b, load.getLoc(), staging, vt, load.getFill(),
                            zeroFrom);
    load.erase();
  }
  // A zeroing wait left on the transposed pipe would zero head-dim rows of
  // its D x keys tile: every one must have moved onto a transpose.
  for (Operation *user : vt->getUsers())
    if (auto wait = dyn_cast<PipeWaitOp>(user); wait && wait.getZeroFrom())
      return wait.emitOpError(
          "zeroes rows of a pipe attn-transpose-v transposes, but no fill of "
          "that pipe has the same fill index in its block: the zeroing of "
          "value rows moves onto the transpose of the same fill");
  if (interleaveKeys)
    interleaveKeysOf(vt);
  return success();
}

struct AttnTransposeVPass
    : public mlir::attn::impl::AttnTransposeVBase<AttnTransposeVPass> {
  using AttnTransposeVBase::AttnTransposeVBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (stagingStages < 0 || stagingStages > kMaxPipeStages) {
      module.emitError() << "attn-transpose-v: staging-stages = "
                         << stagingStages << " is out of range; use 0 (as "
                         << "many as fit) to " << kMaxPipeStages;
      return signalPassFailure();
    }
    // The transposing fills of each pipe, in program order.
    llvm::MapVector<Operation *, SmallVector<PipeLoadOp>> byPipe;
    WalkResult walk = module.walk([&](Operation *op) {
      if (auto copy = dyn_cast<CopyAsyncOp>(op); copy && copy.getTranspose()) {
        copy.emitOpError("transposes its source but is not a pipe fill yet: "
                         "run attn-multibuffer before attn-transpose-v");
        return WalkResult::interrupt();
      }
      auto load = dyn_cast<PipeLoadOp>(op);
      if (!load || !load.getTranspose())
        return WalkResult::advance();
      auto func = load->getParentOfType<func::FuncOp>();
      if (getTarget(module) != TargetKind::sm_90a || !func ||
          !scheduleApplies(func, &AttentionSchedule::warpSpecialize)) {
        load.emitOpError("transposes FP8's V in shared memory on the "
                         "producer warpgroup, which needs sm_90a and warp "
                         "specialization");
        return WalkResult::interrupt();
      }
      auto pipe = load.getPipe().getDefiningOp<CreatePipeOp>();
      if (!pipe) {
        load.emitOpError("fills a pipe attn-transpose-v cannot trace to its "
                         "attn.create_pipe");
        return WalkResult::interrupt();
      }
      byPipe[pipe].push_back(load);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (auto &[op, loads] : byPipe) {
      auto pipe = cast<CreatePipeOp>(op);
      if (failed(transposePipe(pipe->getParentOfType<func::FuncOp>(), pipe,
                               loads, stagingStages, interleaveKeys)))
        return signalPassFailure();
      LLVM_DEBUG(llvm::dbgs() << "transposed " << loads.size()
                              << " V fills in the kernel\n");
    }
  }
};

} // namespace
