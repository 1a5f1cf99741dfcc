//===- Pipeline.cpp - spec checks, defaults, name, module, pipeline -------===//
#include "KvCacheSpec.h"
#include "attn/Spec/Spec.h"
#include "attn/Passes/Passes.h"
#include "attn/Passes/TileConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/Passes.h"

#include <fmt/format.h>

#include <limits>

using namespace mlir;
using namespace mlir::attn;

/// K/V pipe depth of the warp-specialized kernels (FlashAttention-3's).
static constexpr int64_t kDefaultStages = 2;
/// Largest window side: the kernels' index arithmetic is 32-bit (the
/// verifier's bound on window_left / window_right).
static constexpr int64_t kMaxWindowSide = std::numeric_limits<int32_t>::max();
/// exp2 emulation counts eighths of the score blocks.
static constexpr int64_t kExp2EmulationPeriod = 8;

namespace {
/// An invalid spec's error.
llvm::Error specError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Whether an explicit --tma-store can apply to a tile configuration: one
/// 64-row slice per consumer warpgroup, and room for the output tile beside
/// Q and the K/V pipes (what attn-tma-store checks on the IR).
llvm::Error checkTmaStoreFits(const TileConfig &config, int64_t headDim) {
  if (config.blockM != 16 * config.numWarps)
    return specError(fmt::format(
        "--tma-store needs one 64-row slice per consumer warpgroup "
        "(block-m = 16 x num-warps), got block-m = {} with {} warps",
        config.blockM, config.numWarps));
  int64_t bytes = sharedMemoryBytes(config, headDim, /*outputTile=*/true);
  if (bytes > maxSharedMemoryBytes(TargetKind::sm_90a))
    return specError(fmt::format(
        "--tma-store needs {} KB of shared memory for d{} ({}x{} tiles, the "
        "output tile beside Q and the K/V pipes), more than the {} KB of a "
        "CTA; leave it out (the registers store O)",
        bytes / 1024, headDim, config.blockM, config.blockN,
        maxSharedMemoryBytes(TargetKind::sm_90a) / 1024));
  return llvm::Error::success();
}
} // namespace

