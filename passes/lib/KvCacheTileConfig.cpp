//===- KvCacheTileConfig.cpp - tile sizes of the decoding kernels ---------===//
#include "attn/Passes/TileConfig.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::attn;

/// Query rows of a KV-cache tile: one 64-row wgmma slice on sm_90a, one
/// 16-row slice per warp of four on sm_80. A decoding step has Nq x (heads
/// packed) rows, usually far fewer.
static constexpr int64_t kKvCacheBlockM = 64;
/// Warps of a KV-cache CTA: one consumer warpgroup (sm_90a), four warps
/// issuing the cp.async copies (sm_80).
static constexpr int64_t kKvCacheWarps = 4;
/// Key rows per MMA k step: key blocks and pages are multiples of it.
static constexpr int64_t kKeyRowStep = 16;
/// Keys per FP8 block: the transposed V tile is whole 128-byte panels.
static constexpr int64_t kFp8KeyBlock = 128;
/// Warps of the combine kernel.
static constexpr int64_t kCombineWarps = 4;

bool mlir::attn::fitsPages(int64_t blockN, int64_t pageSize) {
  return pageSize == 0 || pageSize % blockN == 0 || blockN % pageSize == 0;
}

int64_t mlir::attn::fitToPages(int64_t blockN, int64_t pageSize) {
  for (int64_t n = blockN; n > kKeyRowStep; n -= kKeyRowStep)
    if (fitsPages(n, pageSize))
      return n;
  return kKeyRowStep;
}

TileConfig mlir::attn::chooseKvCacheTileConfig(TargetKind target,
                                               int64_t headDim,
                                               int64_t pageSize,
                                               int64_t elementBytes) {
  TileConfig config;
  config.blockM = kKvCacheBlockM;
  config.numWarps = kKvCacheWarps;
  // The mask runs under a branch on the ragged and diagonal blocks only
  // (attn-tile builds the KV-cache loop that way), so nothing is peeled.
  config.peelMaskedBlocks = false;
  if (elementBytes == 1) {
    // FP8 (sm_90a): 128-key blocks, the transposed V tile's whole panels.
    // Each stage holds K, V and V's row-major staging copy. Half the bytes
    // of bf16 leave one CTA's walk over its key blocks latency-bound, so up
    // to d128 two CTAs share an SM (each under half the shared memory and
    // registers): three stages at d64 (76 KB), two at d128 (104 KB); d256
    // keeps one CTA, two stages (Q 16 KB + 2 x 96 KB).
    config.blockN = kFp8KeyBlock;
    config.stages = headDim <= 64 ? 3 : 2;
    config.minCtasPerSm = headDim <= 128 ? 2 : 1;
    return config;
  }
  if (target == TargetKind::sm_90a) {
    // The producer warpgroup keeps `stages - 1` key/value blocks in flight
    // while the consumers work on one: 128-row blocks, three stages at d64
    // and d128 (Q 16 KB + 3 x 64 KB = 208 KB at d128), two 64-row stages at
    // d256 (the 227 KB limit).
    config.blockN = headDim <= 128 ? 128 : 64;
    config.stages = headDim <= 128 ? 3 : 2;
  } else {
    // sm_80: two-stage cp.async rings of 64-row blocks (80 KB at d128, two
    // CTAs per SM); d256 keeps single 64-row buffers as the dense kernel.
    config.blockN = 64;
    config.stages = headDim <= 128 ? 2 : 1;
  }
  config.blockN = fitToPages(config.blockN, pageSize);
  return config;
}

TileConfig mlir::attn::resolveKvCacheTileConfig(
    TargetKind target, int64_t headDim, int64_t pageSize, int64_t blockM,
    int64_t blockN, int64_t numWarps, int64_t stages, int64_t elementBytes) {
  TileConfig chosen =
      chooseKvCacheTileConfig(target, headDim, pageSize, elementBytes);
  TileConfig config =
      withOverrides(chosen, blockM, blockN, numWarps, stages);
  // Two CTAs per SM were chosen for the default tiles' shared memory and
  // registers; other tiles run one.
  if (config.blockM != chosen.blockM || config.blockN != chosen.blockN ||
      config.numWarps != chosen.numWarps || config.stages != chosen.stages)
    config.minCtasPerSm = 1;
  return config;
}

llvm::Error mlir::attn::checkKvCacheTileConfig(const TileConfig &config,
                                               TargetKind target,
                                               int64_t headDim,
                                               int64_t pageSize,
                                               int64_t headPack,
                                               int64_t elementBytes) {
  if (llvm::Error error = checkTileConfig(config, target, headDim,
                                          /*smemLimit=*/0, elementBytes))
    return error;
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (headPack < 1 || config.blockM % headPack != 0 ||
      (config.blockM / headPack) % 8 != 0)
    return fail(llvm::formatv(
        "head-pack = {0} does not fit block-m = {1}: each packed head needs "
        "a multiple of 8 rows (block-m / head-pack); use a power of two up to "
        "{2}{3}",
        headPack, config.blockM, config.blockM / 8,
        // A larger block-m fits the tiles up to 128 rows.
        headPack > 0 && 8 * headPack <= 128 && config.blockM < 8 * headPack
            ? llvm::formatv(", or a block-m of {0} (--block-m={0})",
                            8 * headPack)
                  .str()
            : std::string()));
  if (!fitsPages(config.blockN, pageSize)) {
    if (elementBytes == 1)
      return fail(llvm::formatv(
          "pages of {0} rows do not fit FP8's {1}-key blocks: a block must "
          "lie in one page or cover whole pages; use pages of 16, 32, 64, "
          "128 or a multiple of 128 rows",
          pageSize, config.blockN));
    return fail(llvm::formatv(
        "block-n = {0} does not fit pages of {1} rows: a key block must lie "
        "in one page or cover whole pages; use a divisor or a multiple of "
        "{1}",
        config.blockN, pageSize));
  }
  return llvm::Error::success();
}

TileConfig mlir::attn::combineTileConfig(int64_t blockM) {
  TileConfig config;
  config.blockM = blockM;
  config.blockN = kKeyRowStep; // no key blocks: the combine loops over splits
  config.numWarps = kCombineWarps;
  return config;
}
