//===- AttnKvCacheOps.cpp - verifiers of the KV-cache ops -----------------===//
#include "Verifiers.h"
#include "attn/Dialect/AttnDialect.h"
#include "attn/Dialect/ProblemAttributes.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::attn;

/// Rows of one 128-byte swizzle atom: a packed head's rows start on one.
static constexpr int64_t kSwizzleAtomRows = 8;

LogicalResult mlir::attn::verifyRankAndElement(Operation *op, Value value,
                                               StringRef name, int64_t rank,
                                               Type element, StringRef what) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type || type.getRank() != rank || type.getElementType() != element)
    return op->emitOpError() << "operand '" << name << "' must be a rank-"
                             << rank << " " << element << " memref " << what
                             << ", got " << value.getType();
  return success();
}

/// Checks that `type` is a rank-4 [S * B, N, H, D] f32 memref with head
/// dimension `headDim`, contiguous in it.
static LogicalResult verifyPartialOutput(Operation *op, Value value,
                                         int64_t headDim) {
  if (failed(verifyRankAndElement(op, value, "o_partial", 4,
                                  Float32Type::get(op->getContext()),
                                  "[S * B, Nq, H, D]")))
    return failure();
  auto type = cast<MemRefType>(value.getType());
  if (type.getDimSize(3) != headDim)
    return op->emitOpError() << "operand 'o_partial' has head dimension "
                             << type.getDimSize(3) << " but the output has "
                             << headDim;
  return verifyUnitLastStride(op, type, "o_partial");
}

/// Checks an optional LSE-like operand: rank-3 f32 with the identity layout.
static LogicalResult verifyRowsOperand(Operation *op, Value value,
                                       StringRef name, StringRef what) {
  if (failed(verifyRankAndElement(op, value, name, 3,
                                  Float32Type::get(op->getContext()), what)))
    return failure();
  if (!cast<MemRefType>(value.getType()).getLayout().isIdentity())
    return op->emitOpError() << "operand '" << name
                             << "' must be contiguous (the identity layout)";
  return success();
}

LogicalResult mlir::attn::verifyHeadPackRows(Operation *op, int64_t headPack,
                                             int64_t rows) {
  if (headPack == 1)
    return success();
  if (rows % headPack != 0 || (rows / headPack) % kSwizzleAtomRows != 0)
    return op->emitOpError()
           << "packs " << headPack << " heads into " << rows
           << " rows; each head needs a multiple of 8 rows (rows / head_pack)";
  return success();
}

