//===- Configure.cpp - choose a kernel's tiles and schedule, once ---------===//
//
// configure() is the one place where a kernel's tiles and its schedule are
// decided, from the target, the problem and the request's overrides and
// switches. attn-configure records its choice in the IR (#attn.tiling,
// #attn.schedule); attngen's driver records the same for the modules it
// builds; every pass, the lowering, the kernel name and the metadata read
// it from there.
//
//===----------------------------------------------------------------------===//
#include "KvCacheSpec.h"
#include "TuningOptions.h"
#include "attn/Spec/Spec.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "attn-configure"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNCONFIGURE
#include "attn/Spec/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
/// Whether attn-prefetch-q applies: a persistent kernel (its Q is loaded
/// once per tile of its loop) with room for a second Q tile beside the K/V
/// pipes and, with the TMA epilogue, the output tile: d64 and d128, not
/// d256's 64 KB Q beside its K/V pipes. Dense 16-bit kernels only, so far:
/// the varlen (dead tiles move no fill) and FP8 kernels have not yet run
/// with the second stage on a GPU.
bool prefetchQApplies(const AttentionSpec &spec, const TileConfig &tiling,
                      bool persistent, bool tmaStore) {
  return persistent && !spec.varlen && spec.dtype != DType::e4m3 &&
         sharedMemoryBytes(tiling, spec.tileHeadDim(), tmaStore,
                           elementBytesOf(spec.dtype), /*qStages=*/2) <=
             maxSharedMemoryBytes(TargetKind::sm_90a);
}
} // namespace

KernelConfig mlir::attn::configure(const AttentionSpec &spec) {
  KernelConfig config;
  AttentionSchedule &s = config.schedule;
  bool fa3 = usesFa3Schedule(spec);
  if (isBackward(spec)) {
    // The backward kernels: on sm_90a a TMA producer warpgroup feeding
    // two-stage pipes (--no-warp-specialize: one role for all warps and
    // single-stage copies, as on sm_80). dq's loop is the forward's shape,
    // which attn-causal-blocks bounds and peels; dkdv bounds its flat
    // (head, query block) loop itself and masks, under a branch, the
    // blocks that cross Nq or the band's edges.
    config.tiling = backwardTileConfig(spec);
    s.skipMaskedBlocks =
        spec.skipMaskedBlocks && spec.backward == BackwardPart::dq;
    // pre and post copy nothing: one warpgroup, no producer.
    bool elementwise = spec.backward == BackwardPart::pre ||
                       spec.backward == BackwardPart::post;
    s.warpSpecialize = spec.target == TargetKind::sm_90a &&
                       spec.warpSpecialize && !elementwise;
    // Intra-warpgroup overlap (attn-backward-overlap: S and dP issued
    // together, every GEMM waited for late) where it measured faster:
    // dq's steps, the fused kernel's (since its dQ drain waits a step
    // late), and dkdv's when a mask gives the recompute work to hide;
    // unmasked dkdv loses a few percent (docs/PERF.md); a two-pass dkdv's
    // passes have one product each, nothing to overlap. No pingpong.
    bool overlapPays = spec.backward == BackwardPart::dq ||
                       spec.backward == BackwardPart::fused ||
                       (spec.backward == BackwardPart::dkdv &&
                        hasDiagonal(canonicalSpec(spec)) &&
                        !dkdvTakesTwoPasses(
                            spec.target,
                            (spec.headDim + spec.valueHeadDim() + 1) / 2,
                            /*plain=*/false));
    s.intraWgOverlap = s.warpSpecialize && spec.intraWgOverlap && overlapPays;
    s.pingpong = false;
    s.tmaStore = false;
    s.persistent = false;
    s.flushDenormals = spec.flushDenormals;
    s.boundedSoftmax = false;
    // attn-longest-first: the causal kernels' CTAs shrink along the grid.
    s.longestFirst = spec.longestFirst && spec.hasMonotoneBlockLengths();
    return config;
  } else if (spec.kvCache) {
    // Decoding kernels: their own tiles; their programs mask under a branch
    // of their own (no block skipping), and a combine kernel has no
    // schedule beyond its loop over the splits.
    config.tiling = kvCacheTileConfig(spec);
    s.skipMaskedBlocks = false;
    s.warpSpecialize = fa3 && !spec.combine;
    s.tmaStore = false;
    s.persistent = false;
  } else {
    // A window decides whether d256 peels its masked blocks; a rotated
    // (intra-warpgroup overlapped) loop should not drain between the
    // unmasked and the masked blocks, so without the rotation they peel.
    AttentionSpec canonical = canonicalSpec(spec);
    bool window = canonical.windowLeft >= 0 || canonical.windowRight > 0;
    config.tiling = tileConfigOf(spec, window);
    config.tiling.peelMaskedBlocks =
        config.tiling.peelMaskedBlocks || !(fa3 && spec.intraWgOverlap);
    s.skipMaskedBlocks = spec.skipMaskedBlocks;
    s.warpSpecialize = fa3;
    s.tmaStore = usesTmaStore(spec);
    s.persistent = fa3 && usesPersistentGrid(spec);
    s.prefetchQ = spec.prefetchQ && prefetchQApplies(spec, config.tiling,
                                                     s.persistent, s.tmaStore);
  }
  s.intraWgOverlap = s.warpSpecialize && spec.intraWgOverlap;
  s.pingpong = s.warpSpecialize && spec.pingpong;
  s.flushDenormals = spec.flushDenormals;
  s.exp2EmulatedEighths = spec.exp2EmulatedEighths;
  s.boundedSoftmax = spec.boundedSoftmax && boundedSoftmaxApplies(spec) &&
                     !isBackward(spec);
  return config;
}

