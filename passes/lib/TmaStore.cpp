//===- TmaStore.cpp - attn-tma-store: the output through shared memory ----===//
//
//   consumers {                          consumers {
//     [for each tile {]                    %wg = warpgroup_id, %id = 7 + %wg
//       ...                                [for each tile {]
//       store %o -> %O[b, row, h]            ...
//     [}]                                    [tma_store_wait {pending = 0}
//   }                                         named_barrier_sync %id {128}]
//                                ->          store_smem %o -> %ob
//                                            named_barrier_sync %id {128}
//                                            tma_store %ob -> %O[b, row, h]
//                                          [}]
//                                          tma_store_wait {pending = 0}
//                                        }
//
// Each consumer warpgroup writes its rows of O into a shared-memory tile
// (stmatrix: a quarter of the instructions of per-thread global stores) and
// one of its threads hands them to the TMA, which writes whole 128-byte
// lines and clips the rows past N. The store is asynchronous: a persistent
// CTA starts its next tile while the TMA reads the buffer, and only waits
// for that read before writing the buffer again.
//
// A varlen kernel's packed O ends a sequence where the next begins, and the
// TMA clips a box at the tensor's last row only: a tile that lies inside its
// sequence takes the TMA store, one that ends past it (the sequence's last,
// partial tile) keeps the register store, which stops at the sequence's end.
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/NamedBarriers.h"
#include "attn/Passes/Passes.h"
#include "attn/Passes/TileConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "attn-tma-store"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNTMASTORE
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Whether `store` writes a 16-bit [B, N, H, D] tensor (or a packed
/// [total, H, D] one, rows of a sequence) from a tile of one head whose rows
/// the consumer warpgroups hold 64 each: the stores a TMA box per
/// warpgroup can take over.
bool isTmaStorable(StoreOp store, int64_t warpgroups) {
  auto dst = cast<MemRefType>(store.getDst().getType());
  auto value = cast<RegTileType>(store.getValue().getType());
  bool packed = isa<SeqType>(store.getBatch().getType());
  return dst.getRank() == (packed ? 3 : 4) &&
         dst.getElementType().getIntOrFloatBitWidth() == 16 &&
         (!packed || store.getBatch().getDefiningOp<SequenceOp>()) &&
         store.headPack() == 1 &&
         value.getRows() == kWarpgroupRows * warpgroups &&
         value.getShape()[1] % 16 == 0;
}

/// Shared memory the function's buffers and pipes take (TileConfig.h's
/// layout) with `extra` more bytes of tile.
int64_t smemBytesWith(func::FuncOp func, int64_t extra) {
  SmallVector<SmemAllocation> allocations;
  for (auto &[buffer, allocation] : smemAllocationsOf(func))
    allocations.push_back(allocation);
  allocations.push_back({extra, 0});
  return sharedMemoryLayoutBytes(allocations);
}

/// Whether `op` runs once per iteration of a loop inside the consumers
/// region (a persistent CTA's tile loop), so its buffer may still be read
/// by the previous iteration's store.
bool isInLoop(Operation *op, Region &consumers) {
  for (Operation *parent = op->getParentOp();
       parent && consumers.isAncestor(parent->getParentRegion());
       parent = parent->getParentOp())
    if (isa<scf::ForOp, scf::WhileOp>(parent))
      return true;
  return false;
}

void rewrite(WarpSpecializeOp ws, ArrayRef<StoreOp> stores,
             SmemTileType bufferType) {
  Location loc = ws.getLoc();
  OpBuilder b(ws);
  Value buffer = AllocSmemOp::create(b, loc, bufferType);
  Block &body = ws.getConsumers().front();
  b.setInsertionPointToStart(&body);
  Value wg = WarpgroupIdOp::create(b, loc, b.getIndexType());
  Value id = arith::AddIOp::create(
      b, loc, wg, arith::ConstantIndexOp::create(b, loc, kFirstEpilogueBarrier));
  auto threads = b.getI64IntegerAttr(kWarpgroupThreads);
  for (StoreOp store : stores) {
    b.setInsertionPoint(store);
    Location sl = store.getLoc();
    // The TMA clips a packed tensor's box at its last row, not at the
    // sequence's: a tile that ends past its sequence keeps the register
    // store, which stops there.
    auto seq = store.getBatch().getDefiningOp<SequenceOp>();
    if (seq) {
      int64_t rows = cast<RegTileType>(store.getValue().getType()).getRows();
      Value end = arith::AddIOp::create(
          b, sl, store.getRow(), arith::ConstantIndexOp::create(b, sl, rows));
      Value inside = arith::CmpIOp::create(b, sl, arith::CmpIPredicate::ule,
                                           end, seq.getLength());
      auto split = scf::IfOp::create(b, sl, inside, /*withElseRegion=*/true);
      store->moveBefore(split.elseBlock()->getTerminator());
      b.setInsertionPoint(split.thenBlock()->getTerminator());
    }
    if (isInLoop(store, ws.getConsumers())) {
      // The previous tile's store has read the buffer: its issuing thread
      // waits, then the warpgroup's barrier holds the others until it has.
      TmaStoreWaitOp::create(b, sl, b.getI64IntegerAttr(0));
      NamedBarrierSyncOp::create(b, sl, id, threads);
    }
    StoreSmemOp::create(b, sl, store.getValue(), buffer);
    NamedBarrierSyncOp::create(b, sl, id, threads);
    TmaStoreOp::create(b, sl, buffer, store.getDst(), store.getBatch(),
                       store.getRow(), store.getHead());
    if (!seq)
      store.erase();
  }
  // The CTA's shared memory must outlive the last store's read of it.
  b.setInsertionPointToEnd(&body);
  TmaStoreWaitOp::create(b, loc, b.getI64IntegerAttr(0));
}

struct AttnTmaStorePass
    : public mlir::attn::impl::AttnTmaStoreBase<AttnTmaStorePass> {
  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    getOperation().walk([&](func::FuncOp func) {
      if (!scheduleApplies(func, &AttentionSchedule::tmaStore))
        return;
      SmallVector<WarpSpecializeOp> kernels;
      func.walk([&](WarpSpecializeOp ws) { kernels.push_back(ws); });
      for (WarpSpecializeOp ws : kernels) {
        int64_t warpgroups = ws.getConsumerWarpgroups();
        if (warpgroups > kMaxEpilogueBarriers ||
            !ws.getConsumers().front().getOps<TmaStoreOp>().empty())
          continue;
        SmallVector<StoreOp> stores;
        ws.getConsumers().walk([&](StoreOp store) {
          if (isTmaStorable(store, warpgroups))
            stores.push_back(store);
        });
        if (stores.empty())
          continue;
        // One buffer serves every store of the same tile shape; a kernel
        // with another shape keeps its register stores.
        auto value = cast<RegTileType>(stores.front().getValue().getType());
        auto dst = cast<MemRefType>(stores.front().getDst().getType());
        llvm::erase_if(stores, [&](StoreOp s) {
          return s.getValue().getType() != value ||
                 s.getDst().getType() != dst;
        });
        // O's panels are as wide as the kernel's other tiles' (its V may
        // have a head dim of its own).
        int64_t cols = smemTileCols(dst.getShape().back());
        std::optional<AttentionProblem> problem = getProblem(func);
        int64_t swizzle =
            problem ? kernelTileSwizzle(problem->headDim, problem->headDimV)
                    : smemTileSwizzle(cols);
        auto bufferType = SmemTileType::get(
            func.getContext(), {value.getRows(), cols}, dst.getElementType(),
            swizzle);
        // Where the buffer does not fit beside the K/V pipes (d184 to d256),
        // the registers store O themselves.
        if (smemBytesWith(func, bufferType.getSizeInBytes()) >
            maxSharedMemoryBytes(TargetKind::sm_90a))
          continue;
        rewrite(ws, stores, bufferType);
      }
    });
  }
};

} // namespace
