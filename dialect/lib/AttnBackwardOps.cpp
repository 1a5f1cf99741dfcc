//===- AttnBackwardOps.cpp - the backward pass's ops ----------------------===//
#include "Verifiers.h"
#include "attn/Dialect/AttnDialect.h"
#include "attn/Dialect/ProblemAttributes.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::attn;

//===----------------------------------------------------------------------===//
// AttentionBackwardOp
//===----------------------------------------------------------------------===//

int64_t AttentionBackwardOp::getHeadDim() {
  auto q = cast<MemRefType>(getQ().getType());
  return q.getDimSize(q.getRank() - 1);
}

int64_t AttentionBackwardOp::getHeadDimV() {
  auto v = cast<MemRefType>(getV().getType());
  return v.getDimSize(v.getRank() - 1);
}

Type AttentionBackwardOp::getElementType() {
  return cast<MemRefType>(getQ().getType()).getElementType();
}

AttentionProblem AttentionBackwardOp::problem() {
  AttentionProblem problem;
  problem.dtype = getElementType().isBF16() ? DType::bf16 : DType::f16;
  problem.headDim = getHeadDim();
  if (getHeadDimV() != getHeadDim())
    problem.headDimV = getHeadDimV();
  // The LSE is an input here: the forward's output, which the backward
  // always reads.
  problem.withLse = true;
  problem.varlen = isVarlen();
  problem.alibi = getAlibiSlopes() != nullptr;
  readProblemAttributes(*this, problem);
  return problem;
}

/// Checks that `value` is a [B, H, N] (packed: [H, total]) contiguous f32
/// memref: the LSE and delta.
static LogicalResult verifyRowsMemRef(Operation *op, Value value,
                                      StringRef name, bool packed) {
  auto type = dyn_cast<MemRefType>(value.getType());
  int64_t rank = packed ? 2 : 3;
  if (!type || type.getRank() != rank || !type.getElementType().isF32())
    return op->emitOpError()
           << "operand '" << name << "' must be a rank-" << rank
           << " f32 memref " << (packed ? "[H, total_q]" : "[B, H, Nq]")
           << ", got " << value.getType();
  if (!type.getLayout().isIdentity())
    return op->emitOpError() << "operand '" << name
                             << "' must be contiguous (the identity layout), "
                                "got "
                             << type;
  return success();
}

