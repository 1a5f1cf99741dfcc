//===- TileBuilder.h - what attn-tile's program builders share -*- C++ -*-===//
//
// The builder, location, tile config and tile types that the dense
// (Tile.cpp) and KV-cache (TileKvCache.cpp) tile programs are made of.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_PASSES_LIB_TILEBUILDER_H
#define ATTN_PASSES_LIB_TILEBUILDER_H

#include "attn/Dialect/AttnDialect.h"
#include "attn/Passes/TileConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// FP8's P is scaled by 2^8 before its cast to e4m3 (FlashAttention-3's
/// max offset): P's largest values then sit near e4m3's largest normal
/// numbers instead of far below its smallest.
inline constexpr int64_t kFp8ProbsLog2Scale = 8;

/// Builds tile-program IR in front of a problem op (which it then replaces).
class TileBuilder {
protected:
  TileBuilder(Operation *problem, const TileConfig &config, TargetKind target,
              int64_t headDim, Type elementType, int64_t headDimV = 0)
      : config(config), target(target), b(problem), loc(problem->getLoc()),
        headDim(headDim), headDimV(headDimV), elementType(elementType) {}

  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  /// An f32 accumulator of the CTA's query rows by `cols`.
  RegTileType accType(int64_t cols) {
    return RegTileType::get(b.getContext(), {config.blockM, cols},
                            b.getF32Type(), FragmentKind::acc);
  }
  /// One f32 per query row (running max, sum).
  RegTileType rowType() {
    return RegTileType::get(b.getContext(), {config.blockM}, b.getF32Type(),
                            FragmentKind::row);
  }
  /// A Q, K or V tile: the head dim (or `headDimCols`, V's when it has its
  /// own) padded to the MMA's k step, in the kernel's swizzle: the widest
  /// that divides every tile (TileConfig.h draws the layout).
  SmemTileType smemType(int64_t rows, int64_t headDimCols = 0) {
    int64_t cols = smemTileCols(headDimCols ? headDimCols : headDim);
    if (isa<Float8E4M3FNType>(elementType))
      return fp8TileType(rows, cols);
    return SmemTileType::get(b.getContext(), {rows, cols}, elementType,
                             kernelTileSwizzle(headDim, headDimV));
  }
  /// An FP8 tile of `rows` x `cols` bytes in the widest swizzle whose
  /// span divides its rows (each tensor has its own TMA box).
  SmemTileType fp8TileType(int64_t rows, int64_t cols) {
    return SmemTileType::get(b.getContext(), {rows, cols}, elementType,
                             smemTileSwizzle(cols, /*elementBytes=*/1));
  }
  Value splat(RegTileType type, float value) {
    return SplatOp::create(b, loc, type, b.getF32FloatAttr(value));
  }

  TileConfig config;
  TargetKind target;
  OpBuilder b;
  Location loc;

private:
  int64_t headDim;
  int64_t headDimV; // 0: the head dim
  Type elementType;
};

} // namespace mlir::attn

#endif // ATTN_PASSES_LIB_TILEBUILDER_H
