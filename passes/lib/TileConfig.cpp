//===- TileConfig.cpp - tile sizes per spec and target --------------------===//
#include "attn/Passes/TileConfig.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <iterator>
#include <numeric>

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

int64_t mlir::attn::smemTileSwizzle(int64_t cols, int64_t elementBytes) {
  for (int64_t span : kSwizzleSpans)
    if (cols % (span / elementBytes) == 0)
      return span;
  return 0;
}

int64_t mlir::attn::kernelTileSwizzle(int64_t headDim, int64_t headDimV) {
  int64_t cols = smemTileCols(headDim);
  if (headDimV)
    cols = std::gcd(cols, smemTileCols(headDimV));
  return smemTileSwizzle(cols);
}

int64_t mlir::attn::outputAccumulatorCols(TargetKind target, int64_t headDim) {
  return target == TargetKind::sm_90a ? smemTileCols(headDim) : headDim;
}

bool mlir::attn::dkdvTakesTwoPasses(TargetKind target, int64_t headDim,
                                     bool plain) {
  // The widest one-pass kernels ptxas fits at 32-query steps: sm_90a d192
  // (240 registers), sm_80 d160 (255); with a mask, a soft cap, ALiBi or a
  // packed batch sm_90a d160 (a window spills 8 bytes from d152) and sm_80
  // d128.
  if (!plain)
    return headDim > (target == TargetKind::sm_90a ? 160 : 128);
  return headDim > (target == TargetKind::sm_90a ? 192 : 160);
}

/// The tuned head dim whose tile shape serves `headDim`.
static int64_t tunedHeadDim(int64_t headDim) {
  for (int64_t tuned : kTunedHeadDims)
    if (headDim <= tuned)
      return tuned;
  return kTunedHeadDims[std::size(kTunedHeadDims) - 1];
}

/// sm_90a, warp-specialized: FlashAttention-3's shapes where they fit,
/// consumer warpgroups of 64 query rows behind one producer warpgroup, K/V
/// in two-stage pipes. Shared memory bounds the key block (227 KB a CTA):
///   d64  192x128: Q 24 KB + 4 x 16 KB =  88 KB
///   d96  128x144: Q 24 KB + 4 x 27 KB = 132 KB
///   d128 128x128: Q 32 KB + 4 x 32 KB = 160 KB
///   d192 128x96:  Q 48 KB + 4 x 36 KB = 192 KB
///   d256 128x80:  Q 64 KB + 4 x 40 KB = 224 KB
/// and registers the rest: P stays in registers, so where FA3's shapes
/// spill (d96 on three warpgroups, d192 at 128x112) two warpgroups of 240
/// registers take a narrower block.
static TileConfig chooseWarpSpecializedTiles(int64_t tuned, bool causal, bool window,
                                      bool fixedMaxSoftcap) {
  // A soft cap makes the softmax MUFU-bound (a tanh and an exp2 a score):
  // on three warpgroups with 64-key blocks each softmax phase is shorter
  // and spans two others' GEMMs. Masks keep their shapes (causal lost).
  if (fixedMaxSoftcap && !causal && (tuned == 64 || tuned == 128))
    return {192, 64, 12, 2, /*peelMaskedBlocks=*/false};
  // d64 causal too: two warpgroups on 128x128 win short sequences but lose
  // long ones (--block-m=128 --num-warps=8 builds that kernel).
  if (tuned == 64)
    return {192, 128, 12, 2, /*peelMaskedBlocks=*/false};
  if (tuned == 96)
    return {128, 144, 8, 2, /*peelMaskedBlocks=*/false};
  if (tuned == 128)
    return {128, 128, 8, 2, /*peelMaskedBlocks=*/false};
  if (tuned == 192)
    return {128, 96, 8, 2, /*peelMaskedBlocks=*/false};
  // d256: O (128 registers) and S fit in 240. Masked and unmasked blocks
  // share one rotated loop (no pipeline drain between them) except for a
  // causal mask, whose extra live tile spills there; a window's mask keeps
  // it spill-free in one loop.
  return {128, 80, 8, 2, /*peelMaskedBlocks=*/causal && !window};
}

/// FP8 halves Q's, K's and V's shared memory, so every head dim takes
/// 128-key blocks (FlashAttention-3's d256 FP8 shape; narrower keys would
/// split V's transposed 128-byte panels): d64 three consumer warpgroups as
/// bf16's, d128 and d256 two.
TileConfig mlir::attn::chooseFp8TileConfig(int64_t headDim) {
  if (headDim <= 64)
    return {192, 128, 12, 2, /*peelMaskedBlocks=*/false};
  return {128, 128, 8, 2, /*peelMaskedBlocks=*/false};
}