LogicalResult AttentionBackwardOp::verify() {
  if (failed(verifyNoUnknownAttributes(*this)))
    return failure();
  if (getBackward() == BackwardPart::none)
    return emitOpError("needs backward = #attn.backward<dq>, <dkdv>, <pre>, "
                       "<fused> or <post>: the kernel it stands for");
  bool packed = getCuSeqlensQ() || getCuSeqlensK();
  if (accumulatesDq() != (getDqAccum() != nullptr))
    return emitOpError()
           << "backward = #attn.backward<"
           << stringifyBackwardPart(getBackward()) << "> "
           << (accumulatesDq() ? "needs" : "takes no")
           << " dq_accum operand (the one-kernel backward's f32 dQ "
              "accumulator: pre, fused and post take it)";
  if (Value accum = getDqAccum()) {
    auto type = dyn_cast<MemRefType>(accum.getType());
    int64_t rank = packed ? 3 : 4;
    if (!type || type.getRank() != rank || !type.getElementType().isF32() ||
        !type.getLayout().isIdentity() ||
        type.getShape().back() != getHeadDim())
      return emitOpError() << "operand 'dq_accum' must be a contiguous f32 "
                           << (packed ? "[total_q, H, D]" : "[B, Nq, H, D]")
                           << " memref with q's head dim " << getHeadDim()
                           << ", got " << accum.getType();
  }
  if (packed &&
      failed(verifyCuSeqlens(*this, getCuSeqlensQ(), getCuSeqlensK())))
    return failure();
  // q, k, dq and dk have the head dim; v, o, dout and dv the value head dim
  // (DeepSeek's 192/128), the same unless the problem says otherwise.
  std::pair<Value, StringRef> tensors[] = {
      {getQ(), "q"},   {getK(), "k"},   {getDq(), "dq"},
      {getDk(), "dk"}, {getV(), "v"},   {getO(), "o"},
      {getDout(), "dout"}, {getDv(), "dv"}};
  for (auto [value, name] : tensors)
    if (failed(verifyDataMemRef(*this, value.getType(), name, packed)))
      return failure();
  if (failed(verifyDataOperands(*this, ArrayRef(tensors).take_front(4),
                                getElementType(), getHeadDim())) ||
      failed(verifyDataOperands(*this, ArrayRef(tensors).drop_front(4),
                                getElementType(), getHeadDimV(), "v")))
    return failure();
  if (failed(verifyRowsMemRef(*this, getLse(), "lse", packed)) ||
      failed(verifyRowsMemRef(*this, getDelta(), "delta", packed)))
    return failure();
  unsigned shift = packed ? 1 : 0;
  SmallVector<DimRef> batch, queries, keys, heads, kvHeads;
  for (auto [value, name] : tensors) {
    batch.push_back({value, name, 0});
    bool query = name == "q" || name == "o" || name == "dout" || name == "dq";
    (query ? queries : keys).push_back({value, name, 1 - shift});
    (query ? heads : kvHeads).push_back({value, name, 2 - shift});
  }
  if (Value accum = getDqAccum()) {
    batch.push_back({accum, "dq_accum", 0});
    queries.push_back({accum, "dq_accum", 1 - shift});
    heads.push_back({accum, "dq_accum", 2 - shift});
  }
  for (auto [value, name] :
       {std::pair(getLse(), "lse"), std::pair(getDelta(), "delta")}) {
    batch.push_back({value, name, 0});
    heads.push_back({value, name, 1 - shift});
    queries.push_back({value, name, 2 - shift});
  }
  if ((!packed && failed(verifySameSize(*this, "batch size", batch))) ||
      failed(verifySameSize(*this, packed ? "total query rows" : "query length",
                            queries)) ||
      failed(verifySameSize(*this, packed ? "total key rows" : "key length",
                            keys)))
    return failure();
  FailureOr<int64_t> numHeads = verifySameSize(*this, "number of heads", heads);
  FailureOr<int64_t> numKvHeads =
      verifySameSize(*this, "number of key/value heads", kvHeads);
  if (failed(numHeads) || failed(numKvHeads) ||
      failed(verifyHeadGroups(*this, *numHeads, *numKvHeads)) ||
      failed(verifyScaleAndSoftcap(*this, getScale(), getSoftcap())))
    return failure();
  if (Value slopes = getAlibiSlopes())
    if (failed(verifyAlibiSlopes(*this, slopes.getType())))
      return failure();
  // ALiBi measures from the diagonal: causal_align places it even without
  // a mask.
  return verifyMaskBounds(
      *this, getCausal(), getAlibiSlopes() ? CausalAlignAttr() : getCausalAlignAttr(),
      getWindowLeftAttr(), getWindowRightAttr());
}

//===----------------------------------------------------------------------===//
// Tile ops
//===----------------------------------------------------------------------===//

/// Checks that `vector` is a `row` or `col` vector as long as the rows or
/// the columns of the acc tile `tile`.
static LogicalResult verifyBroadcastVector(Operation *op, Type tile,
                                           Type vector, StringRef name) {
  auto tileType = cast<RegTileType>(tile);
  auto vectorType = cast<RegTileType>(vector);
  if (tileType.getFragment() != FragmentKind::acc)
    return op->emitOpError() << "needs an 'acc' register tile, got " << tile;
  if (!vectorType.isVector())
    return op->emitOpError() << "'" << name
                             << "' must be a 'row' or 'col' register tile, "
                                "got "
                             << vector;
  int64_t extent = vectorType.isRow() ? tileType.getShape()[0]
                                      : tileType.getShape()[1];
  if (vectorType.getShape()[0] != extent)
    return op->emitOpError()
           << "'" << name << "' has " << vectorType.getShape()[0]
           << " entries but the tile has " << extent
           << (vectorType.isRow() ? " rows" : " columns");
  return success();
}

