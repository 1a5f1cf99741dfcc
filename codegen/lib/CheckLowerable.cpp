//===- CheckLowerable.cpp - what attn-to-nvvm refuses, up front ----------===//
//
// Before anything is emitted, every op of the tile program must be one the
// lowering translates faithfully; anything else is a located error, never a
// crash or a kernel that silently skips work. The rules that hold for any
// op live here; what one op needs is its LoweringTable entry's check.
//
//===----------------------------------------------------------------------===//
#include "LoweringTable.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::attn;

std::optional<Tensor> KernelFacts::roleOf(Value v) const {
  auto arg = dyn_cast<BlockArgument>(v);
  func::FuncOp kernel = func;
  if (!arg || arg.getOwner() != &kernel.getBody().front())
    return std::nullopt;
  return roles[arg.getArgNumber()];
}

LogicalResult KernelFacts::expect(Operation *op, Value tensor,
                                  ArrayRef<Tensor> allowed,
                                  StringRef what) const {
  std::optional<Tensor> role = roleOf(tensor);
  if (role && llvm::is_contained(allowed, *role))
    return success();
  return op->emitOpError() << what;
}

LogicalResult mlir::attn::checkAccumulateDq(Operation *op,
                                            const KernelFacts &facts) {
  return facts.expect(op, cast<AccumulateDqOp>(op).getDst(), {Tensor::DqAccum},
                      "must add into the kernel's \"dq_accum\" argument");
}

LogicalResult mlir::attn::checkCopySource(Operation *op, Value src,
                                          Value pages, const KernelFacts &facts,
                                          StringRef what) {
  if (failed(facts.expect(op, src,
                          {Tensor::Q, Tensor::K, Tensor::V, Tensor::Dout},
                          what)))
    return failure();
  // A paged copy reads the block table; only key/value tiles are paged.
  if (!pages)
    return success();
  if (failed(facts.expect(op, src, {Tensor::K, Tensor::V},
                          "reads pages of the kernel's k or v argument only")))
    return failure();
  return facts.expect(op, pages, {Tensor::BlockTable},
                      "reads its pages from the kernel's \"block_table\" "
                      "argument only");
}

namespace {

/// Ops the walker in AttnToNVVM.cpp lowers itself (no table entry).
bool isStructural(Operation *op) {
  return isa<func::FuncOp, func::ReturnOp, scf::ForOp, scf::IfOp,
             scf::WhileOp, scf::YieldOp, scf::ConditionOp, memref::DimOp>(
             op) ||
         isa_and_present<arith::ArithDialect>(op->getDialect());
}

} // namespace