TileConfig mlir::attn::chooseTileConfig(TargetKind target, int64_t headDim,
                                        bool causal, bool warpSpecialized,
                                        bool window, bool fixedMaxSoftcap) {
  const int64_t tuned = tunedHeadDim(headDim);
  // The figures behind each choice: docs/PERF.md, "Why the default tiles
  // are what they are".
  if (target == TargetKind::sm_90a && warpSpecialized)
    return chooseWarpSpecializedTiles(tuned, causal, window, fixedMaxSoftcap);
  if (target == TargetKind::sm_90a) {
    // One warpgroup on a 64-row block (one wgmma m64 slice): under 255
    // registers x 128 threads and 100 KB of shared memory, so two CTAs
    // share an SM and one's softmax runs under the other's GEMMs. Key
    // blocks narrow to 64 above d128 to stay within the register file.
    return {64, tuned <= 128 ? 128 : 64, 4};
  }
  // sm_80: FlashAttention-2's split-Q shape, 128 query rows per CTA, 4 warps
  // of two 16-row slices each; d256 halves the query block. A second K/V
  // stage pays only where its stages are small enough to keep two CTAs per
  // SM (d64, d96); d192's 8 warps allow one CTA per SM by their registers
  // either way, so its second stage costs nothing.
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
                                      bool outputTile, int64_t elementBytes,
                                      int64_t qStages) {
  int64_t cols = smemTileCols(headDim);
  int64_t q = config.blockM * cols * elementBytes;
  int64_t kv = config.blockN * cols * elementBytes;
  SmallVector<SmemAllocation> allocations;
  if (config.stages > 0)
    allocations = {{q, qStages}, {kv, config.stages}, {kv, config.stages}};
  else
    allocations = {{q, 0}, {kv, 0}, {kv, 0}};
  if (outputTile)
    allocations.push_back({config.blockM * cols * kElementBytes, 0});
  return sharedMemoryLayoutBytes(allocations);
}

TileConfig mlir::attn::fitSharedMemory(TileConfig config, int64_t headDim,
                                       int64_t smemLimit, bool keepStages,
                                       bool keepBlockM, bool keepBlockN) {
  auto fits = [&] { return sharedMemoryBytes(config, headDim) <= smemLimit; };
  if (smemLimit <= 0)
    return config;
  // The K/V pipe's depth first (what it buys is overlap, not work), then
  // the query block with its warps (fewer rows per CTA), then the key block.
  while (!fits() && !keepStages && config.stages > 1)
    --config.stages;
  while (!fits() && !keepBlockM && config.blockM > 64 &&
         config.numWarps % 2 == 0) {
    config.blockM /= 2;
    config.numWarps /= 2;
  }
  while (!fits() && !keepBlockN && config.blockN > 32)
    config.blockN /= 2;
  return config;
}

llvm::Error mlir::attn::checkTileConfig(const TileConfig &config,
                                        TargetKind target, int64_t headDim,
                                        int64_t smemLimit,
                                        int64_t elementBytes) {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (config.numWarps <= 0 || config.numWarps > 16)
    return fail(llvm::formatv("num-warps = {0} is out of range; use 1 to 16",
                              config.numWarps));
  int64_t slice = kRowsPerWarp * config.numWarps;
  if (config.blockM <= 0 || config.blockM % slice != 0) {
    // Each warp owns 16-row slices: block-m / 16 warps fit when that is a
    // warp count the target takes.
    int64_t warps = config.blockM / kRowsPerWarp;
    bool suggest = config.blockM > 0 && config.blockM % kRowsPerWarp == 0 &&
                   warps <= 16 &&
                   (target != TargetKind::sm_90a || warps % 4 == 0);
    return fail(llvm::formatv(
        "block-m = {0} must be a positive multiple of 16 * num-warps = {1}{2}",
        config.blockM, slice,
        suggest ? llvm::formatv("; with block-m = {0} use num-warps = {1} "
                                "(--num-warps={1})",
                                config.blockM, warps)
                      .str()
                : std::string()));
  }
  if (config.blockN <= 0 || config.blockN % 16 != 0 || config.blockN > 256)
    return fail(llvm::formatv(
        "block-n = {0} must be a multiple of 16 between 16 and 256",
        config.blockN));
  // FP8's P V GEMM steps 32 keys, and its transposed V tile is whole
  // 128-byte panels of keys.
  if (elementBytes == 1 && config.blockN % 128 != 0)
    return fail(llvm::formatv("block-n = {0}: FP8 kernels take key blocks of "
                              "128 or 256 (whole 128-byte panels of the "
                              "transposed V)",
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
  int64_t smem = sharedMemoryBytes(config, headDim, false, elementBytes);
  int64_t limit = maxSharedMemoryBytes(target);
  if (smemLimit > 0 && smemLimit < limit)
    limit = smemLimit;
  if (smem > limit) {
    // The K/V pipe's depth is the first thing to give back, if that fits
    // (sm_90a's overlapped schedule wants 2 stages at least).
    int64_t fitting = 0, fewest = target == TargetKind::sm_90a ? 2 : 1;
    for (int64_t stages = config.stages - 1; stages >= fewest && !fitting;
         --stages) {
      TileConfig fewer = config;
      fewer.stages = stages;
      if (sharedMemoryBytes(fewer, headDim, false, elementBytes) <= limit)
        fitting = stages;
    }
    return fail(llvm::formatv(
        "tiles need {0} bytes of shared memory, more than the {1} a CTA may "
        "use on {2}; {3}",
        smem, limit,
        limit < maxSharedMemoryBytes(target)
            ? llvm::formatv("this GPU (max-smem)").str()
            : stringifyTargetKind(target).str(),
        fitting ? llvm::formatv("use fewer K/V stages (--stages={0} fits) or "
                                "smaller block-m/block-n",
                                fitting)
                      .str()
                : std::string("use smaller block-m/block-n")));
  }
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