LogicalResult LoadColsOp::verify() {
  auto result = cast<RegTileType>(getResult().getType());
  if (!result.isCol() && !result.isLanes())
    return emitOpError() << "result must be a 'col' or 'lanes' register "
                            "tile, got "
                         << result;
  if (result.isLanes() && getExp2Bias())
    return emitOpError() << "loads into 'lanes' untransformed: put "
                            "'exp2_bias' on the attn.spread_cols that reads "
                            "the result";
  auto src = dyn_cast<MemRefType>(getSrc().getType());
  int64_t rank = isa<SeqType>(getBatch().getType()) ? 2 : 3;
  if (!src || src.getRank() != rank || !src.getElementType().isF32())
    return emitOpError() << "source must be a rank-" << rank
                         << " f32 memref, got " << getSrc().getType();
  return success();
}

LogicalResult SpreadColsOp::verify() {
  auto input = cast<RegTileType>(getInput().getType());
  auto result = cast<RegTileType>(getResult().getType());
  if (!input.isLanes() || !result.isCol() ||
      input.getShape() != result.getShape())
    return emitOpError() << "spreads a 'lanes' vector into a 'col' one of "
                            "the same length, got "
                         << input << " -> " << result;
  return success();
}

LogicalResult RecomputeProbsOp::verify() {
  return verifyBroadcastVector(*this, getInput().getType(),
                               getLse().getType(), "lse");
}

LogicalResult SoftmaxGradOp::verify() {
  if (Value tanh = getTanh())
    if (tanh.getType() != getProbs().getType())
      return emitOpError() << "'tanh' must have the type of 'probs', got "
                           << tanh.getType();
  return verifyBroadcastVector(*this, getProbs().getType(),
                               getDelta().getType(), "delta");
}

LogicalResult DqMmaOp::verify() {
  bool wgmma = getTarget(*this) == TargetKind::sm_90a;
  if (!wgmma && getAsync())
    return emitOpError("is asynchronous only on sm_90a (wgmma); sm_80's "
                       "mma.sync is synchronous: drop 'async'");
  SmemTileType k = getK().getType(), ds = getDs().getType();
  for (auto [tile, name] : {std::pair(k, "k"), std::pair(ds, "ds")})
    if (tile.getElementType().getIntOrFloatBitWidth() != 16 ||
        tile.getSwizzle() == 0)
      return emitOpError() << "'" << name
                           << "' must be a swizzled tile of f16 or bf16, got "
                           << tile;
  if (k.getElementType() != ds.getElementType())
    return emitOpError() << "'k' and 'ds' must hold one element type, got "
                         << k << " and " << ds;
  if (k.getRows() != ds.getRows() || k.getRows() % (wgmma ? 64 : 16) != 0)
    return emitOpError() << "'k' and 'ds' must have the same rows (the "
                            "block's keys), "
                         << (wgmma ? "64 per consumer warpgroup"
                                   : "a multiple of 16 (mma.sync's k)")
                         << "; got " << k.getRows() << " and " << ds.getRows();
  int64_t queries = ds.getCols();
  if (!wgmma) {
    // The whole dQ^T [D x Bq]: D rows in 16-row slices of every warp.
    auto block = cast<RegTileType>(getResult().getType());
    if (block.getFragment() != FragmentKind::acc ||
        block.getRows() != k.getCols() || block.getShape()[1] != queries ||
        queries % 16 != 0)
      return emitOpError() << "result must be the 'acc' tile dQ^T of "
                           << k.getCols() << " rows (the head dim) and "
                           << queries << " columns (a multiple of 16), got "
                           << block;
    return success();
  }
  if (queries % 16 != 0 || queries > 256)
    return emitOpError() << "'ds' must have 16 to 256 columns (queries, a "
                            "multiple of 16: the wgmma's N), got "
                         << queries;
  auto block = cast<RegTileType>(getResult().getType());
  if (block.getFragment() != FragmentKind::acc || block.getRows() % 64 != 0 ||
      block.getShape()[1] > queries)
    return emitOpError() << "result must be an 'acc' tile of 64 rows per "
                            "consumer warpgroup and at most "
                         << queries << " columns, got " << block;
  return success();
}