llvm::Error mlir::attn::validateSpec(const AttentionSpec &spec) {
  if (llvm::Error error = checkHeadDim(spec.headDim))
    return error;
  if (spec.scale != 0)
    if (llvm::Error error = checkSoftmaxScale(spec.scale))
      return specError(llvm::toString(std::move(error)) +
                       " (or 0 for 1/sqrt(head_dim))");
  std::pair<const char *, int64_t> overrides[] = {
      {"block-m", spec.blockM},
      {"block-n", spec.blockN},
      {"num-warps", spec.numWarps}};
  for (auto [name, value] : overrides)
    if (value < 0)
      return specError(fmt::format(
          "{} = {} must be 0 (tuned default) or positive", name, value));
  if (spec.exp2EmulatedEighths < 0 ||
      spec.exp2EmulatedEighths > kExp2EmulationPeriod)
    return specError(
        fmt::format("exp2 emulation = {}/{} is out of range; use 0 "
                    "(all exponentials on MUFU) to {}/{}",
                    spec.exp2EmulatedEighths, kExp2EmulationPeriod,
                    kExp2EmulationPeriod, kExp2EmulationPeriod));
  if (spec.llvmOptLevel < 1 || spec.llvmOptLevel > 3)
    return specError(fmt::format("llvm-opt-level = {} is not supported; "
                                 "supported: 1, 2, 3",
                                 spec.llvmOptLevel));
  // The cap takes the softmax scale's place in the kernel (f32, folded into
  // exp2's constant), so it obeys the same rule.
  if (spec.softcap != 0)
    if (llvm::Error error = checkSoftmaxScale(spec.softcap, "softcap", "softcap"))
      return specError(llvm::toString(std::move(error)) +
                       " (or 0 for no soft cap)");
  std::pair<const char *, int64_t> sides[] = {{"left", spec.windowLeft},
                                              {"right", spec.windowRight}};
  for (auto [side, value] : sides)
    if (value < -1 || value > kMaxWindowSide)
      return specError(fmt::format("window {} = {} is out of range; use -1 "
                                   "(unbounded) or 0 to {} keys",
                                   side, value, kMaxWindowSide));
  if (spec.causal && spec.windowRight > 0)
    return specError(
        fmt::format("window right = {} with a causal mask: a causal "
                    "row sees no key right of its diagonal; use "
                    "window right 0 or -1 with causal, or drop "
                    "causal for a window that looks ahead",
                    spec.windowRight));
  if (spec.causalAlign == CausalAlign::bottom_right && !hasDiagonal(spec))
    return specError("causal alignment bottom-right needs a causal mask or a "
                     "window (it places their diagonal): set causal (--causal) "
                     "or a window (--window=L,R), or leave the alignment "
                     "top-left");
  if (spec.stages < 0 || spec.stages > kMaxPipeStages)
    return specError(fmt::format("stages = {} is out of range; use 1 to {}",
                                 spec.stages, kMaxPipeStages));
  if (usesFa3Schedule(spec) && spec.intraWgOverlap && spec.stages == 1)
    return specError("intra-warpgroup overlap needs 2 or more stages; use "
                     "--stages=2 or --no-intra-wg-overlap");
  bool decoding = spec.kvCache || spec.pageSize != 0 || spec.splitKv ||
                  spec.headPack != 1 || spec.combine;
  bool tmaStoreAsked = spec.tmaStore.value_or(false);
  if (tmaStoreAsked && decoding)
    return specError(
        "--tma-store is for prefill kernels: a decoding kernel stores "
        "its few query rows from registers; leave it out");
  if (tmaStoreAsked && !usesFa3Schedule(spec))
    return specError(
        "--tma-store needs the sm_90a warp-specialized schedule, "
        "whose consumer warpgroups each store their rows; leave it "
        "out or drop --no-warp-specialize");
  // Decoding kernels have tiles of their own (KvCacheSpec.cpp).
  if (decoding)
    return validateKvCacheSpec(spec);
  TileConfig config = tileConfigOf(spec);
  if (llvm::Error error = checkTileConfig(config, spec.target, spec.headDim))
    return error;
  if (tmaStoreAsked)
    return checkTmaStoreFits(config, spec.headDim);
  return llvm::Error::success();
}

