//===- Pipeline.cpp - spec checks, defaults, name, module, pipeline -------===//
#include "KvCacheSpec.h"
#include "attn/Spec/Spec.h"
#include "attn/Passes/Passes.h"
#include "attn/Passes/TileConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/Passes.h"

#include <fmt/format.h>


using namespace mlir;
using namespace mlir::attn;

/// K/V pipe depth of the warp-specialized kernels (FlashAttention-3's).
static constexpr int64_t kDefaultStages = 2;

/// usesPersistentGrid's choice when a valid spec does not ask (in one, the
/// decoding fields imply kvCache): where the GPU measured it faster than one
/// CTA per tile (docs/PERF.md, "persistent grid"): unmasked d64 and d128,
/// and causal masks without a window up to d128 and at d256, whose CTAs
/// take the tiles in units of equal length (attn-persistent). Causal d160
/// and d192 spill in the persistent loop; windows and the other unmasked
/// head dims gain nothing.
bool mlir::attn::persistentByDefault(const AttentionSpec &spec) {
  // Varlen CTAs take the live tiles, numbered sequence by sequence
  // (attn-persistent's VarlenTiles), wherever the dense kernel of the same
  // mask is persistent.
  if (!usesFa3Schedule(spec) || spec.kvCache)
    return false;
  if (!hasDiagonal(spec))
    return spec.headDim == 64 || spec.headDim == 128;
  return spec.causal && spec.windowLeft < 0 &&
         (spec.headDim <= 128 || spec.headDim == 256);
}

bool mlir::attn::overridesTiles(const AttentionSpec &spec) {
  if (!spec.blockM && !spec.blockN && !spec.numWarps)
    return false;
  AttentionSpec tuned = spec;
  tuned.blockM = tuned.blockN = tuned.numWarps = 0;
  TileConfig asked = tileConfigOf(spec), byDefault = tileConfigOf(tuned);
  return asked.blockM != byDefault.blockM || asked.blockN != byDefault.blockN ||
         asked.numWarps != byDefault.numWarps;
}

bool mlir::attn::usesPersistentGrid(const AttentionSpec &spec) {
  return spec.persistent.value_or(persistentByDefault(spec));
}

/// usesTmaStore's choice when a spec does not ask: wherever attn-tma-store
/// applies, i.e. every dense warp-specialized sm_90a kernel whose output
/// tile fits beside Q and the K/V pipes (up to d176); docs/PERF.md, "the
/// epilogue through the TMA", has what it gains.
bool mlir::attn::tmaStoreByDefault(const AttentionSpec &spec) {
  // A packed (varlen) kernel stores its sequences' full tiles with it, the
  // partial last tile of each from registers (attn-tma-store).
  if (!usesFa3Schedule(spec) || spec.kvCache)
    return false;
  return !llvm::errorToBool(
      checkTmaStoreFits(tileConfigOf(spec), spec.headDim));
}

bool mlir::attn::usesTmaStore(const AttentionSpec &spec) {
  // A decoding kernel's few query rows per tile gain nothing from it.
  return !spec.kvCache && spec.tmaStore.value_or(tmaStoreByDefault(spec));
}

AttentionSpec mlir::attn::canonicalSpec(const AttentionSpec &spec) {
  AttentionSpec canonical = spec;
  // window_size = (L, 0) is a causal window: FlashAttention's own spelling.
  if (!canonical.causal && canonical.windowRight == 0)
    canonical.causal = true;
  if (canonical.causal)
    canonical.windowRight = -1;
  if (!hasDiagonal(canonical))
    canonical.causalAlign = CausalAlign::top_left;
  return canonical;
}


