//===- AttnToNVVM.cpp - attn-to-nvvm: tile program -> LLVM + NVVM ---------===//
//
// Builds the kernel's llvm.func with the ABI of docs/ABI.md, places the
// shared-memory buffers, then walks the tile program in order: scalar (index)
// ops are cloned, structured control flow is rebuilt with register tiles
// flattened into per-thread scalars, and every attn op goes either to the
// shared fragment lowering or to the target's lowering.
//
//===----------------------------------------------------------------------===//
#include "Lowering.h"
#include "attn/Codegen/Codegen.h"
#include "attn/Passes/TileConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#define DEBUG_TYPE "attn-to-nvvm"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNTONVVM
#include "attn/Codegen/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Name of the dynamic shared-memory symbol.
constexpr llvm::StringLiteral kSmemSymbol = "attn_dynamic_smem";
/// Bytes of a CUtensorMap kernel parameter and its alignment.
constexpr int64_t kTensorMapBytes = 128;
constexpr int64_t kTensorMapAlign = 64;

/// Checks, before anything is emitted, that every op of the tile program is
/// one this lowering translates faithfully; anything else is a located
/// error, never a crash or a kernel that silently skips work.
///   - tensors: copies read the kernel's q/k/v, attn.store writes o,
///     attn.store_rows writes lse (the ABI gives each a fixed parameter);
///   - register tiles: whole 16-row slices per warp (rows a positive
///     multiple of 16 * num_warps), else some rows would have no owner;
///   - shared-memory tiles and pipes are placed once at kernel entry: they
///     cannot be loop-carried, yielded or selected between;
///   - arith ops compute on scalars only.
LogicalResult checkLowerable(func::FuncOp func, TilingAttr tiling,
                             ArrayRef<Tensor> roles) {
  auto roleOf = [&](Value v) -> std::optional<Tensor> {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &func.getBody().front())
      return std::nullopt;
    return roles[arg.getArgNumber()];
  };
  int64_t slice = 16 * tiling.getNumWarps();
  auto refuseBufferFlow = [](Operation *op, Type type) {
    return op->emitOpError()
           << "shared-memory tiles are placed once at kernel entry; " << type
           << " cannot be loop-carried, yielded or selected";
  };
  auto checkTile = [&](Operation *op, Value v) -> LogicalResult {
    auto tile = dyn_cast<RegTileType>(v.getType());
    if (tile && (tile.getRows() <= 0 || tile.getRows() % slice != 0))
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
  WalkResult result = func.walk([&](Operation *op) -> WalkResult {
    if (auto ws = dyn_cast<WarpSpecializeOp>(op))
      if (4 * static_cast<int64_t>(ws.getConsumerWarpgroups()) !=
          tiling.getNumWarps()) {
        ws.emitOpError() << "declares " << ws.getConsumerWarpgroups()
                         << " consumer warpgroups, but the kernel's tiling has "
                         << tiling.getNumWarps() << " warps ("
                         << tiling.getNumWarps() / 4 << " warpgroups)";
        return WalkResult::interrupt();
      }
    for (Value v : op->getResults())
      if (failed(checkTile(op, v)))
        return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (op != func.getOperation() && failed(checkTile(op, arg)))
            return WalkResult::interrupt();
    if (isa<scf::YieldOp>(op))
      for (Value v : op->getOperands()) {
        if (isa<SmemTileType, PipeType>(v.getType())) {
          (void)refuseBufferFlow(op, v.getType());
          return WalkResult::interrupt();
        }
        if (isa<SeqType>(v.getType())) {
          op->emitOpError("yields a sequence (!attn.seq), which is read once "
                          "by attn.sequence and cannot flow through control "
                          "flow");
          return WalkResult::interrupt();
        }
      }
    if (op->getDialect() && isa<arith::ArithDialect>(op->getDialect()))
      for (Type t : llvm::concat<const Type>(op->getOperandTypes(),
                                             op->getResultTypes()))
        if (!t.isIntOrIndexOrFloat()) {
          op->emitOpError() << "computes on " << t
                            << "; attn-to-nvvm lowers arith ops on scalars "
                               "only (use attn ops for tiles)";
          return WalkResult::interrupt();
        }
    // Warp roles: the producer runs on one elected thread and only fills
    // pipes; the consumers only drain them and compute.
    if (auto ws = op->getParentOfType<WarpSpecializeOp>()) {
      bool inProducer = ws.getProducer().isAncestor(op->getParentRegion());
      if (!inProducer && isa<PipeAcquireOp, PipeLoadOp>(op)) {
        op->emitOpError("fills a pipe, which only the producer region of "
                        "attn.warp_specialize may do");
        return WalkResult::interrupt();
      }
      if (inProducer && (isa<PipeWaitOp, PipeReleaseOp, MmaOp, MmaWaitOp,
                             StoreOp, StoreRowsOp>(op) ||
                         touchesRegisterTiles(op))) {
        op->emitOpError("computes or drains a pipe, which only the "
                        "consumers region of attn.warp_specialize may do "
                        "(the producer runs on one thread)");
        return WalkResult::interrupt();
      }
    }
    auto expect = [&](Value tensor, ArrayRef<Tensor> allowed,
                      StringRef what) -> LogicalResult {
      std::optional<Tensor> role = roleOf(tensor);
      if (role && llvm::is_contained(allowed, *role))
        return success();
      return op->emitOpError() << what;
    };
    // A paged copy reads the block table; only key/value tiles are paged.
    auto expectPages = [&](Value src, Value pages) -> LogicalResult {
      if (!pages)
        return success();
      if (failed(expect(src, {Tensor::K, Tensor::V},
                        "reads pages of the kernel's k or v argument only")))
        return failure();
      return expect(pages, {Tensor::BlockTable},
                    "reads its pages from the kernel's \"block_table\" "
                    "argument only");
    };
    LogicalResult ok = success();
    if (auto copy = dyn_cast<CopyAsyncOp>(op))
      ok = succeeded(expect(copy.getSrc(), {Tensor::Q, Tensor::K, Tensor::V},
                            "copies from the kernel's q, k or v argument "
                            "only"))
               ? expectPages(copy.getSrc(), copy.getPages())
               : failure();
    else if (auto load = dyn_cast<PipeLoadOp>(op))
      ok = succeeded(expect(load.getSrc(), {Tensor::Q, Tensor::K, Tensor::V},
                            "loads from the kernel's q, k or v argument only"))
               ? expectPages(load.getSrc(), load.getPages())
               : failure();
    else if (auto store = dyn_cast<StoreOp>(op))
      ok = expect(store.getDst(), {Tensor::O, Tensor::OPartial},
                  "must write the kernel's \"o\" argument (or a split "
                  "kernel's \"o_partial\"): the kernel ABI has one output "
                  "tensor");
    else if (auto store = dyn_cast<TmaStoreOp>(op))
      ok = expect(store.getDst(), {Tensor::O},
                  "must write the kernel's \"o\" argument");
    else if (auto rows = dyn_cast<StoreRowsOp>(op))
      ok = expect(rows.getDst(), {Tensor::Lse, Tensor::LsePartial},
                  "must write the kernel's \"lse\" (or \"lse_partial\") "
                  "argument");
    else if (auto seq = dyn_cast<SequenceOp>(op))
      ok = expect(seq.getCuSeqlens(), {Tensor::CuSeqlensQ, Tensor::CuSeqlensK},
                  "must read the kernel's \"cu_seqlens_q\" or "
                  "\"cu_seqlens_k\" argument");
    else if (auto load = dyn_cast<LoadOp>(op))
      ok = expect(load.getSrc(), {Tensor::OPartial},
                  "must read the kernel's \"o_partial\" argument");
    else if (auto load = dyn_cast<LoadRowsOp>(op))
      ok = expect(load.getSrc(), {Tensor::LsePartial},
                  "must read the kernel's \"lse_partial\" argument");
    else if (auto load = dyn_cast<LoadIndexOp>(op))
      ok = expect(load.getSrc(), {Tensor::CacheSeqlens},
                  "must read the kernel's \"cache_seqlens\" argument");
    return failed(ok) ? WalkResult::interrupt() : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

class KernelLowering {
public:
  KernelLowering(func::FuncOp func, TargetKind target,
                 std::unique_ptr<TargetLowering> targetLowering,
                 bool flushDenormals)
      : func(func), target(target), targetLowering(std::move(targetLowering)),
        flushDenormals(flushDenormals) {}

  LogicalResult run();

private:
  LogicalResult lowerBlock(Block &block);
  LogicalResult lowerOp(Operation *op);
  LogicalResult lowerFor(scf::ForOp op);
  LogicalResult lowerIf(scf::IfOp op);
  LogicalResult lowerWhile(scf::WhileOp op);
  LogicalResult lowerWarpSpecialize(WarpSpecializeOp op);
  LogicalResult lowerDim(memref::DimOp op);
  LogicalResult lowerSequence(SequenceOp op);
  /// Appends the lowered values of `v` (a tile's scalars or one scalar).
  void flatten(Value v, SmallVectorImpl<Value> &out);
  /// Maps `v` to the next values of `flat` starting at `pos`.
  void unflatten(Value v, ValueRange flat, size_t &pos);
  /// Gives tile `to` the lowered values of tile `from`. (Not
  /// `tiles[to] = tiles[from]`: C++17 evaluates the right side first, and
  /// the left side's insertion may rehash the map under that reference.)
  void copyTile(Value to, Value from);
  LogicalResult placeBuffers();

  func::FuncOp func;
  TargetKind target;
  std::unique_ptr<TargetLowering> targetLowering;
  bool flushDenormals;
  std::unique_ptr<Lowering> l;
  IRMapping scalarMap;
};

void KernelLowering::flatten(Value v, SmallVectorImpl<Value> &out) {
  if (isa<RegTileType>(v.getType())) {
    auto it = l->tiles.find(v);
    assert(it != l->tiles.end() && "tile used before it was lowered");
    out.append(it->second.begin(), it->second.end());
    return;
  }
  out.push_back(l->scalar(v));
}

void KernelLowering::copyTile(Value to, Value from) {
  SmallVector<Value> values = l->tiles.lookup(from);
  l->tiles[to] = std::move(values);
}

void KernelLowering::unflatten(Value v, ValueRange flat, size_t &pos) {
  if (isa<RegTileType>(v.getType())) {
    size_t count = l->tiles.lookup(v).size();
    l->tiles[v] = SmallVector<Value>(flat.begin() + pos,
                                     flat.begin() + pos + count);
    pos += count;
    return;
  }
  l->scalars[v] = flat[pos++];
}

LogicalResult KernelLowering::lowerFor(scf::ForOp op) {
  OpBuilder &b = l->b;
  SmallVector<Value> inits;
  for (Value init : op.getInitArgs())
    flatten(init, inits);
  // Iteration arguments take the shape of their initial values.
  for (auto [arg, init] : llvm::zip(op.getRegionIterArgs(), op.getInitArgs()))
    if (isa<RegTileType>(arg.getType()))
      copyTile(arg, init);
  LogicalResult status = success();
  auto newFor = scf::ForOp::create(
      b, op.getLoc(), l->scalar(op.getLowerBound()),
      l->scalar(op.getUpperBound()), l->scalar(op.getStep()), inits,
      [&](OpBuilder &, Location, Value iv, ValueRange iterArgs) {
        l->scalars[op.getInductionVar()] = iv;
        size_t pos = 0;
        for (Value arg : op.getRegionIterArgs())
          unflatten(arg, iterArgs, pos);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToEnd(b.getInsertionBlock());
        status = lowerBlock(*op.getBody());
      });
  if (failed(status))
    return failure();
  // Results take the shape of the yielded values.
  auto yield = cast<scf::YieldOp>(op.getBody()->getTerminator());
  for (auto [result, yielded] : llvm::zip(op.getResults(), yield.getOperands()))
    if (isa<RegTileType>(result.getType()))
      copyTile(result, yielded);
  size_t pos = 0;
  for (Value result : op.getResults())
    unflatten(result, newFor.getResults(), pos);
  return success();
}

/// A loop over scalars only (a persistent varlen CTA's walk over the
/// sequences): the same loop over the lowered scalars.
LogicalResult KernelLowering::lowerWhile(scf::WhileOp op) {
  for (Type type : op->getResultTypes())
    if (!type.isIntOrIndex())
      return op.emitOpError("carries ")
             << type << "; attn-to-nvvm lowers scf.while over integers only";
  OpBuilder &b = l->b;
  SmallVector<Value> inits;
  for (Value init : op.getInits())
    inits.push_back(l->scalar(init));
  LogicalResult status = success();
  // Lowers `block` without its terminator, whose lowered operands it returns.
  auto lowerRegion = [&](Block &block, ValueRange args) {
    for (auto [from, to] : llvm::zip(block.getArguments(), args))
      l->scalars[from] = to;
    for (Operation &inner : block.without_terminator()) {
      for (Value operand : inner.getOperands())
        if (Value mapped = l->scalars.lookup(operand))
          scalarMap.map(operand, mapped);
      if (failed(lowerOp(&inner)))
        status = failure();
    }
    SmallVector<Value> operands;
    for (Value v : block.getTerminator()->getOperands())
      operands.push_back(failed(status) ? v : l->scalar(v));
    return operands;
  };
  auto newWhile = scf::WhileOp::create(
      b, op.getLoc(), op->getResultTypes(), inits,
      [&](OpBuilder &, Location loc, ValueRange args) {
        SmallVector<Value> operands = lowerRegion(op.getBefore().front(), args);
        scf::ConditionOp::create(b, loc, operands.front(),
                                 ArrayRef(operands).drop_front());
      },
      [&](OpBuilder &, Location loc, ValueRange args) {
        scf::YieldOp::create(b, loc, lowerRegion(op.getAfter().front(), args));
      });
  if (failed(status))
    return failure();
  for (auto [from, to] : llvm::zip(op.getResults(), newWhile.getResults()))
    l->scalars[from] = to;
  return success();
}

LogicalResult KernelLowering::lowerIf(scf::IfOp op) {
  if (op.getNumResults() == 0 && op.getElseRegion().empty()) {
    LogicalResult status = success();
    l->emitIf(l->scalar(op.getCondition()),
              [&] { status = lowerBlock(*op.thenBlock()); });
    return status;
  }
  // With results: both branches yield the same flattened shapes; the
  // lowered if is built first with placeholder result types.
  OpBuilder &b = l->b;
  auto newIf = scf::IfOp::create(b, op.getLoc(), TypeRange(),
                                 l->scalar(op.getCondition()),
                                 /*withElseRegion=*/true);
  SmallVector<Value> thenFlat, elseFlat;
  for (auto [region, flat] :
       {std::pair(&op.getThenRegion(), &thenFlat),
        std::pair(&op.getElseRegion(), &elseFlat)}) {
    Block *target = region == &op.getThenRegion() ? newIf.thenBlock()
                                                  : newIf.elseBlock();
    target->getTerminator()->erase();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(target);
    Block &body = region->front();
    for (Operation &inner : body.without_terminator()) {
      for (Value operand : inner.getOperands())
        if (Value mapped = l->scalars.lookup(operand))
          scalarMap.map(operand, mapped);
      if (failed(lowerOp(&inner)))
        return failure();
    }
    for (Value v : body.getTerminator()->getOperands())
      flatten(v, *flat);
    scf::YieldOp::create(b, op.getLoc(), *flat);
    for (auto [result, yielded] :
         llvm::zip(op.getResults(), body.getTerminator()->getOperands()))
      if (isa<RegTileType>(result.getType()))
        copyTile(result, yielded);
  }
  // Rebuild with the real result types and move the branches over.
  b.setInsertionPoint(newIf);
  auto typed = scf::IfOp::create(b, op.getLoc(), ValueRange(thenFlat).getTypes(),
                                 newIf.getCondition(), /*withElseRegion=*/true);
  typed.getThenRegion().takeBody(newIf.getThenRegion());
  typed.getElseRegion().takeBody(newIf.getElseRegion());
  newIf.erase();
  b.setInsertionPointAfter(typed);
  size_t pos = 0;
  for (Value result : op.getResults())
    unflatten(result, typed.getResults(), pos);
  return success();
}

/// Producer warpgroup(s) first, then the consumer warpgroups; each role
/// moves registers with setmaxnreg, the producer continues on one thread,
/// the consumers see warps numbered from 0 so register tiles are laid out
/// over them alone.
LogicalResult KernelLowering::lowerWarpSpecialize(WarpSpecializeOp op) {
  OpBuilder &b = l->b;
  Location loc = op.getLoc();
  Value isProducer = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ult, l->warp,
      l->i32(op.getProducerWarps()));
  auto ifOp = scf::IfOp::create(b, loc, isProducer, /*withElseRegion=*/true);
  LogicalResult status = success();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    NVVM::SetMaxRegisterOp::create(b, loc, op.getProducerRegs(),
                                   NVVM::SetMaxRegisterAction::decrease);
    Value elected = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          l->tid, l->i32(0));
    l->emitIf(elected, [&] {
      l->singleThread = true;
      status = lowerBlock(op.getProducer().front());
      l->singleThread = false;
    });
  }
  if (failed(status))
    return failure();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
  NVVM::SetMaxRegisterOp::create(b, loc, op.getConsumerRegs(),
                                 NVVM::SetMaxRegisterAction::increase);
  Value warp = l->warp;
  l->warp = arith::SubIOp::create(b, loc, warp, l->i32(op.getProducerWarps()));
  // The consumers' warp index broadcast from lane 0 where the op asks
  // (attn-warp-specialize decides): uniform registers for what derives
  // from it.
  if (op.getUniformWarpIndex())
    l->warp = NVVM::ShflOp::create(b, loc, b.getI32Type(), l->i32(-1), l->warp,
                                   l->i32(0), l->i32(0x1f), NVVM::ShflKind::idx,
                                   UnitAttr());
  status = lowerBlock(op.getConsumers().front());
  l->warp = warp;
  return status;
}