namespace {
/// usesPersistentGrid's choice when a valid spec does not ask (in one, the
/// decoding fields imply kvCache), where the H200 measured it faster than
/// one CTA per tile (docs/PERF.md): unmasked d64 and d128, and causal masks
/// without a window up to d128 and at d256, whose CTAs take the tiles in
/// units of equal length (attn-persistent): d128 causal +5-8%, d256 +9-15%,
/// d64 +6%. Causal d160 and d192 spill in the persistent loop and ran
/// 2-9% slower; windows and the other unmasked head dims even or slower.
bool persistentByDefault(const AttentionSpec &spec) {
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
} // namespace

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

namespace {
/// usesTmaStore's choice when a spec does not ask: wherever attn-tma-store
/// applies, i.e. every dense warp-specialized sm_90a kernel whose output
/// tile fits beside Q and the K/V pipes (up to d176). On the H200 it gave
/// +5-11% at N = 1k and -2% to +3% at 8k (d64 to d160, docs/PERF.md).
bool tmaStoreByDefault(const AttentionSpec &spec) {
  // A packed (varlen) kernel stores its sequences' full tiles with it, the
  // partial last tile of each from registers (attn-tma-store).
  if (!usesFa3Schedule(spec) || spec.kvCache)
    return false;
  return !llvm::errorToBool(
      checkTmaStoreFits(tileConfigOf(spec), spec.headDim));
}
} // namespace

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

std::string mlir::attn::kernelName(const AttentionSpec &specAsked) {
  AttentionSpec spec = canonicalSpec(specAsked);
  // Schedule ablations get a suffix, so their kernels never share a name
  // (or a cache entry's kernel) with the default schedule.
  std::string schedule;
  if (spec.target == TargetKind::sm_80 && spec.stages > 0)
    schedule += fmt::format("_s{}", spec.stages);
  if (spec.target == TargetKind::sm_90a) {
    if (!spec.warpSpecialize)
      schedule += "_nows";
    else {
      if (spec.stages > 0)
        schedule += fmt::format("_s{}", spec.stages);
      if (!spec.intraWgOverlap)
        schedule += "_noovl";
      if (!spec.pingpong)
        schedule += "_nopp";
      if (spec.tmaStore && !spec.kvCache &&
          *spec.tmaStore != tmaStoreByDefault(spec))
        schedule += *spec.tmaStore ? "_tma" : "_notma";
      if (spec.persistent && *spec.persistent != persistentByDefault(spec))
        schedule += *spec.persistent ? "_pers" : "_nopers";
    }
  }
  // _causal is top-left (PyTorch's is_causal), _causal_br bottom-right
  // (FlashAttention's).
  // A window: _window, _l<left> and _r<right> for its bounded sides (r0:
  // causal), _br when bottom-right aligned: _window_l256_r0_br.
  std::string causal;
  bool bottomRight = spec.causalAlign == CausalAlign::bottom_right;
  if (spec.windowLeft >= 0 || spec.windowRight >= 0) {
    causal = "_window";
    if (spec.windowLeft >= 0)
      causal += fmt::format("_l{}", spec.windowLeft);
    if (spec.causal || spec.windowRight >= 0)
      causal += fmt::format("_r{}", spec.causal ? 0 : spec.windowRight);
    if (bottomRight)
      causal += "_br";
  } else if (spec.causal) {
    causal = bottomRight ? "_causal_br" : "_causal";
  }
  // _softcap<c>, c in its shortest round-trip spelling made an identifier
  // ('.' -> 'p', '-' -> 'm', '+' dropped): _softcap30, _softcap50p5.
  std::string softcap;
  if (spec.softcap > 0) {
    softcap = "_softcap";
    for (char c : fmt::format("{}", spec.softcap))
      if (c == '.')
        softcap += 'p';
      else if (c == '-')
        softcap += 'm';
      else if (c != '+')
        softcap += c;
  }
  // Tile overrides that change the tiles: _m<M>n<N>w<W>, so an override's
  // kernel never shares the default's name.
  if (!spec.kvCache && overridesTiles(spec)) {
    TileConfig asked = tileConfigOf(spec);
    schedule +=
        fmt::format("_m{}n{}w{}", asked.blockM, asked.blockN, asked.numWarps);
  }
  // Not a schedule, but an ablation of the same kind: IEEE denormals.
  if (!spec.flushDenormals)
    schedule += "_noftz";
  // The soft cap's running max kept where attn-bounded-softmax would fix it.
  if (!spec.boundedSoftmax && boundedSoftmaxApplies(spec))
    schedule += "_runmax";
  // Software exp2 for k eighths of the scores: _exp2emu<k>o8.
  if (spec.exp2EmulatedEighths > 0)
    schedule += fmt::format("_exp2emu{}o{}", spec.exp2EmulatedEighths,
                            kExp2EmulationPeriod);
  std::string arch = spec.target == TargetKind::sm_90a ? "sm90a" : "sm80";
  std::string dtype = spec.bf16 ? "bf16" : "f16";
  // Decoding kernels: attn_kvcache_... with _pack<G>, _page<P>, _split; the
  // split-KV combine kernel depends on the dtype, head dim, LSE and packing
  // only, so split kernels of any mask share it.
  if (spec.combine)
    return fmt::format("attn_combine_{}_{}_d{}{}{}", arch, dtype, spec.headDim,
                       spec.withLse ? "" : "_nolse", kvCacheNameSuffix(spec));
  if (spec.kvCache)
    return fmt::format("attn_kvcache_{}_{}_d{}{}{}{}{}{}", arch, dtype,
                       spec.headDim, causal, softcap,
                       spec.withLse ? "" : "_nolse", kvCacheNameSuffix(spec),
                       schedule);
  return fmt::format("attn_fwd_{}_{}_d{}{}{}{}{}{}", arch, dtype, spec.headDim,
                     spec.varlen ? "_varlen" : "", causal, softcap,
                     spec.withLse ? "" : "_nolse", schedule);
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
  return spec.bf16 ? Type(BFloat16Type::get(&ctx))
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
