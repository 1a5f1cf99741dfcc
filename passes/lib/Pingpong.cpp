//===- Pingpong.cpp - attn-pingpong: consumer warpgroups take turns -------===//
//
//   consumers { ... mma ... mma ... }
//     ->
//   consumers {
//     %wg = warpgroup_id                       (last one arrives up front)
//     ... named_barrier_sync (1 + wg)
//         mma ... mma                          (one GEMM phase)
//         named_barrier_arrive (1 + (wg + 1) % n) ...
//   }
//
// Warpgroup w may issue its GEMMs only after warpgroup w-1 issued its own,
// so the tensor cores see one warpgroup's GEMMs while the other runs its
// softmax on the multi-function units.
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/NamedBarriers.h"
#include "attn/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "attn-pingpong"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNPINGPONG
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Threads of two warpgroups: the one waiting and the one arriving.
constexpr int64_t kPingpongThreads = 256;

/// The GEMM phases of `block`: maximal runs that start and end with an
/// attn.mma and hold nothing but MMAs and pipe waits in between.
SmallVector<std::pair<Operation *, Operation *>> gemmPhases(Block &block) {
  SmallVector<std::pair<Operation *, Operation *>> phases;
  Operation *first = nullptr, *last = nullptr;
  for (Operation &op : block) {
    if (isa<MmaOp>(op)) {
      if (!first)
        first = &op;
      last = &op;
      continue;
    }
    if (first && isa<PipeWaitOp>(op))
      continue;
    if (first)
      phases.emplace_back(first, last);
    first = last = nullptr;
  }
  if (first)
    phases.emplace_back(first, last);
  return phases;
}

void schedule(WarpSpecializeOp ws) {
  int64_t groups = ws.getConsumerWarpgroups();
  Block &body = ws.getConsumers().front();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  Location loc = ws.getLoc();
  Value wg = WarpgroupIdOp::create(b, loc, b.getIndexType());
  Value first = arith::ConstantIndexOp::create(b, loc, kFirstPingpongBarrier);
  Value mine = arith::AddIOp::create(b, loc, wg, first);
  Value next = arith::AddIOp::create(
      b, loc,
      arith::RemUIOp::create(
          b, loc,
          arith::AddIOp::create(b, loc, wg,
                                arith::ConstantIndexOp::create(b, loc, 1)),
          arith::ConstantIndexOp::create(b, loc, groups)),
      first);
  // The last warpgroup opens the first turn.
  Value isLast = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq, wg,
      arith::ConstantIndexOp::create(b, loc, groups - 1));
  scf::IfOp::create(b, loc, isLast, [&](OpBuilder &ib, Location il) {
    NamedBarrierArriveOp::create(ib, il, first,
                                 ib.getI64IntegerAttr(kPingpongThreads));
    scf::YieldOp::create(ib, il);
  });

  SmallVector<Block *> blocks;
  body.walk([&](Block *block) { blocks.push_back(block); });
  for (Block *block : blocks)
    for (auto [start, end] : gemmPhases(*block)) {
      OpBuilder pb(start);
      NamedBarrierSyncOp::create(pb, start->getLoc(), mine,
                                 pb.getI64IntegerAttr(kPingpongThreads));
      pb.setInsertionPointAfter(end);
      NamedBarrierArriveOp::create(pb, end->getLoc(), next,
                                   pb.getI64IntegerAttr(kPingpongThreads));
    }
}

struct AttnPingpongPass
    : public mlir::attn::impl::AttnPingpongBase<AttnPingpongPass> {
  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    SmallVector<WarpSpecializeOp> kernels;
    getOperation().walk([&](WarpSpecializeOp ws) {
      auto func = ws->getParentOfType<func::FuncOp>();
      if (ws.getConsumerWarpgroups() >= 2 &&
          ws.getConsumers().front().getOps<NamedBarrierSyncOp>().empty() &&
          (!func || scheduleApplies(func, &AttentionSchedule::pingpong)))
        kernels.push_back(ws);
    });
    for (WarpSpecializeOp ws : kernels) {
      if (ws.getConsumerWarpgroups() > kMaxPingpongBarriers) {
        ws.emitOpError() << "attn-pingpong has " << kMaxPingpongBarriers
                         << " barriers, not enough for "
                         << ws.getConsumerWarpgroups() << " warpgroups";
        return signalPassFailure();
      }
      schedule(ws);
    }
  }
};

} // namespace
