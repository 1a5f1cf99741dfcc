//===- TileConfig.h - tile sizes per spec and target -----------*- C++ -*-===//
#ifndef ATTN_PASSES_TILECONFIG_H
#define ATTN_PASSES_TILECONFIG_H

#include "attn/Dialect/AttnDialect.h"
#include "llvm/Support/Error.h"

namespace mlir::attn {

/// Tile sizes and thread organisation of one kernel.
struct TileConfig {
  int64_t blockM = 0;   ///< query rows per CTA
  int64_t blockN = 0;   ///< key/value rows per loop iteration
  int64_t numWarps = 0; ///< warps per CTA
};

/// The default configuration for a head dimension, mask and target.
TileConfig chooseTileConfig(TargetKind target, int64_t headDim, bool causal);

/// Checks a (possibly user-overridden) configuration against what the target's
/// code generator supports, and returns an error that says what to change.
llvm::Error checkTileConfig(const TileConfig &config, TargetKind target,
                            int64_t headDim);

/// Shared memory (bytes) the kernel needs: Q, K and V tiles plus barriers.
int64_t sharedMemoryBytes(const TileConfig &config, int64_t headDim);

/// The most dynamic shared memory one CTA may use on the target.
int64_t maxSharedMemoryBytes(TargetKind target);

} // namespace mlir::attn

#endif // ATTN_PASSES_TILECONFIG_H
