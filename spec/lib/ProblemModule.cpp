//===- ProblemModule.cpp - a spec's problem module, configured and named --===//
#include "KvCacheSpec.h"
#include "attn/Spec/Spec.h"
#include "attn/Dialect/ProblemAttributes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::attn;

/// The problem module of a backward kernel: q, k, v, o, dout, lse, delta,
/// dq, dk, dv (both kernels take them all; each reads and writes its own),
/// and a packed batch's cu_seqlens_q, cu_seqlens_k.
static OwningOpRef<ModuleOp> buildBackwardSpecModule(MLIRContext &ctx,
                                                     const AttentionSpec &spec,
                                                     StringRef name) {
  Type element = elementTypeOf(ctx, spec);
  int64_t dyn = ShapedType::kDynamic;
  // q, k, dq and dk have the head dim; v, o, dout and dv the value head dim.
  auto tensorType = MemRefType::get({dyn, dyn, dyn, spec.headDim}, element);
  auto valueType =
      MemRefType::get({dyn, dyn, dyn, spec.valueHeadDim()}, element);
  auto rowsType = MemRefType::get({dyn, dyn, dyn}, Float32Type::get(&ctx));
  if (spec.varlen) {
    tensorType = MemRefType::get({dyn, dyn, spec.headDim}, element);
    valueType = MemRefType::get({dyn, dyn, spec.valueHeadDim()}, element);
    rowsType = MemRefType::get({dyn, dyn}, Float32Type::get(&ctx));
  }
  SmallVector<Type> args = {tensorType, tensorType, valueType, valueType,
                            valueType};
  args.append({rowsType, rowsType, tensorType, tensorType, valueType});
  if (spec.varlen)
    args.append(2, MemRefType::get({dyn}, IntegerType::get(&ctx, 32)));
  if (spec.alibi)
    args.push_back(MemRefType::get({dyn, dyn}, Float32Type::get(&ctx)));
  // The one-kernel backward's f32 dQ accumulator, shaped as dq, last.
  bool accumulatesDq = spec.backward == BackwardPart::pre ||
                       spec.backward == BackwardPart::fused ||
                       spec.backward == BackwardPart::post;
  if (accumulatesDq)
    args.push_back(MemRefType::get(tensorType.getShape(),
                                   Float32Type::get(&ctx)));
  return buildProblemModule(
      ctx, spec, name, args, [&](OpBuilder &b, Location loc, Block &body) {
        SmallVector<Value> operands(body.getArguments().take_front(10));
        if (spec.varlen)
          operands.append({body.getArgument(10), body.getArgument(11)});
        else
          operands.append({Value(), Value()}); // no cu_seqlens
        unsigned next = spec.varlen ? 12 : 10;
        operands.push_back(spec.alibi ? body.getArgument(next++) : Value());
        operands.push_back(accumulatesDq ? body.getArgument(next) : Value());
        createProblemOp<AttentionBackwardOp>(b, loc, operands, spec);
      });
}

/// The problem module of a canonical spec, its function named `name`.
static OwningOpRef<ModuleOp> buildProblemOpModule(MLIRContext &ctx,
                                                  const AttentionSpec &spec,
                                                  StringRef name) {
  if (spec.kvCache)
    return buildKvCacheSpecModule(ctx, spec, name);
  if (spec.backward != BackwardPart::none)
    return buildBackwardSpecModule(ctx, spec, name);
  Type element = elementTypeOf(ctx, spec);
  Type f32 = Float32Type::get(&ctx);
  int64_t dyn = ShapedType::kDynamic;
  // Q and K have the head dim, V and O the value head dim.
  auto tensorType = MemRefType::get({dyn, dyn, dyn, spec.headDim}, element);
  auto valueType =
      MemRefType::get({dyn, dyn, dyn, spec.valueHeadDim()}, element);
  auto lseType = MemRefType::get({dyn, dyn, dyn}, f32);
  // A packed (varlen) batch: [total, H, D] tensors, LSE [H, total_q], and
  // where each sequence starts (int32 [B + 1]) for queries and keys.
  if (spec.varlen) {
    tensorType = MemRefType::get({dyn, dyn, spec.headDim}, element);
    valueType = MemRefType::get({dyn, dyn, spec.valueHeadDim()}, element);
    lseType = MemRefType::get({dyn, dyn}, f32);
  }
  // FP8: V K-major (its keys contiguous: the FP8 MMA reads it so) unless
  // it is row-major (transposed in the kernel), O bf16, and the three f32
  // descales ([B, Hkv], or per 128-row block) after everything else.
  bool fp8 = spec.dtype == DType::e4m3;
  Type outType = valueType;
  if (fp8)
    outType = MemRefType::get(valueType.getShape(), BFloat16Type::get(&ctx));
  if (fp8 && !spec.vRowMajor) {
    valueType = MemRefType::get(
        valueType.getShape(), element,
        StridedLayoutAttr::get(&ctx, /*offset=*/0, {dyn, 1, dyn, dyn}));
  }
  // A varlen batch over a paged K/V: K and V [num_blocks, page_size, Hkv,
  // D] and the block table [B, max_blocks] after cu_seqlens.
  const bool paged = spec.varlen && spec.pageSize > 0;
  Type keyType = tensorType;
  if (paged) {
    keyType = MemRefType::get({dyn, spec.pageSize, dyn, spec.headDim}, element);
    valueType = MemRefType::get({dyn, spec.pageSize, dyn, spec.valueHeadDim()},
                                element);
  }
  SmallVector<Type> args = {tensorType, keyType, valueType, outType};
  if (spec.withLse)
    args.push_back(lseType);
  if (spec.varlen)
    args.append(2, MemRefType::get({dyn}, IntegerType::get(&ctx, 32)));
  if (paged)
    args.push_back(MemRefType::get({dyn, dyn}, IntegerType::get(&ctx, 32)));
  // ALiBi's slopes, f32 [B, H] (the batch stride may be 0), last.
  if (spec.alibi)
    args.push_back(MemRefType::get({dyn, dyn}, f32));
  // Block quantization: q's, k's and v's descales per 128-row block, the
  // block contiguous.
  if (fp8 && spec.blockScales) {
    auto blocks = MemRefType::get(
        {dyn, dyn, dyn}, f32,
        StridedLayoutAttr::get(&ctx, /*offset=*/0, {dyn, dyn, 1}));
    args.append(3, blocks);
  } else if (fp8) {
    args.append(3, MemRefType::get({dyn, dyn}, f32));
  }
  return buildProblemModule(
      ctx, spec, name, args,
      [&](OpBuilder &b, Location loc, Block &body) {
        unsigned cuSeqlens = spec.withLse ? 5 : 4;
        // The optional trailing arguments: ALiBi's slopes, then FP8's
        // descales.
        unsigned descales = body.getNumArguments() - (fp8 ? 3 : 0);
        unsigned alibi = descales - 1;
        createProblemOp<AttentionOp>(
            b, loc,
            {body.getArgument(0), body.getArgument(1), body.getArgument(2),
             body.getArgument(3),
             spec.withLse ? body.getArgument(4) : Value(),
             spec.varlen ? body.getArgument(cuSeqlens) : Value(),
             spec.varlen ? body.getArgument(cuSeqlens + 1) : Value(),
             paged ? body.getArgument(cuSeqlens + 2) : Value(),
             spec.alibi ? body.getArgument(alibi) : Value(),
             fp8 ? body.getArgument(descales) : Value(),
             fp8 ? body.getArgument(descales + 1) : Value(),
             fp8 ? body.getArgument(descales + 2) : Value()},
            spec);
      });
}

