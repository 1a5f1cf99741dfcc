//===- AttnToNVVM.cpp - attn-to-nvvm: tile program -> LLVM + NVVM ---------===//
//
// Builds the kernel's llvm.func with the ABI of docs/ABI.md, places the
// shared-memory buffers, then walks the tile program in order: scalar (index)
// ops are cloned, structured control flow is rebuilt with register tiles
// flattened into per-thread scalars, and every attn op goes to its entry in
// the target's LoweringTable (LoweringTable.h).
//
//===----------------------------------------------------------------------===//
#include "LoweringTable.h"
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

class KernelLowering {
public:
  KernelLowering(func::FuncOp func, TargetKind target, bool flushDenormals)
      : func(func), target(target), table(buildLoweringTable(target)),
        flushDenormals(flushDenormals) {}

  LogicalResult run();

private:
  LogicalResult lowerBlock(Block &block);
  LogicalResult lowerOp(Operation *op);
  LogicalResult lowerFor(scf::ForOp op);
  LogicalResult lowerIf(scf::IfOp op);
  LogicalResult lowerWhile(scf::WhileOp op);
  LogicalResult lowerDim(memref::DimOp op);
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
  LoweringTable table;
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
  bool rows = tensor->second == Tensor::Lse || tensor->second == Tensor::Delta;
  bool data = tensor->second <= Tensor::O ||
              (tensor->second >= Tensor::Dout && tensor->second <= Tensor::Dv &&
               tensor->second != Tensor::Delta);
  if (rows && rank == 2) {
    size = *dim == 0 ? l->params.numHeads : l->params.nq;
  } else if (data && rank == 3) {
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
      // The tensor's own head dim (V and O may have one of their own).
      size = l->i32(type.getDimSize(rank - 1));
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

LogicalResult KernelLowering::lowerOp(Operation *op) {
  OpBuilder &b = l->b;
  l->loc = op->getLoc();
  if (const OpLowering *entry = table.lookup(op))
    return entry->lower(*l, op);
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<scf::ForOp>([&](auto o) { return lowerFor(o); })
      .Case<scf::IfOp>([&](auto o) { return lowerIf(o); })
      .Case<scf::WhileOp>([&](auto o) { return lowerWhile(o); })
      .Case<memref::DimOp>([&](auto o) { return lowerDim(o); })
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
      pipe.fillArrivals = pipeOp.getFillArrivals().value_or(0);
      pipe.releaseArrivals = pipeOp.getReleaseArrivals().value_or(0);
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
  if (failed(checkLowerable(func, KernelFacts(func, tiling, abi->tensors),
                            table)))
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
  // the tiling counts; setmaxnreg needs maxntid and minctasm (the tiling's
  // min_ctas_per_sm, which attn-configure chooses: 1, or 2 for FP8
  // decoding up to d128, whose CTAs then start with half the registers).
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
                                 qType.getElementType());
  l->producerWarps = producerWarps;
  l->lowerBlock = [this](Block &block) { return lowerBlock(block); };
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
      case SizeKind::max_seqlen_k:
        l->params.maxSeqlenK = value;
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
  if (failed(table.prologue(*l)))
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
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
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
      // The kernel's schedule says its denormal mode; the option, when
      // given, overrides it.
      bool flush = flushDenormals.hasValue()
                       ? bool(flushDenormals)
                       : scheduleApplies(func, &AttentionSchedule::flushDenormals);
      if (failed(KernelLowering(func, *target, flush)
                     .run()))
        return signalPassFailure();
    }
  }
};

} // namespace