TileConfig mlir::attn::backwardTileConfig(const AttentionSpec &spec) {
  // 64 rows a warpgroup: its accumulators (dK and dV, or dQ) and the S, P
  // and dP tiles fit the registers up to head dim 128. sm_90a's
  // warp-specialized kernels run two consumer warpgroups on 128 rows (one
  // producer feeds both; 1.4-1.6x one warpgroup's speed, docs/PERF.md).
  bool elementwise = spec.backward == BackwardPart::pre ||
                     spec.backward == BackwardPart::post;
  bool twoWarpgroups = spec.target == TargetKind::sm_90a &&
                       spec.warpSpecialize && !elementwise;
  // The wider of the head dims (a value head dim of its own) sizes the
  // steps: conservative for registers and shared memory alike.
  const int64_t wide = std::max(spec.headDim, spec.valueHeadDim());
  TileConfig t;
  t.blockM = spec.blockM > 0 ? spec.blockM : twoWarpgroups ? 128 : 64;
  // The loop's step: the widest that ptxas fits without spills.
  // One warpgroup (sm_80, --no-warp-specialize): 64, and dkdv above d64 32
  // queries, so that its S^T, P^T and dP^T tiles leave room for the two
  // accumulators (above d160, or d128 with more live, it takes two passes,
  // dkdvTakesTwoPasses); dq above d128 under a mask, a soft cap, ALiBi or
  // a packed batch 32 keys. Two warpgroups (240 registers each): dq 128 keys; dkdv
  // 128 queries to d64 and 64 above, but narrower where more is live per
  // score: 64 to d64 under a mask, a soft cap, ALiBi or a packed batch's
  // sequence bounds, and 32 above d64 under a soft cap, or a mask in a
  // packed batch.
  // The fused kernel is dkdv's program plus the dQ drain, whose 64 x step
  // product is live only between the GEMMs.
  bool dkdv = spec.backward == BackwardPart::dkdv ||
              spec.backward == BackwardPart::fused;
  bool plain =
      !hasDiagonal(spec) && spec.softcap == 0 && !spec.varlen && !spec.alibi;
  bool tight = spec.softcap > 0 || (spec.varlen && hasDiagonal(spec));
  // The fused kernel's dQ block adds 32 registers: 64 queries at d64
  // (128 spilled 116 bytes).
  bool fused = spec.backward == BackwardPart::fused;
  // Above d128 two warpgroups step 32 rows: the resident tiles (Q and dO,
  // or K and V: 128 rows) and two stages of the streamed pair fill the 227
  // KB of shared memory at 64.
  int64_t step = !twoWarpgroups
                     ? (dkdv && wide > 64                ? 32
                        : !dkdv && wide > 128 && !plain ? 32
                                                                 : 64)
                 : wide > 128 ? 32
                 : !dkdv        ? 128
                 : wide > 64 ? (tight ? 32 : 64)
                 : plain && !fused   ? 128
                                     : 64;
  t.blockN = spec.blockN > 0 ? spec.blockN : step;
  t.numWarps = spec.numWarps > 0    ? spec.numWarps
               : spec.blockM > 0     ? spec.blockM / 16
               : twoWarpgroups       ? 8
                                     : 4;
  // Warp-specialized kernels stream through two-stage pipes; the others
  // are single-buffered.
  t.stages = spec.stages > 0 ? spec.stages : twoWarpgroups ? 2 : 1;
  t.peelMaskedBlocks = true;
  // A GPU with less shared memory per block than its target (an sm_80
  // kernel on an sm_86/sm_89 GPU, or --max-smem): a step left to the
  // default narrows until the tiles fit.
  bool copies = spec.backward == BackwardPart::dq ||
                spec.backward == BackwardPart::dkdv;
  if (copies && spec.maxSmem > 0 && spec.blockN == 0)
    while (t.blockN > 16 && backwardSharedMemoryBytes(spec, t) > spec.maxSmem)
      t.blockN /= 2;
  return t;
}