LogicalResult AccumulateDqOp::verify() {
  bool tma = getTarget(*this) == TargetKind::sm_90a;
  if (tma != static_cast<bool>(getStage()))
    return emitOpError() << (tma ? "drains through an f32 'stage' tile on "
                                   "sm_90a (the TMA reduces from shared "
                                   "memory); give one"
                                 : "adds from registers on sm_80 (no TMA): "
                                   "drop the 'stage' tile");
  auto block = cast<RegTileType>(getBlock().getType());
  auto dst = dyn_cast<MemRefType>(getDst().getType());
  bool packed = isa<SeqType>(getBatch().getType());
  if (!tma) {
    // sm_80 stops each sequence's reductions at its end: a packed
    // [total, H, D] accumulator addressed by a sequence works too.
    if (!dst || dst.getRank() != (packed ? 3 : 4) ||
        !dst.getElementType().isF32() ||
        ShapedType::isDynamic(dst.getShape().back()))
      return emitOpError() << "'dst' must be an f32 memref with a static head "
                              "dim: [B, N, H, D] addressed by a batch index, "
                              "or a packed [total, H, D] by a sequence; got "
                           << getDst().getType();
  } else if (packed || !dst || dst.getRank() != 4 ||
             !dst.getElementType().isF32()) {
    // Dense only: the TMA clips boxes at the tensor's rows, so a packed
    // batch's next sequence would get this one's sums.
    return emitOpError() << "'dst' must be a dense [B, N, H, D] f32 memref "
                            "addressed by a batch index, got "
                         << getDst().getType();
  }
  if (!tma) {
    if (block.getFragment() != FragmentKind::acc ||
        block.getRows() != dst.getShape().back())
      return emitOpError() << "'block' must be attn.dq_mma's 'acc' tile of "
                           << dst.getShape().back()
                           << " rows (dQ^T: the head dim), got " << block;
    return success();
  }
  if (block.getFragment() != FragmentKind::acc || block.getRows() % 64 != 0)
    return emitOpError() << "'block' must be attn.dq_mma's 'acc' tile of 64 "
                            "rows per consumer warpgroup, got "
                         << block;
  SmemTileType stage = getStage().getType();
  int64_t warpgroups = block.getRows() / 64;
  if (!stage.getElementType().isF32() || stage.getSwizzle() != 128 ||
      stage.getCols() != 64 ||
      stage.getRows() != warpgroups * block.getShape()[1])
    return emitOpError() << "'stage' must be an f32 tile of 64 columns with "
                            "a 128-byte swizzle (the TMA's boxes of 32) and "
                         << warpgroups * block.getShape()[1]
                         << " rows (the block's columns per warpgroup), got "
                         << stage;
  int64_t headDim = dst.getShape().back();
  if (ShapedType::isDynamic(headDim) || headDim % 64 != 0)
    return emitOpError() << "'dst' must have a static head dim that is a "
                            "multiple of 64, got "
                         << dst;
  return success();
}

LogicalResult RowDotOp::verify() {
  auto tile = cast<RegTileType>(getLhs().getType());
  auto result = cast<RegTileType>(getResult().getType());
  if (tile.getFragment() != FragmentKind::acc)
    return emitOpError() << "needs 'acc' register tiles, got " << tile;
  if (!result.isRow() || result.getRows() != tile.getRows())
    return emitOpError() << "result must be a 'row' register tile of "
                         << tile.getRows() << " rows, got " << result;
  return success();
}

