//===- TileConfig.cpp - tile sizes per spec and target --------------------===//
#include "attn/Passes/TileConfig.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <iterator>

using namespace mlir;
using namespace mlir::attn;

/// Rows of one warp's MMA slice (mma.sync m16 and a quarter of wgmma m64).
static constexpr int64_t kRowsPerWarp = 16;
/// Dynamic shared memory one CTA may opt into (bytes): sm_80 (A100) and
/// sm_90a (H100/H200).
static constexpr int64_t kMaxSmemSm80 = 163 * 1024;
static constexpr int64_t kMaxSmemSm90 = 227 * 1024;
/// Default K/V ring depth of the sm_80 kernels that pipeline (d64).
static constexpr int64_t kSm80Stages = 2;

/// The MMA's k step: tiles are padded to a multiple of it.
static constexpr int64_t kMmaK = 16;
/// Swizzle spans TMA and wgmma support, widest first.
static constexpr int64_t kSwizzleSpans[] = {128, 64, 32};
/// Bytes of one Q/K/V element (f16, bf16).
static constexpr int64_t kElementBytes = 2;
/// Head dims with tuned tile shapes (FlashAttention-3's and -2's set); any
/// other head dim takes the shape of the next larger one, whose shared
/// memory and registers only shrink with the head dim.
static constexpr int64_t kTunedHeadDims[] = {64, 96, 128, 192, 256};

int64_t mlir::attn::smemTileCols(int64_t headDim) {
  return llvm::alignTo(headDim, kMmaK);
}

int64_t mlir::attn::smemTileSwizzle(int64_t cols) {
  for (int64_t span : kSwizzleSpans)
    if (cols % (span / kElementBytes) == 0)
      return span;
  return 0;
}

int64_t mlir::attn::outputAccumulatorCols(TargetKind target, int64_t headDim) {
  return target == TargetKind::sm_90a ? smemTileCols(headDim) : headDim;
}

/// The tuned head dim whose tile shape serves `headDim`.
static int64_t tunedHeadDim(int64_t headDim) {
  for (int64_t tuned : kTunedHeadDims)
    if (headDim <= tuned)
      return tuned;
  return kTunedHeadDims[std::size(kTunedHeadDims) - 1];
}