/// The rules for every op:
///   - register tiles: whole 16-row slices per warp (rows a positive
///     multiple of 16 * num_warps), else some rows would have no owner;
///   - shared-memory tiles and pipes are placed once at kernel entry: they
///     cannot be loop-carried, yielded or selected between;
///   - arith ops compute on scalars only;
///   - warp roles: the producer runs on one elected thread and only fills
///     pipes; the consumers only drain them and compute;
///   - an op that is neither structural nor in the table is refused.
LogicalResult mlir::attn::checkLowerable(func::FuncOp func,
                                         const KernelFacts &facts,
                                         const LoweringTable &table) {
  TilingAttr tiling = facts.tiling;
  int64_t slice = 16 * tiling.getNumWarps();
  auto refuseBufferFlow = [](Operation *op, Type type) {
    return op->emitOpError()
           << "shared-memory tiles are placed once at kernel entry; " << type
           << " cannot be loop-carried, yielded or selected";
  };
  auto checkTile = [&](Operation *op, Value v) -> LogicalResult {
    auto tile = dyn_cast<RegTileType>(v.getType());
    // A column vector is held whole by every warp (`lanes`: two values a
    // lane per 64): its length is a tile's columns, any multiple of 8.
    bool perWarp = tile && (tile.isCol() || tile.isLanes());
    if (perWarp && tile.getRows() % 8 != 0)
      return op->emitOpError() << "column vector " << tile
                               << " must have a multiple of 8 entries";
    if (tile && !perWarp &&
        (tile.getRows() <= 0 || tile.getRows() % slice != 0))
      return op->emitOpError()
             << "register tile " << tile << " has " << tile.getRows()
             << " rows, but the kernel's " << tiling.getNumWarps()
             << " warps own whole 16-row slices: use a multiple of " << slice;
    if (isa<SmemTileType, PipeType>(v.getType()) &&
        (isa<BlockArgument>(v) || isa<scf::ForOp, scf::IfOp>(op) ||
         !isa_and_present<AttnDialect>(op->getDialect())))
      return refuseBufferFlow(op, v.getType());
    if (isa<SeqType>(v.getType()) && !isa<SequenceOp>(op))
      return op->emitOpError()
             << "sequences (!attn.seq) come from attn.sequence only; one "
                "cannot be loop-carried, yielded or selected";
    return success();
  };
  auto checkOp = [&](Operation *op) -> LogicalResult {
    for (Value v : op->getResults())
      if (failed(checkTile(op, v)))
        return failure();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (op != func.getOperation() && failed(checkTile(op, arg)))
            return failure();
    if (isa<scf::YieldOp>(op))
      for (Value v : op->getOperands()) {
        if (isa<SmemTileType, PipeType>(v.getType()))
          return refuseBufferFlow(op, v.getType());
        if (isa<SeqType>(v.getType()))
          return op->emitOpError(
              "yields a sequence (!attn.seq), which is read once by "
              "attn.sequence and cannot flow through control flow");
      }
    if (isa_and_present<arith::ArithDialect>(op->getDialect()))
      for (Type t : llvm::concat<const Type>(op->getOperandTypes(),
                                             op->getResultTypes()))
        if (!t.isIntOrIndexOrFloat())
          return op->emitOpError()
                 << "computes on " << t
                 << "; attn-to-nvvm lowers arith ops on scalars only (use "
                    "attn ops for tiles)";
    if (auto ws = op->getParentOfType<WarpSpecializeOp>()) {
      bool inProducer = ws.getProducer().isAncestor(op->getParentRegion());
      bool inTransposer =
          ws.getTransposer().isAncestor(op->getParentRegion());
      if (!inTransposer && op->hasTrait<OpTrait::attn::TransposerOnly>())
        return op->emitOpError("transposes a pipe stage, which only the "
                               "transposer region of attn.warp_specialize "
                               "may do");
      if (inTransposer && (op->hasTrait<OpTrait::attn::ProducerOnly>() ||
                           op->hasTrait<OpTrait::attn::ConsumersOnly>() ||
                           touchesRegisterTiles(op)))
        return op->emitOpError("is in the transposer region of "
                               "attn.warp_specialize, which only transposes "
                               "pipe stages (attn.pipe_transpose)");
      if (!inProducer && op->hasTrait<OpTrait::attn::ProducerOnly>())
        return op->emitOpError("fills a pipe, which only the producer region "
                               "of attn.warp_specialize may do");
      if (inProducer && (op->hasTrait<OpTrait::attn::ConsumersOnly>() ||
                         touchesRegisterTiles(op)))
        return op->emitOpError("computes or drains a pipe, which only the "
                               "consumers region of attn.warp_specialize may "
                               "do (the producer runs on one thread)");
    }
    if (isStructural(op))
      return success();
    const OpLowering *entry = table.lookup(op);
    if (!entry) {
      if (isa_and_present<AttnDialect>(op->getDialect()))
        return op->emitOpError()
               << "is not supported by attn-to-nvvm on "
               << stringifyTargetKind(table.target);
      return op->emitOpError("is not supported by attn-to-nvvm");
    }
    return entry->check ? entry->check(op, facts) : success();
  };
  WalkResult result = func.walk([&](Operation *op) {
    return failed(checkOp(op)) ? WalkResult::interrupt()
                               : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}
