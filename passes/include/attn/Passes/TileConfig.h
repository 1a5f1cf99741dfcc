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
  int64_t numWarps = 0; ///< warps per CTA (the consumer warps when
                        ///< warp-specialized)
  int64_t stages = 0;   ///< K/V pipe stages (0: single buffers, no pipes)
  /// attn-causal-blocks peels the unmasked blocks into their own loop
  /// (false: one loop, the mask under a branch, so a software-pipelined
  /// loop never drains between them).
  bool peelMaskedBlocks = true;
};

/// The default configuration for a head dimension, mask and target, and
/// whether the kernel will be warp-specialized (sm_90a).
TileConfig chooseTileConfig(TargetKind target, int64_t headDim, bool causal,
                            bool warpSpecialized = false);

/// The default configuration with every positive override applied.
TileConfig resolveTileConfig(TargetKind target, int64_t headDim, bool causal,
                             int64_t blockM, int64_t blockN, int64_t numWarps,
                             bool warpSpecialized = false, int64_t stages = 0);

/// Checks a (possibly user-overridden) configuration against what the target's
/// code generator supports, and returns an error that says what to change.
llvm::Error checkTileConfig(const TileConfig &config, TargetKind target,
                            int64_t headDim);

/// Registers one thread may use (the PTX ISA limit); a kernel needing more
/// spills to local memory.
constexpr int64_t kMaxRegistersPerThread = 255;

/// A rough estimate of the 32-bit registers per thread the kernel of
/// `config` keeps live in its key/value loop (see TileConfig.cpp for the
/// heuristic). Used to warn about overrides that obviously spill; the
/// defaults stay below kMaxRegistersPerThread.
int64_t estimateRegistersPerThread(const TileConfig &config, int64_t headDim);

/// Shared-memory layout of a tile program (codegen places buffers by it):
/// each tile starts on a 1024-byte boundary (the 128-byte swizzle atom),
/// then one 8-byte mbarrier per tile, plus 1024 bytes of slack to align
/// the dynamic shared-memory base at run time.
constexpr int64_t kSmemTileAlignment = 1024;
constexpr int64_t kMbarrierBytes = 8;

/// One shared-memory allocation of a tile program: a buffer (`stages` 0,
/// one mbarrier) or a pipe of `stages` buffers (a full and an empty mbarrier
/// per stage).
struct SmemAllocation {
  int64_t tileBytes = 0;
  int64_t stages = 0;
};

/// Dynamic shared memory (bytes) of that layout for these allocations.
int64_t sharedMemoryLayoutBytes(llvm::ArrayRef<SmemAllocation> allocations);

/// Shared memory (bytes) the kernel of `config` needs: Q, K and V tiles
/// (with `config.stages` > 0, pipes: Q one stage, K and V `stages` each).
int64_t sharedMemoryBytes(const TileConfig &config, int64_t headDim);

/// The most dynamic shared memory one CTA may use on the target.
int64_t maxSharedMemoryBytes(TargetKind target);

} // namespace mlir::attn

#endif // ATTN_PASSES_TILECONFIG_H