TileConfig mlir::attn::chooseTileConfig(TargetKind target, int64_t headDim,
                                        bool causal, bool warpSpecialized,
                                        bool window, bool fixedMaxSoftcap) {
  const int64_t tuned = tunedHeadDim(headDim);
  if (target == TargetKind::sm_90a && warpSpecialized) {
    // FlashAttention-3's shapes where they fit: consumer warpgroups of 64
    // query rows each (three at d64, two above) behind one producer
    // warpgroup, K/V in two-stage pipes. Shared memory (2 stages, 16-bit):
    //   d64  192x128: Q 24 KB + 4 x 16 KB =  88 KB
    //   d96  128x144: Q 24 KB + 4 x 27 KB = 132 KB  (FA3: 192x144, 144 KB)
    //   d128 128x128: Q 32 KB + 4 x 32 KB = 160 KB
    //   d192 128x96:  Q 48 KB + 4 x 36 KB = 192 KB  (FA3: 128x112, 216 KB;
    //                 128x128 would need 240 KB, over the 227 KB of a CTA)
    //   d256 128x80:  Q 64 KB + 4 x 40 KB = 224 KB
    // Registers decide the rest (ptxas 13.0): P stays in registers (FA3
    // routes it through shared memory at d64/d96), so FA3's d96 192x144
    // with three consumer warpgroups of 160 registers spills 524 bytes
    // (192x96: 72) while two warpgroups of 240 hold 128x144 and 128x160
    // without a spill (128x176: 72 bytes; under --persistent 128x160
    // spills 12, 128x144 none); d192 spills 24 bytes at FA3's 128x112 and
    // none at 128x96. gpu/make_headdim_kernels.sh builds the alternatives of
    // d96 and d192 for the H200.
    // d64 causal keeps 192x128 though two warpgroups on 128x128 (no spill,
    // against 208 bytes) run short sequences faster: 290 against 249 TFLOPS
    // at N=1k, 454 against 479 at 8k (docs/PERF.md); --block-m=128
    // --num-warps=8 builds that kernel.
    // d256 narrows the key block so that O (128 registers) and S fit in 240
    // registers. The rotated loop runs unmasked and masked blocks in one
    // loop (no pipeline drain between them): +3-8% on the H200
    // (docs/PERF.md), except d256 causal, where the branch's extra live tile
    // spills (573 vs 594 TFLOPS peeled). A window's mask (limits against
    // immediates) leaves d256 spill-free in one loop (ptxas: 0 bytes, vs
    // 204-228 peeled into three loops), which also saves two drains.
    // A soft cap makes the softmax MUFU-bound (a tanh and an exp2 per
    // score): with three consumer warpgroups on 64-key blocks, each
    // warpgroup's softmax phase is shorter and spans two others' GEMMs.
    // Measured (docs/PERF.md, bf16 cap 30, fixed max, N = 1k / 8k): d128
    // 506.8 / 631.0 against 496.8 / 581.7 at 128x128, d64 306.5 / 392.2
    // against 281.3 / 356.9 at 192x128; causal d128 lost at 1k (357.2
    // against 399.6), so masks keep their shapes.
    if (fixedMaxSoftcap && !causal && (tuned == 64 || tuned == 128))
      return {192, 64, 12, 2, /*peelMaskedBlocks=*/false};
    if (tuned == 64)
      return {192, 128, 12, 2, /*peelMaskedBlocks=*/false};
    if (tuned == 96)
      return {128, 144, 8, 2, /*peelMaskedBlocks=*/false};
    if (tuned == 128)
      return {128, 128, 8, 2, /*peelMaskedBlocks=*/false};
    if (tuned == 192)
      return {128, 96, 8, 2, /*peelMaskedBlocks=*/false};
    return {128, 80, 8, 2, /*peelMaskedBlocks=*/causal && !window};
  }
  if (target == TargetKind::sm_90a) {
    // One warpgroup computes a 64-row query block (one wgmma m64 slice) with
    // 128-wide key blocks (n64 above d128 to stay within the register file).
    // Such a CTA needs at most 255 registers x 128 threads and under 100 KB
    // of shared memory, so two CTAs share an SM and one's softmax runs under
    // the other's GEMMs. Measured on the H200 (docs/PERF.md, d128 bf16 8k):
    // 533 TFLOPS against 486 for two warpgroups on a 128-row block.
    return {64, tuned <= 128 ? 128 : 64, 4};
  }
  // sm_80: FlashAttention-2's split-Q shape: 128 query rows per CTA, 4 warps
  // each owning two 16-row slices; d256 halves the query block. Chosen on
  // the H200 from 42 candidates (docs/PERF.md, 2026-12-01, bf16, flushed
  // denormals; TFLOPS at N = 1k / 8k, FA2 in the same run):
  //   d64   128x96, 2 stages: 288 / 322 (FA2 290 / 309); 128x64 272 / 304
  //   d128  128x64, 1 stage:  342 / 377 (FA2 333 / 356), causal 249 / 323
  //         (FA2 248 / 321), run 15 of 2026-12-01 against 128x48's 316 / 358
  //         and 242 / 312: 1024 keys are 16 whole blocks of 64 where 48
  //         leaves a third of a block masked. 255 registers, no spill
  //         (causal: 32 bytes, stored once before the masked loop).
  //   d256  64x64, 1 stage:   306 / 341 (FA2 308 / 324); 2 stages 222 / 243
  // A second K/V stage pays only at d64, whose 16 KB stages keep two CTAs
  // per SM; at d128 and d256 the extra 24-32 KB costs that second CTA.
  // Not measured yet (gpu/make_headdim_kernels.sh builds the candidates):
  // d96 takes FlashAttention-2's 128x64 with two stages, whose 12 KB K/V
  // stages keep two CTAs per SM (Q 24 KB + 4 x 12 KB); d192 takes its 8
  // warps x one slice, one CTA per SM by its registers either way, so two
  // stages cost no occupancy (Q 48 KB + 4 x 24 KB).
  if (tuned == 64)
    return {128, 96, 4, kSm80Stages};
  if (tuned == 96)
    return {128, 64, 4, kSm80Stages};
  if (tuned == 128)
    return {128, 64, 4, 1};
  if (tuned == 192)
    return {128, 64, 8, kSm80Stages};
  return {64, 64, 4, 1};
}

TileConfig mlir::attn::resolveTileConfig(TargetKind target, int64_t headDim,
                                         bool causal, int64_t blockM,
                                         int64_t blockN, int64_t numWarps,
                                         bool warpSpecialized, int64_t stages,
                                         bool window, bool fixedMaxSoftcap) {
  return withOverrides(chooseTileConfig(target, headDim, causal,
                                        warpSpecialized, window,
                                        fixedMaxSoftcap),
                       blockM, blockN, numWarps, stages);
}

TileConfig mlir::attn::withOverrides(TileConfig config, int64_t blockM,
                                     int64_t blockN, int64_t numWarps,
                                     int64_t stages) {
  if (blockM > 0)
    config.blockM = blockM;
  if (blockN > 0)
    config.blockN = blockN;
  if (numWarps > 0)
    config.numWarps = numWarps;
  if (stages > 0)
    config.stages = stages;
  return config;
}

int64_t mlir::attn::maxSharedMemoryBytes(TargetKind target) {
  return target == TargetKind::sm_90a ? kMaxSmemSm90 : kMaxSmemSm80;
}

