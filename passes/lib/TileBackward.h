//===- TileBackward.h - attn-tile for the backward kernels -----*- C++ -*-===//
//
// attn-tile's builder for attn.attention_backward (TileBackward.cpp);
// Tile.cpp dispatches to it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_PASSES_LIB_TILEBACKWARD_H
#define ATTN_PASSES_LIB_TILEBACKWARD_H

#include "attn/Dialect/AttnDialect.h"
#include "attn/Passes/TileConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::attn {

/// Rewrites the function of an attn.attention_backward into the tile program
/// of its kernel (dq or dkdv) with `config` for `target`, setting the
/// kernel's attributes (tensor roles, grid rule, problem).
LogicalResult tileBackward(AttentionBackwardOp op, func::FuncOp func,
                           const TileConfig &config, TargetKind target);

} // namespace mlir::attn

#endif // ATTN_PASSES_LIB_TILEBACKWARD_H
