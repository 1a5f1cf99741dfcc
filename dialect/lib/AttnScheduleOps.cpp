//===- AttnScheduleOps.cpp - verifiers of the schedule ops ----------------===//
#include "Verifiers.h"
#include "attn/Dialect/AttnDialect.h"

using namespace mlir;
using namespace mlir::attn;

/// Registers one thread may hold (sm_90a) and the register file per SM.
static constexpr int64_t kMaxRegsPerThread = 256;
static constexpr int64_t kRegisterFile = 64 * 1024;
/// setmaxnreg takes 24..256 in steps of 8.
static constexpr int64_t kMinSetMaxNReg = 24;
static constexpr int64_t kSetMaxNRegStep = 8;

LogicalResult PipeLoadOp::verify() {
  std::optional<TargetKind> target = getTarget(*this);
  if (!target)
    return emitOpError("pipes need the module's #attn.target: mbarriers and "
                       "TMA on sm_90a, cp.async groups on sm_80");
  if (getValid() && *target == TargetKind::sm_90a)
    return emitOpError("'if' commits an empty cp.async group, which exists "
                       "on sm_80 only; on sm_90a skip the fill with scf.if "
                       "around its pipe_acquire and pipe_load");
  SmemTileType buffer = getPipe().getType().getBuffer();
  if (failed(verifyTileCopy(*this, getSrc().getType(), getBatch().getType(),
                            buffer, /*toGlobal=*/false, getTranspose())))
    return failure();
  return verifyKvCacheCopy(*this, getSrc().getType(), buffer, getPages(),
                           headPack());
}

LogicalResult PipeWaitOp::verify() {
  SmemTileType buffer = getPipe().getType().getBuffer();
  if (getBuffer().getType() != buffer)
    return emitOpError() << "result type " << getBuffer().getType()
                         << " differs from the pipe's buffer type " << buffer;
  std::optional<TargetKind> target = getTarget(*this);
  if (target == TargetKind::sm_80 && !getPending())
    return emitOpError("on sm_80 needs 'pending', the cp.async groups "
                       "committed after this fill that may stay in flight "
                       "(attn-multibuffer computes it)");
  if (target == TargetKind::sm_90a && getPending())
    return emitOpError("'pending' counts cp.async groups, which sm_90a "
                       "pipes do not use (they wait on mbarriers)");
  return success();
}

LogicalResult BarrierOp::verify() {
  if ((*this)->getParentOfType<WarpSpecializeOp>())
    return emitOpError("is a CTA-wide barrier, which a warp-specialized "
                       "kernel cannot use (its producer runs on one thread); "
                       "synchronise through pipes or named barriers");
  return success();
}

LogicalResult MmaWaitOp::verify() {
  if (auto mma = getInput().getDefiningOp<MmaOp>(); mma && mma.getAsync())
    return success();
  if (auto dq = getInput().getDefiningOp<DqMmaOp>(); dq && dq.getAsync())
    return success();
  return emitOpError("input must be the result of an asynchronous "
                     "attn.mma {async} or attn.dq_mma {async}");
}

/// Checks one role's setmaxnreg budget.
static LogicalResult verifyRegs(Operation *op, StringRef role, int64_t regs) {
  if (regs < kMinSetMaxNReg || regs > kMaxRegsPerThread ||
      regs % kSetMaxNRegStep != 0)
    return op->emitOpError() << role << "_regs = " << regs
                             << " must be a multiple of " << kSetMaxNRegStep
                             << " between " << kMinSetMaxNReg << " and "
                             << kMaxRegsPerThread << " (setmaxnreg)";
  return success();
}

LogicalResult WarpSpecializeOp::verify() {
  if (getTarget(*this) != TargetKind::sm_90a)
    return emitOpError("warp specialization needs #attn.target<sm_90a> "
                       "(setmaxnreg, mbarrier pipes)");
  if (getProducerWarps() % kWarpgroupWarps != 0)
    return emitOpError() << "producer_warps = " << getProducerWarps()
                         << " must be whole warpgroups (a multiple of 4): "
                            "setmaxnreg applies per warpgroup";
  if (failed(verifyRegs(*this, "producer", getProducerRegs())) ||
      failed(verifyRegs(*this, "consumer", getConsumerRegs())))
    return failure();
  // setmaxnreg moves registers within the CTA's allocation at launch: each
  // thread starts with the register file over the threads, rounded down to
  // setmaxnreg's step (168 for 384 threads), and an increase waits until
  // decreases have freed enough. More than that total would never start.
  // A kernel of several CTAs per SM (its tiling's min_ctas_per_sm) starts
  // with its share of the file.
  int64_t threads = 32 * getProducerWarps() + 128 * getConsumerWarpgroups();
  int64_t ctas = 1;
  for (Operation *parent = (*this)->getParentOp(); parent;
       parent = parent->getParentOp())
    if (auto tiling = parent->getAttrOfType<TilingAttr>(kTilingAttrName)) {
      ctas = std::max<int64_t>(1, tiling.getMinCtasPerSm());
      break;
    }
  int64_t atLaunch =
      kRegisterFile / ctas / threads / kSetMaxNRegStep * kSetMaxNRegStep;
  int64_t total = getProducerWarps() * 32 * getProducerRegs() +
                  getConsumerWarpgroups() * 128 * getConsumerRegs();
  if (total > atLaunch * threads)
    return emitOpError() << "register budgets need " << total
                         << " registers, more than the " << atLaunch * threads
                         << " the CTA's " << threads << " threads start with ("
                         << atLaunch << " each"
                         << (ctas > 1 ? " at " + std::to_string(ctas) +
                                            " CTAs per SM"
                                      : std::string())
                         << "; setmaxnreg.inc would wait "
                         << "forever); lower producer_regs or consumer_regs";
  return success();
}