int64_t mlir::attn::backwardSharedMemoryBytes(const AttentionSpec &spec,
                                              const TileConfig &config) {
  // Each pair holds one tile of the head dim (Q or K) and one of the value
  // head dim (dO or V).
  int64_t bytes = elementBytesOf(spec.dtype);
  int64_t rowD = smemTileCols(spec.headDim) * bytes;
  int64_t rowDv = smemTileCols(spec.valueHeadDim()) * bytes;
  // sm_90a's warp-specialized tiles are mbarrier pipes (the resident pair
  // one stage each); single-buffered tiles have no barrier of their own.
  bool pipes = spec.target == TargetKind::sm_90a && spec.warpSpecialize;
  int64_t resident = pipes ? 1 : 0, streamed = pipes ? config.stages : 0;
  SmallVector<SmemAllocation> allocations = {
      {config.blockM * rowD, resident},
      {config.blockM * rowDv, resident},
      {config.blockN * rowD, streamed},
      {config.blockN * rowDv, streamed}};
  if (spec.backward == BackwardPart::fused) {
    // dS^T [keys x queries], and sm_90a's f32 stage of the dQ blocks: 64
    // head-dim columns by the queries of every warpgroup's block.
    allocations.push_back({config.blockM * config.blockN * bytes, 0});
    if (pipes) {
      int64_t warpgroups = config.numWarps / kWarpgroupWarps;
      int64_t chunks = std::max<int64_t>(spec.headDim / kWarpgroupRows, 1);
      int64_t width = config.blockN / std::max<int64_t>(warpgroups / chunks, 1);
      allocations.push_back({warpgroups * width * 64 * 4, 0});
    }
  }
  return sharedMemoryLayoutBytes(allocations);
}

AttentionSpec mlir::attn::specOfProblem(TargetKind target,
                                        const AttentionProblem &problem) {
  AttentionSpec spec;
  static_cast<AttentionProblem &>(spec) = problem;
  spec.target = target;
  // A combine kernel's problem reads only the split-KV workspace; its
  // request is that of the split kernel it combines.
  if (problem.combine)
    spec.kvCache = spec.splitKv = true;
  return spec;
}

AttentionSpec mlir::attn::specOfConfig(TargetKind target,
                                       const AttentionProblem &problem,
                                       const KernelConfig &config) {
  AttentionSpec spec = specOfProblem(target, problem);
  const TileConfig &t = config.tiling;
  const AttentionSchedule &s = config.schedule;
  spec.blockM = t.blockM;
  spec.blockN = t.blockN;
  spec.numWarps = t.numWarps;
  spec.stages = t.stages;
  spec.skipMaskedBlocks = s.skipMaskedBlocks;
  // sm_90a's switches as chosen; a kernel without warp specialization
  // keeps the defaults of the techniques that need it.
  spec.warpSpecialize = s.warpSpecialize || target != TargetKind::sm_90a;
  spec.intraWgOverlap = s.intraWgOverlap || !s.warpSpecialize;
  spec.pingpong = s.pingpong || !s.warpSpecialize;
  spec.tmaStore = s.tmaStore;
  spec.persistent = s.persistent;
  spec.flushDenormals = s.flushDenormals;
  spec.exp2EmulatedEighths = s.exp2EmulatedEighths;
  spec.boundedSoftmax = s.boundedSoftmax || !boundedSoftmaxApplies(spec) ||
                        isBackward(spec);
  spec.longestFirst = s.longestFirst || !spec.hasMonotoneBlockLengths();
  spec.prefetchQ =
      s.prefetchQ || !prefetchQApplies(spec, t, s.persistent, s.tmaStore);
  // A decoding kernel's schedule has no persistent grid or TMA epilogue to
  // ask for (validateSpec refuses asking).
  if (spec.kvCache)
    spec.tmaStore = spec.persistent = std::nullopt;
  return spec;
}

//===----------------------------------------------------------------------===//
// attn-configure
//===----------------------------------------------------------------------===//

namespace {

struct AttnConfigurePass
    : public mlir::attn::impl::AttnConfigureBase<AttnConfigurePass> {
  using AttnConfigureBase::AttnConfigureBase;
  AttnConfigurePass() = default;
  AttnConfigurePass(const AttnConfigurePass &other)
      : AttnConfigureBase(other) {}

  template <class T> using ATTN_OPTION = Pass::Option<T>;
#include "TuningOptionMembers.def"

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<TargetKind> target = getTarget(module);
    SmallVector<Operation *> kernels;
    module.walk([&](func::FuncOp func) {
      if (!func->hasAttr(kTilingAttrName) && problemOfKernel(func))
        kernels.push_back(func);
    });
    if (kernels.empty())
      return;
    if (!target) {
      module.emitError("attn-configure needs the module attribute "
                       "'attn.target' (#attn.target<sm_80> or "
                       "#attn.target<sm_90a>)");
      return signalPassFailure();
    }
    for (Operation *func : kernels) {
      AttentionSpec spec = specOfProblem(*target, *problemOfKernel(func));
      if (llvm::Error error = tuning::readTuningOptions(*this, spec)) {
        func->emitError() << llvm::toString(std::move(error));
        return signalPassFailure();
      }
      if (llvm::Error error = validateSpec(spec)) {
        func->emitError() << "cannot configure this kernel: "
                          << llvm::toString(std::move(error));
        return signalPassFailure();
      }
      configureKernel(func, canonicalSpec(spec), /*name=*/false);
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::attn::createAttnConfigure(const AttentionSpec &tuning) {
  auto pass = std::make_unique<AttnConfigurePass>();
  tuning::writeTuningOptions(tuning, *pass);
  return pass;
}