SmallVector<std::pair<Value, SmemAllocation>>
mlir::attn::smemAllocationsOf(Operation *kernel) {
  SmallVector<std::pair<Value, SmemAllocation>> allocations;
  kernel->walk([&](Operation *op) {
    if (auto alloc = dyn_cast<AllocSmemOp>(op))
      allocations.push_back(
          {alloc.getResult(), {alloc.getType().getSizeInBytes(), 0}});
    else if (auto pipe = dyn_cast<CreatePipeOp>(op))
      allocations.push_back({pipe.getResult(),
                             {pipe.getType().getBuffer().getSizeInBytes(),
                              pipe.getType().getStages()}});
  });
  return allocations;
}

int64_t
mlir::attn::sharedMemoryLayoutBytes(ArrayRef<SmemAllocation> allocations) {
  int64_t bytes = 0;
  for (const SmemAllocation &a : allocations) {
    int64_t buffers = std::max<int64_t>(a.stages, 1);
    int64_t barriers = a.stages == 0 ? 1 : 2 * a.stages;
    bytes += buffers * llvm::alignTo(a.tileBytes, kSmemTileAlignment) +
             barriers * kMbarrierBytes;
  }
  return bytes + kSmemTileAlignment;
}

int64_t mlir::attn::sharedMemoryBytes(const TileConfig &config, int64_t headDim,
                                      bool outputTile) {
  int64_t cols = smemTileCols(headDim);
  int64_t q = config.blockM * cols * kElementBytes;
  int64_t kv = config.blockN * cols * kElementBytes;
  SmallVector<SmemAllocation> allocations;
  if (config.stages > 0)
    allocations = {{q, 1}, {kv, config.stages}, {kv, config.stages}};
  else
    allocations = {{q, 0}, {kv, 0}, {kv, 0}};
  if (outputTile)
    allocations.push_back({q, 0});
  return sharedMemoryLayoutBytes(allocations);
}

llvm::Error mlir::attn::checkTileConfig(const TileConfig &config,
                                        TargetKind target, int64_t headDim) {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (config.numWarps <= 0 || config.numWarps > 16)
    return fail(llvm::formatv("num-warps = {0} is out of range; use 1 to 16",
                              config.numWarps));
  int64_t slice = kRowsPerWarp * config.numWarps;
  if (config.blockM <= 0 || config.blockM % slice != 0)
    return fail(llvm::formatv(
        "block-m = {0} must be a positive multiple of 16 * num-warps = {1}",
        config.blockM, slice));
  if (config.blockN <= 0 || config.blockN % 16 != 0 || config.blockN > 256)
    return fail(llvm::formatv(
        "block-n = {0} must be a multiple of 16 between 16 and 256",
        config.blockN));
  if (config.stages < 0 || config.stages > kMaxPipeStages)
    return fail(llvm::formatv("stages = {0} is out of range; use 1 to {1}",
                              config.stages, kMaxPipeStages));
  if (target == TargetKind::sm_90a) {
    if (config.numWarps % 4 != 0)
      return fail(llvm::formatv("sm_90a computes with whole warpgroups: "
                                "num-warps = {0} must be a multiple of 4",
                                config.numWarps));
    if (config.blockM % 64 != 0)
      return fail(llvm::formatv(
          "sm_90a wgmma works on 64-row slices: block-m = {0} must be a "
          "multiple of 64",
          config.blockM));
  }
  if (config.blockM > 256 || config.blockN > 256)
    return fail("block sizes above 256 exceed a TMA box; use at most 256");
  int64_t smem = sharedMemoryBytes(config, headDim);
  if (smem > maxSharedMemoryBytes(target))
    return fail(llvm::formatv(
        "tiles need {0} bytes of shared memory, more than the {1} a CTA may "
        "use on {2}; use smaller block-m/block-n",
        smem, maxSharedMemoryBytes(target), stringifyTargetKind(target)));
  return llvm::Error::success();
}

/// Registers per thread outside the tiles: addresses, strides, sizes, loop
/// counters and indices (a rough allowance).
static constexpr int64_t kScalarRegisters = 40;

// Every register tile uses the mma fragment layout: a warp holds its 16-row
// slices of a 16 x C f32 tile in 16 * C / 32 = C / 2 registers per thread.
// Per slice, the loop keeps the output accumulator (D / 2), the scores S
// (blockN / 2), the probabilities P packed two per register (blockN / 4) and
// the running max, sum and rescale factor (2 rows per thread each: 6). Each
// warp owns blockM / (16 * numWarps) slices. For the defaults this gives
// 174-252 registers for most defaults; sm_80 d128's 128x64 (276) is over
// but measured at 255 without spilling (the estimate is rough, so only
// overrides are warned about), one warp per 128-row block (888) far over.
int64_t mlir::attn::estimateRegistersPerThread(const TileConfig &config,
                                               int64_t headDim) {
  int64_t slicesPerWarp =
      std::max<int64_t>(1, config.blockM / (kRowsPerWarp * config.numWarps));
  int64_t perSlice =
      smemTileCols(headDim) / 2 + config.blockN / 2 + config.blockN / 4 + 6;
  return slicesPerWarp * perSlice + kScalarRegisters;
}
