//===- ExpandZeroRows.cpp - attn-expand-zero-rows -------------------------===//
//
// A KV cache may hold NaN past a sequence's end, and 0 x NaN in P V would
// poison the row: attn-tile zeroes the value rows past it (`zero_from` on
// the wait of V). In warp-specialized consumers that takes the warpgroup's
// zeroing and a named barrier of its 128 threads, which this pass spells
// out in the IR, after the schedule passes that move the waits
// (attn-intra-wg-overlap reads the wait of V as one op).
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/NamedBarriers.h"
#include "attn/Passes/Passes.h"

#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "attn-expand-zero-rows"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNEXPANDZEROROWS
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// A consumer's `attn.pipe_wait ... zero_from %n` (a KV cache's value rows
/// past its sequence) becomes the wait, then, while rows remain to zero,
/// the warpgroup's attn.zero_rows and the named barrier of its 128 threads
/// (ids from NamedBarriers.h) that orders the zeros before any wgmma reads
/// the tile:
///   %v = attn.pipe_wait %vp[%j]
///   scf.if %n < rows {
///     attn.zero_rows %v from %n {threads = 128}
///     attn.named_barrier_sync (warpgroup_id + first zero-rows id) {threads = 128}
///   }
void expandZeroRows(WarpSpecializeOp ws) {
  SmallVector<PipeWaitOp> waits;
  ws.getConsumers().walk([&](PipeWaitOp wait) {
    if (wait.getZeroFrom())
      waits.push_back(wait);
  });
  for (PipeWaitOp wait : waits) {
    Value from = wait.getZeroFrom();
    wait.getZeroFromMutable().clear();
    OpBuilder b(wait->getContext());
    b.setInsertionPointAfter(wait);
    Location loc = wait.getLoc();
    auto tile = cast<SmemTileType>(wait.getBuffer().getType());
    Value rows = arith::ConstantIndexOp::create(b, loc, tile.getRows());
    Value pending = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                          from, rows);
    auto branch = scf::IfOp::create(b, loc, pending, /*withElseRegion=*/false);
    b.setInsertionPoint(branch.thenBlock()->getTerminator());
    ZeroRowsOp::create(b, loc, wait.getBuffer(), from,
                       b.getI64IntegerAttr(kWarpgroupThreads));
    Value warpgroup = WarpgroupIdOp::create(b, loc, b.getIndexType());
    Value id = arith::AddIOp::create(
        b, loc, warpgroup,
        arith::ConstantIndexOp::create(b, loc, kFirstZeroRowsBarrier));
    NamedBarrierSyncOp::create(b, loc, id,
                               b.getI64IntegerAttr(kWarpgroupThreads));
  }
}

struct AttnExpandZeroRowsPass
    : public mlir::attn::impl::AttnExpandZeroRowsBase<AttnExpandZeroRowsPass> {
  using AttnExpandZeroRowsBase::AttnExpandZeroRowsBase;
  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    getOperation().walk([](WarpSpecializeOp ws) { expandZeroRows(ws); });
  }
};

} // namespace
