//===- PrefetchQ.cpp - attn-prefetch-q: the next tile's Q during this one -===//
//
//   create_pipe : !attn.pipe<1, T>   ->   create_pipe : !attn.pipe<2, T>
//
// A persistent CTA (attn-persistent) loads one Q tile per tile of its loop
// into a one-stage pipe, released after the tile's last GEMM that reads it.
// The producer cannot fill it again before that release, so each tile
// starts with Q's full load latency, and the next tile's first K waits
// behind it in the producer's program order. With a second stage the
// producer loads the next tile's Q (and its first K) as soon as it has
// issued this tile's last V, while the consumers still run this tile's
// last blocks and epilogue. Short sequences gain most: their tiles are a
// few key blocks long, so each tile's start weighs more.
//
// The pipe keeps its fills (one per tile) and its per-thread release; only
// its stage count changes. attn-configure turns the schedule's prefetch_q
// on for dense 16-bit kernels where the second Q tile fits beside the K/V
// pipes and the output tile (d64 and d128; not d256); the pass checks that
// on the IR.
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/Passes.h"
#include "attn/Passes/TileConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#define DEBUG_TYPE "attn-prefetch-q"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNPREFETCHQ
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Whether `pipe` is a one-stage pipe filled once per iteration of a
/// persistent tile loop.
bool isPerTilePipe(CreatePipeOp pipe) {
  if (pipe.getType().getStages() != 1)
    return false;
  bool perTile = false;
  for (Operation *user : pipe->getUsers())
    if (auto load = dyn_cast<PipeLoadOp>(user)) {
      auto loop = load->getParentOfType<scf::ForOp>();
      if (!loop || !loop->hasAttr(kTileLoopAttrName))
        return false;
      perTile = true;
    }
  return perTile;
}

struct AttnPrefetchQPass
    : public mlir::attn::impl::AttnPrefetchQBase<AttnPrefetchQPass> {
  using AttnPrefetchQBase::AttnPrefetchQBase;

  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    bool anyError = false;
    getOperation().walk([&](func::FuncOp func) {
      if (!scheduleApplies(func, &AttentionSchedule::prefetchQ))
        return;
      SmallVector<CreatePipeOp> pipes;
      func.walk([&](CreatePipeOp pipe) {
        if (isPerTilePipe(pipe))
          pipes.push_back(pipe);
      });
      for (CreatePipeOp pipe : pipes) {
        PipeType type = pipe.getType();
        auto doubled = PipeType::get(type.getContext(), 2, type.getBuffer());
        SmallVector<SmemAllocation> allocations;
        for (auto &[value, allocation] : smemAllocationsOf(func))
          allocations.push_back(value == pipe.getResult()
                                    ? SmemAllocation{allocation.tileBytes, 2}
                                    : allocation);
        int64_t bytes = sharedMemoryLayoutBytes(allocations);
        if (bytes > maxSharedMemoryBytes(TargetKind::sm_90a)) {
          // attn-configure turns the schedule's switch on only where the
          // second tile fits; a hand-written kernel without a schedule
          // keeps its one stage.
          if (getSchedule(func)) {
            pipe.emitOpError()
                << "attn-prefetch-q: a second Q stage needs " << bytes
                << " bytes of shared memory, more than the "
                << maxSharedMemoryBytes(TargetKind::sm_90a)
                << " of a CTA; configure the kernel with prefetch_q = false";
            anyError = true;
          }
          continue;
        }
        pipe.getResult().setType(doubled);
      }
    });
    if (anyError)
      signalPassFailure();
  }
};

} // namespace