/// The size parameter `kind` of the kernel (null if it takes none).
Value sizeParam(const KernelParams &params, SizeKind kind) {
  switch (kind) {
  case SizeKind::batch:
    return params.batch;
  case SizeKind::nq:
    return params.nq;
  case SizeKind::nk:
    return params.nk;
  case SizeKind::num_heads:
    return params.numHeads;
  case SizeKind::num_kv_heads:
    return params.numKvHeads;
  case SizeKind::num_splits:
    return params.numSplits;
  case SizeKind::max_blocks:
    return params.maxBlocks;
  case SizeKind::num_blocks:
    return params.numBlocks;
  case SizeKind::max_seqlen_q:
    return params.maxSeqlenQ;
  }
  return Value();
}

/// memref.dim of a kernel tensor reads the kernel's size parameters; a
/// static dimension (the head dimension, a page size) is its constant.
LogicalResult KernelLowering::lowerDim(memref::DimOp op) {
  std::optional<int64_t> dim = op.getConstantIndex();
  auto tensor = l->tensors.find(op.getSource());
  if (!dim || tensor == l->tensors.end() ||
      tensor->second == Tensor::CuSeqlensQ ||
      tensor->second == Tensor::CuSeqlensK)
    return op.emitOpError("attn-to-nvvm needs a constant dimension of a "
                          "kernel tensor (q, k, v, o or lse)");
  OpBuilder &b = l->b;
  auto type = cast<MemRefType>(op.getSource().getType());
  int64_t rank = type.getRank();
  Value size;
  // A varlen kernel's packed tensors: LSE [H, total_q], data [total, H, D].
  if (tensor->second == Tensor::Lse && rank == 2) {
    size = *dim == 0 ? l->params.numHeads : l->params.nq;
  } else if (tensor->second <= Tensor::O && rank == 3) {
    // A packed [total, H, D] tensor's dimensions are [B, N, H, D]'s without
    // the batch.
    switch (*dim + 1) {
    case 1:
      size = l->tensorRows(tensor->second);
      break;
    case 2:
      size = Lowering::isQueryTensor(tensor->second) ? l->params.numHeads
                                                     : l->params.numKvHeads;
      break;
    default:
      size = l->i32(l->headDim);
    }
  } else if (*dim < rank && !type.isDynamicDim(*dim)) {
    size = l->i32(type.getDimSize(*dim));
  } else if (std::optional<SizeKind> kind =
                 tensorDimSize(tensor->second, *dim, l->pageSize > 0)) {
    size = sizeParam(l->params, *kind);
  }
  if (!size)
    return op.emitOpError() << "reads dimension " << *dim << " of the "
                            << tensorName(tensor->second)
                            << " tensor, which no kernel parameter holds";
  l->scalars[op] = arith::IndexCastOp::create(b, op.getLoc(),
                                              b.getIndexType(), size);
  return success();
}