OwningOpRef<ModuleOp> mlir::attn::buildSpecModule(MLIRContext &ctx,
                                                  const AttentionSpec &asked) {
  AttentionSpec spec = canonicalSpec(asked);
  if (spec.kvCache)
    return buildKvCacheSpecModule(ctx, spec, kernelName(spec));
  Type element = elementTypeOf(ctx, spec);
  Type f32 = Float32Type::get(&ctx);
  int64_t dyn = ShapedType::kDynamic;
  auto tensorType = MemRefType::get({dyn, dyn, dyn, spec.headDim}, element);
  auto lseType = MemRefType::get({dyn, dyn, dyn}, f32);
  // A packed (varlen) batch: [total, H, D] tensors, LSE [H, total_q], and
  // where each sequence starts (int32 [B + 1]) for queries and keys.
  if (spec.varlen) {
    tensorType = MemRefType::get({dyn, dyn, spec.headDim}, element);
    lseType = MemRefType::get({dyn, dyn}, f32);
  }
  SmallVector<Type> args(4, tensorType);
  if (spec.withLse)
    args.push_back(lseType);
  if (spec.varlen)
    args.append(2, MemRefType::get({dyn}, IntegerType::get(&ctx, 32)));
  return buildProblemModule(
      ctx, spec, kernelName(spec), args,
      [&](OpBuilder &b, Location loc, Block &body) {
        auto windowSide = [&](int64_t side) {
          return side >= 0 ? b.getI64IntegerAttr(side) : IntegerAttr();
        };
        unsigned cuSeqlens = spec.withLse ? 5 : 4;
        AttentionOp::create(
            b, loc, body.getArgument(0), body.getArgument(1),
            body.getArgument(2), body.getArgument(3),
            spec.withLse ? body.getArgument(4) : Value(),
            spec.varlen ? body.getArgument(cuSeqlens) : Value(),
            spec.varlen ? body.getArgument(cuSeqlens + 1) : Value(),
            spec.causal ? b.getUnitAttr() : UnitAttr(),
            spec.causalAlign == CausalAlign::bottom_right
                ? CausalAlignAttr::get(&ctx, CausalAlign::bottom_right)
                : CausalAlignAttr(),
            b.getF32FloatAttr(softmaxScaleOf(spec)),
            spec.softcap > 0 ? b.getF32FloatAttr(spec.softcap) : FloatAttr(),
            windowSide(spec.windowLeft), windowSide(spec.windowRight));
      });
}

Type mlir::attn::elementTypeOf(MLIRContext &ctx, const AttentionSpec &spec) {
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

void mlir::attn::buildTilePipeline(OpPassManager &pm,
                                   const AttentionSpec &spec) {
  if (spec.kvCache)
    return buildKvCacheTilePipeline(pm, spec);
  bool fa3 = usesFa3Schedule(spec);
  bool sm80 = spec.target == TargetKind::sm_80;
  // sm_80: cp.async rings of this many stages (1: attn-tile's single
  // buffers, no attn-multibuffer).
  int64_t sm80Stages = sm80 ? tileConfigOf(spec).stages : 0;
  AttnTileOptions tile;
  tile.blockM = spec.blockM;
  tile.blockN = spec.blockN;
  tile.numWarps = spec.numWarps;
  tile.warpSpecialize = fa3;
  tile.stages = fa3 ? spec.stages : sm80Stages > 1 ? sm80Stages : 0;
  pm.addPass(createAttnTile(tile));
  if (spec.skipMaskedBlocks) {
    // A rotated (intra-warpgroup overlapped) loop should not drain between
    // the unmasked and the masked blocks: the tile configuration says
    // whether to keep them in one loop.
    AttentionSpec canonical = canonicalSpec(spec);
    bool window = canonical.windowLeft >= 0 || canonical.windowRight > 0;
    TileConfig config = tileConfigOf(spec, window);
    AttnCausalBlocksOptions blocks;
    blocks.peel = config.peelMaskedBlocks || !(fa3 && spec.intraWgOverlap);
    pm.addPass(createAttnCausalBlocks(blocks));
  }
  if (spec.boundedSoftmax)
    pm.addPass(createAttnBoundedSoftmax());
  AttnOnlineSoftmaxOptions softmax;
  softmax.exp2Emulate = spec.exp2EmulatedEighths;
  pm.addPass(createAttnOnlineSoftmax(softmax));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (sm80Stages > 1) {
    addSm80RingPasses(pm, sm80Stages);
    return;
  }
  if (!fa3)
    return;
  // FlashAttention-3 on sm_90a: a persistent grid, then the schedule.
  if (usesPersistentGrid(spec))
    pm.addPass(createAttnPersistent());
  addFa3SchedulePasses(pm, spec, spec.stages);
}

void mlir::attn::addSm80RingPasses(OpPassManager &pm, int64_t stages) {
  // K/V rings whose fills run stages - 1 blocks ahead.
  AttnMultibufferOptions multibuffer;
  multibuffer.stages = stages;
  pm.addPass(createAttnMultibuffer(multibuffer));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::attn::addFa3SchedulePasses(OpPassManager &pm,
                                      const AttentionSpec &spec,
                                      int64_t stages) {
  // K/V rings, producer/consumer warpgroups, then the two schedules of the
  // consumers' GEMMs.
  AttnMultibufferOptions multibuffer;
  multibuffer.stages = stages > 0 ? stages : kDefaultStages;
  pm.addPass(createAttnMultibuffer(multibuffer));
  pm.addPass(createAttnWarpSpecialize());
  if (spec.intraWgOverlap)
    pm.addPass(createAttnIntraWgOverlap());
  if (spec.pingpong)
    pm.addPass(createAttnPingpong());
  if (usesTmaStore(spec))
    pm.addPass(createAttnTmaStore());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}