LogicalResult PipeTransposeOp::verify() {
  SmemTileType src = getSrc().getType().getBuffer();
  SmemTileType dst = getDst().getType().getBuffer();
  if (!isa<Float8E4M3FNType>(src.getElementType()) ||
      dst.getElementType() != src.getElementType())
    return emitOpError() << "transposes FP8 (e4m3) tiles only, got " << src
                         << " and " << dst;
  if (src.getRows() != dst.getCols() || src.getCols() != dst.getRows())
    return emitOpError() << "writes " << src << " transposed, which needs a "
                         << src.getCols() << "x" << src.getRows()
                         << " tile, but the destination is " << dst;
  // One ldmatrix.x4 / stmatrix.x4.trans covers 16 keys by 32 bytes.
  if (src.getRows() % 16 != 0 || src.getCols() % 32 != 0)
    return emitOpError() << "transposes blocks of 16 keys by 32 head-dim "
                            "bytes: "
                         << src << " needs a multiple of 16 rows and of 32 "
                            "columns";
  auto ws = (*this)->getParentOfType<WarpSpecializeOp>();
  if (ws && !ws.getTransposer().isAncestor((*this)->getParentRegion()))
    return emitOpError("runs on the transposing warps: only the "
                       "'transposer' region of attn.warp_specialize may "
                       "hold it");
  return success();
}

/// The warp_specialize whose consumers region holds `op`, or null.
static WarpSpecializeOp enclosingConsumers(Operation *op) {
  auto ws = op->getParentOfType<WarpSpecializeOp>();
  if (!ws || !ws.getConsumers().isAncestor(op->getParentRegion()))
    return nullptr;
  return ws;
}

LogicalResult WarpgroupIdOp::verify() {
  if (!enclosingConsumers(*this))
    return emitOpError("is only defined inside the 'consumers' region of "
                       "attn.warp_specialize");
  return success();
}

//===----------------------------------------------------------------------===//
// The epilogue through shared memory
//===----------------------------------------------------------------------===//

LogicalResult StoreSmemOp::verify() {
  auto value = cast<RegTileType>(getValue().getType());
  SmemTileType buffer = getBuffer().getType();
  if (value.getFragment() != FragmentKind::acc ||
      !value.getElementType().isF32())
    return emitOpError() << "'value' must be an f32 'acc' register tile, got "
                         << value;
  if (buffer.getElementType().getIntOrFloatBitWidth() != 16 ||
      buffer.getSwizzle() == 0)
    return emitOpError() << "'buffer' must be a swizzled tile of f16 or bf16 "
                            "(swizzle = 32, 64 or 128), got "
                         << buffer;
  int64_t cols = value.getShape()[1];
  if (value.getRows() != buffer.getRows() || cols % 16 != 0 ||
      cols > buffer.getCols() ||
      buffer.getCols() !=
          static_cast<int64_t>(llvm::alignTo(cols, buffer.getPanelCols())))
    return emitOpError() << "a " << value.getRows() << "x" << cols
                         << " tile needs a buffer of " << value.getRows()
                         << " rows and its columns (a multiple of 16) "
                            "rounded up to whole swizzle panels, got "
                         << buffer;
  return success();
}

LogicalResult TmaStoreOp::verify() {
  WarpSpecializeOp ws = enclosingConsumers(*this);
  if (!ws)
    return emitOpError("stores the rows each consumer warpgroup holds, so it "
                       "is only defined inside the 'consumers' region of "
                       "attn.warp_specialize");
  SmemTileType buffer = getBuffer().getType();
  if (failed(verifyTileCopy(*this, getDst().getType(), getBatch().getType(),
                            buffer, /*toGlobal=*/true)))
    return failure();
  int64_t rows = kWarpgroupRows * ws.getConsumerWarpgroups();
  if (buffer.getRows() != rows)
    return emitOpError() << "each of the " << ws.getConsumerWarpgroups()
                         << " consumer warpgroups stores the " << kWarpgroupRows
                         << " rows it holds, so the tile must have " << rows
                         << " rows, got " << buffer;
  return success();
}

LogicalResult TmaStoreWaitOp::verify() {
  if (!enclosingConsumers(*this))
    return emitOpError("waits for a consumer warpgroup's TMA stores, so it is "
                       "only defined inside the 'consumers' region of "
                       "attn.warp_specialize");
  return success();
}