void mlir::attn::setProblemAttributes(Operation *op,
                                      const AttentionSpec &spec) {
  AttentionProblem held = spec;
  held.scale = softmaxScaleOf(spec);
  writeProblemAttributes(op, held);
}

Type mlir::attn::elementTypeOf(MLIRContext &ctx, const AttentionSpec &spec) {
  if (spec.dtype == DType::e4m3)
    return Float8E4M3FNType::get(&ctx);
  return spec.dtype == DType::bf16 ? Type(BFloat16Type::get(&ctx))
                   : Type(Float16Type::get(&ctx));
}

OwningOpRef<ModuleOp> mlir::attn::buildProblemModule(
    MLIRContext &ctx, const AttentionSpec &spec, StringRef name,
    ArrayRef<Type> args,
    function_ref<void(OpBuilder &, Location, Block &)> build) {
  ctx.loadDialect<AttnDialect, func::FuncDialect, memref::MemRefDialect>();
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  (*module)->setAttr(kTargetAttrName, TargetAttr::get(&ctx, spec.target));
  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(b, loc, name, b.getFunctionType(args, {}));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);
  build(b, loc, *body);
  func::ReturnOp::create(b, loc);
  return module;
}

OwningOpRef<ModuleOp> mlir::attn::buildKernelModule(MLIRContext &ctx,
                                                    const AttentionSpec &asked) {
  AttentionSpec spec = canonicalSpec(asked);
  OwningOpRef<ModuleOp> module = buildProblemOpModule(ctx, spec, "kernel");
  configureKernel(&module->getBody()->front(), spec, /*name=*/true);
  return module;
}

void mlir::attn::configureKernel(Operation *func, const AttentionSpec &spec,
                                 bool name) {
  MLIRContext *ctx = func->getContext();
  if (!func->hasAttr(kTilingAttrName)) {
    KernelConfig config = configure(spec);
    const TileConfig &t = config.tiling;
    func->setAttr(kTilingAttrName,
                  TilingAttr::get(ctx, t.blockM, t.blockN, t.numWarps,
                                  t.stages, t.peelMaskedBlocks,
                                  t.minCtasPerSm));
    func->setAttr(kScheduleAttrName, ScheduleAttr::get(ctx, config.schedule));
  }
  if (!name)
    return;
  auto tiling = func->getAttrOfType<TilingAttr>(kTilingAttrName);
  auto schedule = func->getAttrOfType<ScheduleAttr>(kScheduleAttrName);
  KernelConfig config{TileConfig{tiling.getBlockM(), tiling.getBlockN(),
                                 tiling.getNumWarps(), tiling.getStages(),
                                 tiling.getPeelMaskedBlocks(),
                                 tiling.getMinCtasPerSm()},
                      schedule ? schedule.getValue() : AttentionSchedule()};
  std::optional<AttentionProblem> problem = problemOfKernel(func);
  assert(problem && "a problem module's function holds its problem op");
  cast<func::FuncOp>(func).setSymName(
      kernelName(spec.target, *problem, config));
}