LogicalResult mlir::attn::verifyKvCacheCopy(Operation *op, Type srcType,
                                            SmemTileType dst, Value pages,
                                            int64_t headPack) {
  if (failed(verifyHeadPackRows(op, headPack, dst.getRows())))
    return failure();
  if (!pages)
    return success();
  if (headPack > 1)
    return op->emitOpError("packs heads and reads pages; only query tiles "
                           "pack heads and only key/value tiles are paged");
  if (failed(verifyRankAndElement(op, pages, "pages", 2,
                                  IntegerType::get(op->getContext(), 32),
                                  "[B, max_blocks] (the block table)")))
    return failure();
  int64_t pageSize = cast<MemRefType>(srcType).getDimSize(1);
  if (ShapedType::isDynamic(pageSize) || pageSize < kPageRowMultiple ||
      pageSize % kPageRowMultiple != 0)
    return op->emitOpError()
           << "reads pages of "
           << (ShapedType::isDynamic(pageSize) ? std::string("?")
                                               : std::to_string(pageSize))
           << " rows; a paged source needs a static page size (dimension 1) "
              "that is a positive multiple of 16";
  int64_t rows = dst.getRows();
  if (pageSize % rows != 0 && rows % pageSize != 0)
    return op->emitOpError()
           << "copies " << rows << "-row tiles from pages of " << pageSize
           << " rows; a tile must lie in one page or cover whole pages";
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionKvCacheOp
//===----------------------------------------------------------------------===//

int64_t AttentionKvCacheOp::getHeadDim() {
  return cast<MemRefType>(getQ().getType()).getDimSize(3);
}

int64_t AttentionKvCacheOp::getHeadDimV() {
  return cast<MemRefType>(getVCache().getType()).getDimSize(3);
}

Type AttentionKvCacheOp::getElementType() {
  return cast<MemRefType>(getQ().getType()).getElementType();
}

/// flash_attn_with_kvcache's problem: a causal mask is bottom-right, per
/// sequence.
AttentionProblem AttentionKvCacheOp::problem() {
  AttentionProblem problem;
  problem.dtype = isa<Float8E4M3FNType>(getElementType()) ? DType::e4m3
                  : getElementType().isBF16()              ? DType::bf16
                                                           : DType::f16;
  problem.headDim = getHeadDim();
  if (getHeadDimV() != getHeadDim())
    problem.headDimV = getHeadDimV();
  // An FP8 value cache is row-major, as the key cache (the kernel
  // transposes its tiles).
  problem.vRowMajor = problem.dtype == DType::e4m3;
  // ALiBi measures from the same diagonal.
  if (hasDiagonal() || getAlibiSlopes())
    problem.causalAlign = CausalAlign::bottom_right;
  problem.withLse = getLse() != nullptr;
  problem.kvCache = true;
  problem.pageSize = getPageSize();
  problem.splitKv = isSplit();
  problem.alibi = getAlibiSlopes() != nullptr;
  readProblemAttributes(*this, problem);
  return problem;
}

AttentionProblem CombineSplitsOp::problem() {
  auto o = cast<MemRefType>(getO().getType());
  AttentionProblem problem;
  problem.dtype = o.getElementType().isBF16() ? DType::bf16 : DType::f16;
  problem.headDim = o.getDimSize(o.getRank() - 1);
  problem.scale = 1.0;
  problem.withLse = getLse() != nullptr;
  problem.combine = true;
  readProblemAttributes(*this, problem);
  return problem;
}

int64_t AttentionKvCacheOp::getPageSize() {
  if (!getBlockTable())
    return 0;
  return cast<MemRefType>(getKCache().getType()).getDimSize(1);
}

/// FP8 decoding's output and descales: O bf16 with V's head dim, and the
/// three f32 [B, Hkv] descales.
static LogicalResult verifyFp8KvCacheOperands(AttentionKvCacheOp op) {
  auto o = cast<MemRefType>(op.getO().getType());
  if (!o.getElementType().isBF16())
    return op.emitOpError() << "operand 'o' of FP8 attention must hold bf16, "
                               "got "
                            << o.getElementType();
  if (o.getDimSize(3) != op.getHeadDimV())
    return op.emitOpError() << "operand 'o' has head dimension "
                            << o.getDimSize(3) << " but 'v_cache' has "
                            << op.getHeadDimV();
  if (failed(verifyUnitLastStride(op, o, "o")))
    return failure();
  Value descales[] = {op.getQDescale(), op.getKDescale(), op.getVDescale()};
  StringRef names[] = {"q_descale", "k_descale", "v_descale"};
  for (auto [value, name] : llvm::zip(descales, names)) {
    if (!value)
      return op.emitOpError() << "has f8E4M3FN inputs but no '" << name
                              << "': FP8 decoding takes descale(q_descale, "
                                 "k_descale, v_descale), f32 [B, Hkv]";
    if (failed(verifyRankAndElement(op, value, name, 2,
                                    Float32Type::get(op.getContext()),
                                    "[B, Hkv]")))
      return failure();
  }
  return success();
}

LogicalResult AttentionKvCacheOp::verify() {
  if (failed(verifyNoUnknownAttributes(*this)))
    return failure();
  std::pair<Value, StringRef> tensors[] = {{getQ(), "q"},
                                           {getKCache(), "k_cache"},
                                           {getVCache(), "v_cache"},
                                           {getO(), "o"}};
  // FP8 q and caches (o is bf16) come with their descales.
  const bool fp8 = isa<Float8E4M3FNType>(getElementType());
  for (auto [value, name] : tensors)
    if (failed(verifyDataMemRef(*this, value.getType(), name,
                                /*packed=*/false, fp8 && name != "o")))
      return failure();
  // Q and the key cache share the head dim; the value cache and O have the
  // value head dim (the same unless V has its own).
  int64_t headDim = getHeadDim(), headDimV = getHeadDimV();
  if (failed(verifyDataOperands(*this, ArrayRef(tensors).take_front(2),
                                getElementType(), headDim)) ||
      failed(verifyDataOperands(*this, ArrayRef(tensors).slice(2, fp8 ? 1 : 2),
                                getElementType(), headDimV, "v_cache")))
    return failure();
  if (fp8 && failed(verifyFp8KvCacheOperands(*this)))
    return failure();
  if (!fp8 && (getQDescale() || getKDescale() || getVDescale()))
    return emitOpError("has descales but its q and caches are not FP8: "
                       "descales come with f8E4M3FN q, k_cache and v_cache; "
                       "drop them");
  MLIRContext *ctx = getContext();
  Type i32 = IntegerType::get(ctx, 32);
  if (failed(verifyRankAndElement(*this, getCacheSeqlens(), "cache_seqlens",
                                  1, i32, "[B]")))
    return failure();
  auto kType = cast<MemRefType>(getKCache().getType());
  auto vType = cast<MemRefType>(getVCache().getType());
  if (kType.getShape().drop_back() != vType.getShape().drop_back())
    return emitOpError() << "k_cache " << kType << " and v_cache " << vType
                         << " must have the same shape but for the head dim";
  if (Value table = getBlockTable()) {
    if (failed(verifyRankAndElement(*this, table, "block_table", 2, i32,
                                    "[B, max_blocks]")))
      return failure();
    int64_t pageSize = kType.getDimSize(1);
    if (ShapedType::isDynamic(pageSize) || pageSize < kPageRowMultiple ||
        pageSize % kPageRowMultiple != 0)
      return emitOpError()
             << "a paged cache needs a static page size (k_cache dimension "
                "1) that is a positive multiple of 16, got "
             << (ShapedType::isDynamic(pageSize) ? std::string("?")
                                                 : std::to_string(pageSize));
  }
  if (Value lse = getLse())
    if (failed(verifyRowsOperand(*this, lse, "lse", "[B, H, Nq]")))
      return failure();
  if (Value slopes = getAlibiSlopes())
    if (failed(verifyAlibiSlopes(*this, slopes.getType())))
      return failure();
  if (bool(getOPartial()) != bool(getLsePartial()))
    return emitOpError("needs both partial outputs (o_partial and "
                       "lse_partial) or neither");
  if (Value partial = getOPartial()) {
    if (failed(verifyPartialOutput(*this, partial, headDimV)) ||
        failed(verifyRowsOperand(*this, getLsePartial(), "lse_partial",
                                 "[S * B, H, Nq]")))
      return failure();
  }
  // Static head counts: H a multiple of Hkv, and the pack of their ratio.
  auto qType = cast<MemRefType>(getQ().getType());
  int64_t heads = qType.getDimSize(2), kvHeads = kType.getDimSize(2);
  if (failed(verifyHeadGroups(*this, heads, kvHeads)))
    return failure();
  if (!ShapedType::isDynamic(heads) && !ShapedType::isDynamic(kvHeads) &&
      (heads / kvHeads) % headPack() != 0)
    return emitOpError() << "head_pack = " << headPack() << " must divide the "
                         << heads / kvHeads
                         << " query heads that share a key/value head";
  if (failed(verifyScaleAndSoftcap(*this, getScale(), getSoftcap())) ||
      failed(verifyMaskBounds(*this, getCausal(), CausalAlignAttr(),
                              getWindowLeftAttr(), getWindowRightAttr())))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// CombineSplitsOp
//===----------------------------------------------------------------------===//

LogicalResult CombineSplitsOp::verify() {
  if (failed(verifyNoUnknownAttributes(*this)))
    return failure();
  if (failed(verifyBNHDMemRef(*this, getO().getType(), "o")))
    return failure();
  auto oType = cast<MemRefType>(getO().getType());
  if (failed(verifyUnitLastStride(*this, oType, "o")) ||
      failed(verifyPartialOutput(*this, getOPartial(), oType.getDimSize(3))) ||
      failed(verifyRowsOperand(*this, getLsePartial(), "lse_partial",
                               "[S * B, H, Nq]")))
    return failure();
  if (Value lse = getLse())
    if (failed(verifyRowsOperand(*this, lse, "lse", "[B, H, Nq]")))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Tile-level ops
//===----------------------------------------------------------------------===//

LogicalResult LoadIndexOp::verify() {
  return verifyRankAndElement(*this, getSrc(), "src", 1,
                              IntegerType::get(getContext(), 32), "[N]");
}

LogicalResult LoadOp::verify() {
  auto result = cast<RegTileType>(getResult().getType());
  if (result.getFragment() != FragmentKind::acc)
    return emitOpError() << "result must be an 'acc' register tile, got "
                         << result;
  // f32 (a split kernel's partial outputs), or 16-bit (the backward's O
  // and dO, widened).
  // A packed batch's (indexed by a sequence) is [total, H, D].
  bool packed = isa<SeqType>(getBatch().getType());
  int64_t rank = packed ? 3 : 4;
  auto src = dyn_cast<MemRefType>(getSrc().getType());
  if (!src || src.getRank() != rank ||
      !(src.getElementType().isF32() || src.getElementType().isF16() ||
        src.getElementType().isBF16()))
    return emitOpError() << "operand 'src' must be a rank-" << rank
                         << " memref "
                         << (packed ? "[total, H, D]" : "[B, N, H, D]")
                         << " of f32, f16 or bf16, got " << getSrc().getType();
  if (src.getDimSize(rank - 1) != result.getShape()[1])
    return emitOpError() << "tile has " << result.getShape()[1]
                         << " columns but the source head dimension is "
                         << src.getDimSize(rank - 1);
  return verifyHeadPackRows(*this, headPack(), result.getRows());
}

LogicalResult LoadRowsOp::verify() {
  auto result = cast<RegTileType>(getResult().getType());
  if (!result.isRow())
    return emitOpError() << "result must be a 'row' register tile, got "
                         << result;
  bool packed = isa<SeqType>(getBatch().getType());
  if (failed(verifyRankAndElement(*this, getSrc(), "src", packed ? 2 : 3,
                                  Float32Type::get(getContext()),
                                  packed ? "[H, total]" : "[B, H, N]")))
    return failure();
  return verifyHeadPackRows(*this, headPack(), result.getRows());
}