LogicalResult ConvertRowsOp::verify() {
  // A packed batch's (indexed by a sequence) tensors are [total, H, D].
  bool packed = isa<SeqType>(getBatch().getType());
  int64_t rank = packed ? 3 : 4;
  const char *shape = packed ? "[total, H, D]" : "[B, N, H, D]";
  auto src = dyn_cast<MemRefType>(getSrc().getType());
  auto dst = dyn_cast<MemRefType>(getDst().getType());
  if (!src || src.getRank() != rank || !src.getElementType().isF32())
    return emitOpError() << "'src' must be a rank-" << rank << " " << shape
                         << " f32 memref, got " << getSrc().getType();
  if (!dst || dst.getRank() != rank ||
      !(dst.getElementType().isF16() || dst.getElementType().isBF16()))
    return emitOpError() << "'dst' must be a rank-" << rank << " " << shape
                         << " f16 or bf16 memref, got " << getDst().getType();
  int64_t headDim = src.getShape().back();
  if (ShapedType::isDynamic(headDim) || headDim % 4 != 0 ||
      dst.getShape().back() != headDim)
    return emitOpError() << "'src' and 'dst' must have the same static head "
                            "dim, a multiple of 4 (16-byte runs of f32), got "
                         << getSrc().getType() << " and " << getDst().getType();
  return success();
}

LogicalResult DotRowsOp::verify() {
  bool packed = isa<SeqType>(getBatch().getType());
  int64_t rank = packed ? 3 : 4;
  const char *shape = packed ? "[total, H, D]" : "[B, N, H, D]";
  auto lhs = dyn_cast<MemRefType>(getLhs().getType());
  if (!lhs || lhs.getRank() != rank ||
      !(lhs.getElementType().isF16() || lhs.getElementType().isBF16()))
    return emitOpError() << "'lhs' must be a rank-" << rank << " " << shape
                         << " f16 or bf16 memref, got " << getLhs().getType();
  if (getRhs().getType() != getLhs().getType())
    return emitOpError() << "'rhs' must have the type of 'lhs' ("
                         << getLhs().getType() << "), got "
                         << getRhs().getType();
  int64_t headDim = lhs.getShape().back();
  if (ShapedType::isDynamic(headDim) || headDim % 8 != 0 ||
      !llvm::isPowerOf2_64(headDim / 8) || headDim / 8 > 32)
    return emitOpError() << "the head dim must be static and 8 times a power "
                            "of two up to 256 (a row's 16-byte runs reduce "
                            "within a warp), got "
                         << getLhs().getType();
  auto dst = dyn_cast<MemRefType>(getDst().getType());
  if (!dst || dst.getRank() != rank - 1 || !dst.getElementType().isF32())
    return emitOpError() << "'dst' must be a rank-" << rank - 1 << " "
                         << (packed ? "[H, total]" : "[B, H, N]")
                         << " f32 memref, got " << getDst().getType();
  return success();
}

LogicalResult ClearRowsOp::verify() {
  bool packed = isa<SeqType>(getBatch().getType());
  int64_t rank = packed ? 3 : 4;
  auto dst = dyn_cast<MemRefType>(getDst().getType());
  if (!dst || dst.getRank() != rank || !dst.getElementType().isF32() ||
      ShapedType::isDynamic(dst.getShape().back()) ||
      dst.getShape().back() % 4 != 0)
    return emitOpError() << "'dst' must be a rank-" << rank << " "
                         << (packed ? "[total, H, D]" : "[B, N, H, D]")
                         << " f32 memref with a static head dim that is a "
                            "multiple of 4 (16-byte runs), got "
                         << getDst().getType();
  return success();
}
