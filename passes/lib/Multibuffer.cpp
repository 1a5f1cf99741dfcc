//===- Multibuffer.cpp - attn-multibuffer: copied tiles -> pipes ----------===//
//
//   %k = alloc_smem                    %kp = create_pipe <stages>
//   copy_async %K[..] -> %k fill %f ->  pipe_acquire %kp[%f]
//                                      pipe_load %K[..] -> %kp[%f]
//   wait %k, %f                        %kj = pipe_wait %kp[%f]
//   mma .., %k                         mma .., %kj ; pipe_release %kp[%j]
//
// sm_90a: a CTA barrier per wait becomes a full/empty barrier pair per
// stage, and a buffer can be refilled while the previous `stages - 1` fills
// are in use. sm_80: the fills then move `stages - 1` blocks ahead as
// cp.async groups (MultibufferCpAsync.cpp).
//
//===----------------------------------------------------------------------===//
#include "MultibufferCpAsync.h"
#include "attn/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "attn-multibuffer"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNMULTIBUFFER
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The fill number of a copy to `row` that does not name its fill: the
/// block index `row / rows`, read off `row = x * rows` when the tile
/// program built it that way.
Value fillOf(OpBuilder &b, Location loc, Value row, int64_t rows) {
  if (auto mul = row.getDefiningOp<arith::MulIOp>())
    for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                        std::pair(mul.getRhs(), mul.getLhs())})
      if (auto constant = c.getDefiningOp<arith::ConstantIndexOp>())
        if (constant.value() == rows)
          return x;
  return b.createOrFold<arith::DivUIOp>(
      loc, row, arith::ConstantIndexOp::create(b, loc, rows));
}

/// Rewrites one copied buffer into a pipe of `stages` buffers. A copy names
/// its fill (attn-tile's do; else a copy of rows `x * rows` is fill x), and
/// an `attn.wait` names the fill it waits for.
LogicalResult convertBuffer(AllocSmemOp alloc, int64_t stages,
                            bool mbarrierPipes) {
  SmemTileType type = alloc.getType();
  SmallVector<CopyAsyncOp> copies;
  SmallVector<WaitOp> waits;
  for (Operation *user : alloc->getUsers()) {
    if (auto copy = dyn_cast<CopyAsyncOp>(user))
      copies.push_back(copy);
    else if (auto wait = dyn_cast<WaitOp>(user))
      waits.push_back(wait);
    else if (auto mma = dyn_cast<MmaOp>(user)) {
      if (mma.getAsync())
        return mma.emitOpError("is asynchronous; attn-multibuffer places a "
                               "buffer's release after its last reader and "
                               "needs synchronous MMAs (run "
                               "attn-intra-wg-overlap after it)");
    } else if (!isa<DqMmaOp>(user))
      return user->emitOpError("reads a copied tile in a way attn-multibuffer "
                               "cannot follow (only attn.mma and "
                               "attn.dq_mma may)");
  }
  // A tile filled once, outside any key/value loop, needs one stage: the Q
  // tile. Outside every loop it is never refilled and needs no release;
  // inside a persistent kernel's tile loop it is refilled once per tile,
  // after the release that follows its last reader.
  scf::ForOp copyLoop = copies.size() == 1
                            ? copies.front()->getParentOfType<scf::ForOp>()
                            : scf::ForOp();
  bool oncePerTile = copies.size() == 1 &&
                     (!copyLoop || copyLoop->hasAttr(kTileLoopAttrName));
  bool filledOnce = oncePerTile && !copyLoop;
  int64_t pipeStages = oncePerTile ? 1 : stages;
  // A buffer filled once outside every loop has its fill 0: a fresh
  // barrier completes phase 0 first.
  if (filledOnce) {
    Value fill = copies.front().getFill();
    if (fill && getConstantIntValue(fill) != 0)
      return copies.front().emitOpError(
          "is the only copy into its buffer but is not fill 0; number the "
          "copies into a buffer from 0");
  }

  OpBuilder b(alloc);
  auto pipeType = PipeType::get(alloc.getContext(), pipeStages, type);
  auto pipeOp = CreatePipeOp::create(b, alloc.getLoc(), pipeType);
  // A one-stage mbarrier pipe is released once per tile, by every consumer
  // thread (CreatePipeOp's description says why).
  if (mbarrierPipes && pipeStages == 1)
    pipeOp.setPerThreadRelease(true);
  Value pipe = pipeOp;

  for (CopyAsyncOp copy : copies) {
    b.setInsertionPoint(copy);
    Value fill = copy.getFill();
    if (!fill)
      fill = filledOnce ? arith::ConstantIndexOp::create(b, copy.getLoc(), 0)
                        : fillOf(b, copy.getLoc(), copy.getRow(),
                                 type.getRows());
    PipeAcquireOp::create(b, copy.getLoc(), pipe, fill);
    PipeLoadOp::create(b, copy.getLoc(), copy.getSrc(), copy.getBatch(),
                       copy.getRow(), copy.getHead(), pipe, fill,
                       /*valid=*/Value(), copy.getPages(),
                       copy.getHeadPackAttr(), copy.getTransposeAttr());
    copy.erase();
  }

  for (WaitOp wait : waits) {
    b.setInsertionPoint(wait);
    Value buffer =
        PipeWaitOp::create(b, wait.getLoc(), type, pipe, wait.getFill(),
                           /*pending=*/IntegerAttr(), wait.getZeroFrom());
    // Until the next wait on this tile, its readers use this fill's stage.
    Operation *last = nullptr;
    for (Operation *op = wait->getNextNode(); op; op = op->getNextNode()) {
      if (auto next = dyn_cast<WaitOp>(op); next && next.getBuffer() == alloc)
        break;
      bool uses = false;
      op->walk([&](Operation *inner) {
        for (OpOperand &operand : inner->getOpOperands())
          if (operand.get() == alloc.getResult() &&
              isa<MmaOp, DqMmaOp>(inner)) {
            operand.set(buffer);
            uses = true;
          }
      });
      if (uses)
        last = op;
    }
    if (!filledOnce) {
      if (!last)
        return wait.emitOpError("waits for a fill no attn.mma reads in the "
                                "same block; attn-multibuffer cannot place "
                                "its release");
      b.setInsertionPointAfter(last);
      PipeReleaseOp::create(b, wait.getLoc(), pipe, wait.getFill());
    }
    wait.erase();
  }
  // A reader no wait reaches (before the first wait, or outside the block
  // of every wait) would read an unknown stage.
  if (!alloc->use_empty())
    return alloc.emitOpError("is read by an attn.mma no attn.wait on it "
                             "reaches in its block; attn-multibuffer cannot "
                             "tell which fill that MMA reads");
  alloc.erase();
  return success();
}

