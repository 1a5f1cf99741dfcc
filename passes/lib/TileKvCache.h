//===- TileKvCache.h - attn-tile for KV-cache and combine kernels -*- C++ -*-===//
//
// attn-tile's builders for the decoding kernels (TileKvCache.cpp,
// TileCombine.cpp); Tile.cpp dispatches to them by problem op.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_PASSES_LIB_TILEKVCACHE_H
#define ATTN_PASSES_LIB_TILEKVCACHE_H

#include "attn/Passes/TileConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::attn {

/// Checks that `op` sits alone in `func`, whose arguments are exactly its
/// operands in order: the function becomes the kernel, its arguments the
/// kernel's tensors.
LogicalResult checkProblemKernelShape(Operation *op, func::FuncOp func);

/// Rewrites the function of an attn.attention_kvcache into its tile program
/// with `config` for `target`, setting the kernel's attributes (tiling,
/// tensor roles, grid rule, scale, causal, KV-cache facts).
void tileKvCache(AttentionKvCacheOp op, func::FuncOp func,
                 const TileConfig &config, TargetKind target);

/// The same for an attn.combine_splits.
void tileCombine(CombineSplitsOp op, func::FuncOp func,
                 const TileConfig &config);

} // namespace mlir::attn

#endif // ATTN_PASSES_LIB_TILEKVCACHE_H