/// Rows cu[b] .. cu[b+1] - 1 of a packed tensor of `total_rows` rows,
/// clamped into [0, total_rows] (unsigned, so a negative entry clamps too):
/// a wrong cu_seqlens can never send a copy or store outside the tensor.
LogicalResult KernelLowering::lowerSequence(SequenceOp op) {
  OpBuilder &b = l->b;
  Location loc = op.getLoc();
  Value base = l->params.ptr[static_cast<int>(l->tensors.lookup(op.getCuSeqlens()))];
  auto globalPtr = LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
  Value batch = l->toI64(l->toI32(l->scalar(op.getBatch())));
  auto entry = [&](int64_t offset) -> Value {
    Value index = arith::AddIOp::create(b, loc, batch, l->i64(offset));
    Value addr = LLVM::GEPOp::create(b, loc, globalPtr, b.getI32Type(), base,
                                     ValueRange{index});
    // A non-coherent (L1-cached) load, as an asm statement with side
    // effects: a program that reads a sequence again after its key/value
    // loop (attn-tile's epilogue does) gets a load there, which LLVM would
    // otherwise merge with the first one into a register kept live across
    // the loop (sm_90a d64 spilled 8 bytes more that way). cu_seqlens does
    // not change while the kernel runs, and a persistent CTA reads it at
    // every tile (its walk over the sequences): a volatile load went to L2
    // each time.
    auto load = LLVM::InlineAsmOp::create(
        b, loc, b.getI32Type(), ValueRange{addr}, "ld.global.nc.b32 $0, [$1];",
        "=r,l", /*has_side_effects=*/true, /*is_align_stack=*/false,
        LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
    return load.getResult(0);
  };
  Value total = l->toI32(l->scalar(op.getTotalRows()));
  Value start = arith::MinUIOp::create(b, loc, entry(0), total);
  Value end = arith::MinUIOp::create(
      b, loc, arith::MaxUIOp::create(b, loc, entry(1), start), total);
  Value length = arith::SubIOp::create(b, loc, end, start);
  l->seqs[op.getSeq()] = {start, length};
  l->scalars[op.getLength()] =
      arith::IndexCastOp::create(b, loc, b.getIndexType(), length);
  return success();
}

LogicalResult KernelLowering::lowerOp(Operation *op) {
  OpBuilder &b = l->b;
  l->loc = op->getLoc();
  bool handled = false;
  if (failed(lowerFragmentOp(*l, op, handled)))
    return failure();
  if (handled)
    return success();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<scf::ForOp>([&](auto o) { return lowerFor(o); })
      .Case<scf::IfOp>([&](auto o) { return lowerIf(o); })
      .Case<scf::WhileOp>([&](auto o) { return lowerWhile(o); })
      .Case<memref::DimOp>([&](auto o) { return lowerDim(o); })
      .Case<SequenceOp>([&](auto o) { return lowerSequence(o); })
      .Case<ProgramIdOp>([&](ProgramIdOp o) {
        Type i32 = b.getI32Type();
        Value id;
        if (o.getDim() == 0)
          id = NVVM::BlockIdXOp::create(b, o.getLoc(), i32);
        else if (o.getDim() == 1)
          id = NVVM::BlockIdYOp::create(b, o.getLoc(), i32);
        else
          id = NVVM::BlockIdZOp::create(b, o.getLoc(), i32);
        l->scalars[o] =
            arith::IndexCastOp::create(b, o.getLoc(), b.getIndexType(), id);
        return success();
      })
      .Case<NumProgramsOp>([&](NumProgramsOp o) {
        Type i32 = b.getI32Type();
        Value n;
        if (o.getDim() == 0)
          n = NVVM::GridDimXOp::create(b, o.getLoc(), i32);
        else if (o.getDim() == 1)
          n = NVVM::GridDimYOp::create(b, o.getLoc(), i32);
        else
          n = NVVM::GridDimZOp::create(b, o.getLoc(), i32);
        l->scalars[o] =
            arith::IndexCastOp::create(b, o.getLoc(), b.getIndexType(), n);
        return success();
      })
      .Case<ProblemSizeOp>([&](ProblemSizeOp o) -> LogicalResult {
        Value size = sizeParam(l->params, o.getSize());
        if (!size)
          return o.emitOpError() << "reads the size "
                                 << stringifySizeKind(o.getSize())
                                 << ", which the kernel takes no parameter for";
        l->scalars[o] = arith::IndexCastOp::create(b, o.getLoc(),
                                                   b.getIndexType(), size);
        return success();
      })
      .Case<LoadIndexOp>([&](LoadIndexOp o) {
        // The tensor may be absent (a null pointer): then the fallback.
        Value base = l->params.ptr[static_cast<int>(
            l->tensors.lookup(o.getSrc()))];
        Value isNull = arith::CmpIOp::create(
            b, o.getLoc(), arith::CmpIPredicate::eq,
            LLVM::PtrToIntOp::create(b, o.getLoc(), b.getI64Type(), base),
            l->i64(0));
        Value fallback = l->toI32(l->scalar(o.getFallback()));
        auto branch = scf::IfOp::create(b, o.getLoc(), TypeRange{b.getI32Type()},
                                        isNull, /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(branch.thenBlock());
          scf::YieldOp::create(b, o.getLoc(), fallback);
          b.setInsertionPointToStart(branch.elseBlock());
          auto ptrType = LLVM::LLVMPointerType::get(b.getContext(),
                                                    kGlobalAddressSpace);
          Value addr = LLVM::GEPOp::create(
              b, o.getLoc(), ptrType, b.getI32Type(), base,
              ValueRange{l->toI64(l->toI32(l->scalar(o.getIndex())))});
          auto load = LLVM::LoadOp::create(b, o.getLoc(), b.getI32Type(), addr,
                                           /*alignment=*/4);
          load.setInvariant(true);
          scf::YieldOp::create(b, o.getLoc(), load.getResult());
        }
        l->scalars[o] = arith::IndexCastOp::create(
            b, o.getLoc(), b.getIndexType(), branch.getResult(0));
        return success();
      })
      .Case<WarpSpecializeOp>([&](auto o) { return lowerWarpSpecialize(o); })
      .Case<WarpgroupIdOp>([&](WarpgroupIdOp o) {
        l->scalars[o] = arith::IndexCastOp::create(
            b, o.getLoc(), b.getIndexType(), l->warpgroupIndex());
        return success();
      })
      .Case<NamedBarrierSyncOp>([&](NamedBarrierSyncOp o) {
        NVVM::BarrierOp::create(b, o.getLoc(), TypeRange{},
                                l->toI32(l->scalar(o.getId())),
                                l->i32(o.getThreads()), {}, Value());
        return success();
      })
      .Case<NamedBarrierArriveOp>([&](NamedBarrierArriveOp o) {
        NVVM::BarrierArriveOp::create(b, o.getLoc(),
                                      l->toI32(l->scalar(o.getId())),
                                      l->i32(o.getThreads()));
        return success();
      })
      .Case<BarrierOp>([&](BarrierOp o) {
        NVVM::Barrier0Op::create(b, o.getLoc());
        return success();
      })
      .Case<AllocSmemOp, CreatePipeOp>(
          [&](auto) { return success(); }) // placed up front
      .Case<PipeAcquireOp>(
          [&](auto o) { return targetLowering->lowerPipeAcquire(*l, o); })
      .Case<PipeLoadOp>(
          [&](auto o) { return targetLowering->lowerPipeLoad(*l, o); })
      .Case<PipeWaitOp>(
          [&](auto o) { return targetLowering->lowerPipeWait(*l, o); })
      .Case<PipeReleaseOp>(
          [&](auto o) { return targetLowering->lowerPipeRelease(*l, o); })
      .Case<MmaWaitOp>(
          [&](auto o) { return targetLowering->lowerMmaWait(*l, o); })
      .Case<CopyAsyncOp>(
          [&](auto o) { return targetLowering->lowerCopy(*l, o); })
      .Case<WaitOp>([&](auto o) { return targetLowering->lowerWait(*l, o); })
      .Case<TmaStoreOp>([&](auto o) { return lowerTmaStore(*l, o); })
      .Case<TmaStoreWaitOp>([&](auto o) { return lowerTmaStoreWait(*l, o); })
      .Case<ZeroRowsOp>([&](auto o) -> LogicalResult {
        if (target != TargetKind::sm_90a)
          return o.emitOpError("is sm_90a's (warp-specialized consumers)");
        return lowerZeroRows(*l, o);
      })
      .Case<MmaOp>([&](auto o) { return targetLowering->lowerMma(*l, o); })
      .Case<func::ReturnOp>([&](auto o) {
        LLVM::ReturnOp::create(b, o.getLoc(), ValueRange());
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        if (other->getDialect() &&
            isa<arith::ArithDialect>(other->getDialect())) {
          Operation *clone = b.clone(*other, scalarMap);
          for (auto [from, to] :
               llvm::zip(other->getResults(), clone->getResults()))
            l->scalars[from] = to;
          return success();
        }
        return other->emitOpError("is not supported by attn-to-nvvm");
      });
}

LogicalResult KernelLowering::lowerBlock(Block &block) {
  for (Operation &op : block) {
    if (isa<scf::YieldOp>(op)) {
      // A loop's yield: flatten; an if's yield is rebuilt by emitIf.
      if (!isa<scf::ForOp>(op.getParentOp()))
        continue;
      SmallVector<Value> flat;
      for (Value v : op.getOperands())
        flatten(v, flat);
      scf::YieldOp::create(l->b, op.getLoc(), flat);
      continue;
    }
    // Keep the clone mapping in sync with lowered scalars.
    for (Value operand : op.getOperands())
      if (Value mapped = l->scalars.lookup(operand))
        scalarMap.map(operand, mapped);
    if (failed(lowerOp(&op)))
      return failure();
  }
  return success();
}

/// The buffers and pipes where attn-allocate-smem placed them (their
/// offsets are attributes of the ops; the kernel's size is attn.smem_bytes).
LogicalResult KernelLowering::placeBuffers() {
  SmallVector<Value> order;
  auto placed = [&](Operation *op) {
    return op->emitOpError("has no shared-memory offsets: run "
                           "attn-allocate-smem before attn-to-nvvm");
  };
  for (auto &[buffer, allocation] : smemAllocationsOf(func)) {
    order.push_back(buffer);
    Operation *op = buffer.getDefiningOp();
    if (auto pipeOp = dyn_cast<CreatePipeOp>(op)) {
      if (!pipeOp.getOffset() || !pipeOp.getFullBarriers() ||
          !pipeOp.getEmptyBarriers())
        return placed(op);
      SmemPipe pipe;
      pipe.type = pipeOp.getType();
      pipe.offset = *pipeOp.getOffset();
      pipe.stageBytes = llvm::alignTo(allocation.tileBytes, kSmemTileAlignment);
      pipe.fullBarrierOffset = *pipeOp.getFullBarriers();
      pipe.emptyBarrierOffset = *pipeOp.getEmptyBarriers();
      pipe.perThreadRelease = pipeOp.getPerThreadRelease();
      l->pipes[buffer] = pipe;
      continue;
    }
    auto alloc = cast<AllocSmemOp>(op);
    if (!alloc.getOffset() || !alloc.getBarrier())
      return placed(op);
    SmemBuffer entry;
    entry.type = alloc.getType();
    entry.offset = *alloc.getOffset();
    entry.barrierOffset = *alloc.getBarrier();
    l->buffers[buffer] = entry;
  }
  auto bytes = func->getAttrOfType<IntegerAttr>("attn.smem_bytes");
  if (!order.empty() && !bytes)
    return func.emitOpError("has no 'attn.smem_bytes': run "
                            "attn-allocate-smem before attn-to-nvvm");
  l->bufferOrder = order;
  l->smemBytes = bytes ? bytes.getInt() : kSmemTileAlignment;
  return success();
}

LogicalResult KernelLowering::run() {
  MLIRContext *ctx = func.getContext();
  auto tiling = func->getAttrOfType<TilingAttr>(kTilingAttrName);
  if (!tiling)
    return func.emitOpError("kernel has no 'attn.tiling' attribute; run "
                            "attn-tile first");
  auto grid = func->getAttrOfType<GridAttr>(kGridAttrName);
  if (!grid)
    return func.emitOpError("kernel has no 'attn.grid' attribute (its launch "
                            "grid rule); run attn-tile first");
  FailureOr<KernelAbi> abi = deriveKernelAbi(func, target);
  if (failed(abi))
    return failure();
  if (failed(checkLowerable(func, tiling, abi->tensors)))
    return failure();
  // Every kernel writes O, whose head dimension and element type are Q's.
  auto qType = cast<MemRefType>(
      func.getArgument(llvm::find(abi->tensors, Tensor::O) -
                       abi->tensors.begin())
          .getType());
  ModuleOp module = func->getParentOfType<ModuleOp>();
  OpBuilder moduleBuilder(module.getBodyRegion());
  moduleBuilder.setInsertionPointToStart(module.getBody());

  // The dynamic shared memory: `extern .shared .align 1024 .b8 [];`.
  if (!module.lookupSymbol(kSmemSymbol)) {
    auto arrayType = LLVM::LLVMArrayType::get(moduleBuilder.getI8Type(), 0);
    LLVM::GlobalOp::create(moduleBuilder, func.getLoc(), arrayType,
                           /*isConstant=*/false, LLVM::Linkage::External,
                           kSmemSymbol, Attribute(),
                           /*alignment=*/kSmemTileAlignment, kSharedAddressSpace);
  }

  // Kernel signature: the derived ABI (docs/ABI.md).
  auto genericPtr = LLVM::LLVMPointerType::get(ctx);
  auto globalPtr = LLVM::LLVMPointerType::get(ctx, kGlobalAddressSpace);
  Type i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
  SmallVector<Type> paramTypes;
  bool usesTma = false;
  for (const AbiParam &param : abi->params) {
    switch (param.kind) {
    case AbiParamKind::TensorMap:
      paramTypes.push_back(genericPtr);
      usesTma = true;
      break;
    case AbiParamKind::Pointer:
      paramTypes.push_back(globalPtr);
      break;
    case AbiParamKind::Stride:
      paramTypes.push_back(i64);
      break;
    case AbiParamKind::Size:
      paramTypes.push_back(i32);
      break;
    }
  }
  auto fnType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                            paramTypes);
  OpBuilder b(func);
  auto kernel = LLVM::LLVMFuncOp::create(b, func.getLoc(), func.getName(),
                                         fnType);
  // A warp-specialized kernel adds its producer warps to the consumer warps
  // the tiling counts; setmaxnreg needs maxntid and minctasm = 1 (the
  // tiling's min_ctas_per_sm, which attn-configure chooses).
  int64_t producerWarps = 0;
  func.walk([&](WarpSpecializeOp ws) { producerWarps = ws.getProducerWarps(); });
  int64_t threads = 32 * (tiling.getNumWarps() + producerWarps);
  kernel->setAttr("nvvm.kernel", UnitAttr::get(ctx));
  // Single-precision denormals flush to zero: exp2 of a score far below the
  // row max is then one MUFU.EX2 instead of a range check and two predicated
  // multiplies around it (ptxas's non-ftz ex2.approx), and the adds and
  // multiplies of the softmax drop their denormal handling; a denormal
  // probability or rescale factor is below what the f32 row sum resolves.
  if (flushDenormals)
    kernel.setDenormalFpMathF32Attr(
        b.getStringAttr("preserve-sign,preserve-sign"));
  kernel->setAttr("nvvm.maxntid",
                  DenseI32ArrayAttr::get(ctx, {int32_t(threads), 1, 1}));
  kernel->setAttr("nvvm.minctasm",
                  b.getI32IntegerAttr(tiling.getMinCtasPerSm()));
  for (auto [i, param] : llvm::enumerate(abi->params)) {
    if (param.kind == AbiParamKind::TensorMap) {
      kernel.setArgAttr(i, "llvm.byval",
                        TypeAttr::get(LLVM::LLVMArrayType::get(
                            IntegerType::get(ctx, 8), kTensorMapBytes)));
      kernel.setArgAttr(i, "llvm.align", b.getI64IntegerAttr(kTensorMapAlign));
      kernel.setArgAttr(i, "nvvm.grid_constant", UnitAttr::get(ctx));
    }
    if (param.kind == AbiParamKind::Pointer)
      kernel.setArgAttr(i, "llvm.noalias", UnitAttr::get(ctx));
  }

  Block *entry = kernel.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  l = std::make_unique<Lowering>(b, func.getLoc(), target, tiling,
                                 qType.getDimSize(qType.getRank() - 1),
                                 qType.getElementType());
  l->producerWarps = producerWarps;
  // Parameters, by kind and tensor role.
  for (auto [param, value] : llvm::zip(abi->params, entry->getArguments())) {
    int t = static_cast<int>(param.tensor);
    switch (param.kind) {
    case AbiParamKind::TensorMap:
      l->params.tma[t] = value;
      break;
    case AbiParamKind::Pointer:
      l->params.ptr[t] = value;
      break;
    case AbiParamKind::Stride:
      l->params.stride[t][param.dim] = value;
      break;
    case AbiParamKind::Size:
      switch (param.size) {
      case SizeKind::batch:
        l->params.batch = value;
        break;
      case SizeKind::nq:
        l->params.nq = value;
        break;
      case SizeKind::nk:
        l->params.nk = value;
        break;
      case SizeKind::num_heads:
        l->params.numHeads = value;
        break;
      case SizeKind::num_kv_heads:
        l->params.numKvHeads = value;
        break;
      case SizeKind::max_seqlen_q:
        l->params.maxSeqlenQ = value;
        break;
      case SizeKind::num_splits:
        l->params.numSplits = value;
        break;
      case SizeKind::max_blocks:
        l->params.maxBlocks = value;
        break;
      case SizeKind::num_blocks:
        l->params.numBlocks = value;
        break;
      }
      break;
    }
  }
  for (auto [arg, role] : llvm::zip(func.getArguments(), abi->tensors)) {
    l->tensors[arg] = role;
    l->tensorElement[static_cast<int>(role)] =
        cast<MemRefType>(arg.getType()).getElementType();
  }
  if (std::optional<AttentionProblem> problem = getProblem(func))
    l->pageSize = problem->pageSize;

  // Thread coordinates and the 1024-byte aligned shared-memory base.
  l->tid = NVVM::ThreadIdXOp::create(b, func.getLoc(), i32);
  l->warp = arith::ShRUIOp::create(b, func.getLoc(), l->tid, l->i32(5));
  l->lane = arith::AndIOp::create(b, func.getLoc(), l->tid, l->i32(31));
  auto sharedPtr = LLVM::LLVMPointerType::get(ctx, kSharedAddressSpace);
  Value raw = LLVM::AddressOfOp::create(b, func.getLoc(), sharedPtr,
                                        kSmemSymbol);
  Value rawAddr = LLVM::PtrToIntOp::create(b, func.getLoc(), i32, raw);
  Value pad = arith::AndIOp::create(
      b, func.getLoc(), arith::SubIOp::create(b, func.getLoc(), l->i32(0), rawAddr),
      l->i32(kSmemTileAlignment - 1));
  l->smemBase = LLVM::GEPOp::create(b, func.getLoc(), sharedPtr, b.getI8Type(),
                                    raw, ValueRange{pad});

  if (failed(placeBuffers()))
    return failure();
  if (failed(targetLowering->lowerPrologue(*l)))
    return failure();
  if (failed(lowerBlock(func.getBody().front())))
    return failure();

  if (l->smemBytes > maxSharedMemoryBytes(target))
    return func.emitOpError() << "needs " << l->smemBytes
                              << " bytes of shared memory, more than the "
                              << maxSharedMemoryBytes(target)
                              << " a CTA may use";

  // Launch metadata for the runtime: the problem and tiling it was built
  // for, and what the lowering derived (threads, shared memory, TMA).
  for (StringRef name : {kProblemAttrName, kTilingAttrName, kScheduleAttrName})
    if (Attribute attr = func->getAttr(name))
      kernel->setAttr(name, attr);
  kernel->setAttr("attn.num_threads", b.getI64IntegerAttr(threads));
  kernel->setAttr("attn.smem_bytes", b.getI64IntegerAttr(l->smemBytes));
  kernel->setAttr("attn.uses_tma", b.getBoolAttr(usesTma));
  kernel->setAttr(kGridAttrName, grid);
  kernel->setAttr("attn.params", abiParamsAttr(ctx, *abi));
  // The metadata's exp2_emulated_eighths: the most any score exp2 asked for.
  int64_t emulatedEighths = 0;
  func.walk([&](Exp2DiffOp op) {
    emulatedEighths =
        std::max<int64_t>(emulatedEighths, op.getEmulatedEighths().value_or(0));
  });
  if (emulatedEighths > 0)
    kernel->setAttr("attn.exp2_emulated_eighths",
                    b.getI64IntegerAttr(emulatedEighths));
  func.erase();
  return success();
}

struct AttnToNVVMPass
    : public mlir::attn::impl::AttnToNVVMBase<AttnToNVVMPass> {
  using AttnToNVVMBase::AttnToNVVMBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<TargetKind> target = getTarget(module);
    SmallVector<func::FuncOp> kernels;
    module.walk([&](func::FuncOp func) {
      if (func->hasAttr(kKernelAttrName))
        kernels.push_back(func);
    });
    if (!kernels.empty() && !target) {
      module.emitError("attn-to-nvvm needs the module attribute "
                       "'attn.target'");
      return signalPassFailure();
    }
    for (func::FuncOp func : kernels) {
      auto lowering = *target == TargetKind::sm_90a ? createSm90Lowering()
                                                    : createSm80Lowering();
      // The kernel's schedule says its denormal mode; the option, when
      // given, overrides it.
      bool flush = flushDenormals.hasValue()
                       ? bool(flushDenormals)
                       : scheduleApplies(func, &AttentionSchedule::flushDenormals);
      if (failed(KernelLowering(func, *target, std::move(lowering), flush)
                     .run()))
        return signalPassFailure();
    }
  }
};

} // namespace