struct AttnMultibufferPass
    : public mlir::attn::impl::AttnMultibufferBase<AttnMultibufferPass> {
  using AttnMultibufferBase::AttnMultibufferBase;

  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    if (stages < 1 || stages > kMaxPipeStages) {
      module.emitError() << "attn-multibuffer: stages = " << stages
                         << " is out of range; use 1 to " << kMaxPipeStages;
      return signalPassFailure();
    }
    std::optional<TargetKind> target = getTarget(module);
    // The stages of each kernel: the option when given; else its tiling's,
    // where its schedule has pipes (sm_90a: warp specialization's mbarrier
    // pipes; sm_80: rings of two or more stages); else the option's default.
    llvm::DenseMap<Operation *, int64_t> stagesOf;
    auto stagesFor = [&](func::FuncOp func) -> int64_t {
      if (stages.hasValue() || !func || !getSchedule(func))
        return stages;
      auto [it, inserted] = stagesOf.try_emplace(func, 0);
      if (inserted) {
        auto tiling = func->getAttrOfType<TilingAttr>(kTilingAttrName);
        int64_t depth = tiling ? tiling.getStages() : 0;
        bool pipes = target == TargetKind::sm_80
                         ? depth > 1
                         : scheduleApplies(func, &AttentionSchedule::warpSpecialize);
        it->second = pipes ? std::max<int64_t>(depth, 1) : 0;
      }
      return it->second;
    };
    SmallVector<AllocSmemOp> allocs;
    module.walk([&](AllocSmemOp alloc) {
      bool copied = llvm::any_of(alloc->getUsers(), [](Operation *user) {
        return isa<CopyAsyncOp>(user);
      });
      if (copied && stagesFor(alloc->getParentOfType<func::FuncOp>()) > 0)
        allocs.push_back(alloc);
    });
    if (!allocs.empty() && !target) {
      module.emitError("attn-multibuffer needs the module attribute "
                       "'attn.target' (mbarrier pipes on sm_90a, cp.async "
                       "rings on sm_80)");
      return signalPassFailure();
    }
    SetVector<func::FuncOp> funcs;
    for (AllocSmemOp alloc : allocs) {
      auto func = alloc->getParentOfType<func::FuncOp>();
      funcs.insert(func);
      if (failed(convertBuffer(alloc, stagesFor(func),
                               target == TargetKind::sm_90a)))
        return signalPassFailure();
    }
    // A refill barrier orders a single buffer's reads before its next copy;
    // a pipe's releases and acquires do that now.
    for (func::FuncOp func : funcs)
      if (func)
        func.walk([](BarrierOp barrier) {
          if (barrier.getRefill())
            barrier.erase();
        });
    // sm_80: every thread fills and reads, so the ring is a schedule of the
    // copies themselves.
    if (target == TargetKind::sm_80)
      for (func::FuncOp func : funcs) {
        if (!func) {
          module.emitError("attn-multibuffer (sm_80) schedules the copies "
                           "of a kernel function; a copied tile outside "
                           "func.func has none");
          return signalPassFailure();
        }
        if (failed(scheduleCpAsyncPipes(func, stagesFor(func))))
          return signalPassFailure();
      }
  }
};

} // namespace
