//===- AttnOps.cpp - attn operations: verifiers and builders --------------===//
#include "attn/Dialect/AttnDialect.h"
#include "attn/Dialect/ProblemAttributes.h"
#include "Verifiers.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <cstdint>
#include <limits>

using namespace mlir;
using namespace mlir::attn;

//===----------------------------------------------------------------------===//
// The batch operand of the tile ops: an index into a [B, N, H, D] tensor or
// the !attn.seq of a packed one. Its type follows from the tensor's rank, so
// the custom syntax leaves it out.
//===----------------------------------------------------------------------===//

/// Rank of a packed data tensor [total, H, D] and of a packed row-vector
/// tensor [H, total] (the dense ones have one more: the batch).
static constexpr int64_t kPackedDataRank = 3;
static constexpr int64_t kPackedRowsRank = 2;

/// `!attn.seq` when `tensor` has the packed rank, else `index`.
static Type batchTypeFor(Type tensor, int64_t packedRank) {
  auto memref = dyn_cast<MemRefType>(tensor);
  if (memref && memref.getRank() == packedRank)
    return SeqType::get(tensor.getContext());
  return IndexType::get(tensor.getContext());
}

/// Parses a tile op's tensor type and derives its batch operand's type.
static ParseResult parseTensorType(OpAsmParser &parser, Type &tensorType,
                                   Type &batchType, int64_t packedRank) {
  if (parser.parseType(tensorType))
    return failure();
  batchType = batchTypeFor(tensorType, packedRank);
  return success();
}
static ParseResult parseDataTensorType(OpAsmParser &parser, Type &tensorType,
                                       Type &batchType) {
  return parseTensorType(parser, tensorType, batchType, kPackedDataRank);
}
static ParseResult parseRowsTensorType(OpAsmParser &parser, Type &tensorType,
                                       Type &batchType) {
  return parseTensorType(parser, tensorType, batchType, kPackedRowsRank);
}
static void printDataTensorType(OpAsmPrinter &printer, Operation *,
                                Type tensorType, Type) {
  printer << tensorType;
}
static void printRowsTensorType(OpAsmPrinter &printer, Operation *,
                                Type tensorType, Type) {
  printer << tensorType;
}

#define GET_OP_CLASSES
#include "attn/Dialect/AttnOps.cpp.inc"

/// Checks that `type` is a memref of f16/bf16 whose head dimension is
/// static, of rank 4 [B, N, H, D], or with `packed` of rank 3 [total, H, D]
/// (a variable-length batch); `name` names the operand in diagnostics.
LogicalResult mlir::attn::verifyDataMemRef(Operation *op, Type type,
                                           StringRef name, bool packed,
                                           bool fp8) {
  auto memref = dyn_cast<MemRefType>(type);
  if (packed && (!memref || memref.getRank() != kPackedDataRank))
    return op->emitOpError()
           << "operand '" << name
           << "' must be a rank-3 memref [total, H, D] (a packed, "
              "variable-length batch), got "
           << type;
  if (!packed && (!memref || memref.getRank() != 4))
    return op->emitOpError() << "operand '" << name
                             << "' must be a rank-4 memref [B, N, H, D], got "
                             << type;
  Type element = memref.getElementType();
  if (fp8 && !isa<Float8E4M3FNType>(element))
    return op->emitOpError() << "operand '" << name
                             << "' must hold f8E4M3FN as 'q' does, got "
                             << element;
  if (!fp8 && !element.isF16() && !element.isBF16())
    return op->emitOpError()
           << "operand '" << name << "' must hold f16 or bf16"
           << (name == "o" ? " (bf16 with FP8 inputs)" : "") << ", got "
           << element;
  if (memref.isDynamicDim(memref.getRank() - 1))
    return op->emitOpError() << "operand '" << name
                             << "' must have a static head dimension";
  return success();
}

LogicalResult mlir::attn::verifyBNHDMemRef(Operation *op, Type type,
                                           StringRef name) {
  return verifyDataMemRef(op, type, name, /*packed=*/false);
}


/// Checks that `row` is a row vector with one entry per row of `tile`.
static LogicalResult verifyRowVectorFor(Operation *op, Type tile, Type row,
                                        StringRef name) {
  auto tileType = cast<RegTileType>(tile);
  auto rowType = cast<RegTileType>(row);
  if (!rowType.isRow())
    return op->emitOpError() << "'" << name
                             << "' must be a 'row' register tile, got "
                             << row;
  if (rowType.getRows() != tileType.getRows())
    return op->emitOpError()
           << "'" << name << "' has " << rowType.getRows()
           << " rows but the tile has " << tileType.getRows();
  return success();
}

/// Checks that `type` is an f32 accumulator tile; `name` names the value.
static LogicalResult verifyAccTile(Operation *op, Type type, StringRef name) {
  auto tile = cast<RegTileType>(type);
  if (tile.getFragment() != FragmentKind::acc)
    return op->emitOpError() << "'" << name
                             << "' must be an 'acc' register tile, got "
                             << type;
  return success();
}

/// Largest window side: the kernels' index arithmetic is 32-bit.
static constexpr int64_t kMaxWindowSide = std::numeric_limits<int32_t>::max();

/// Checks a mask's window and alignment, shared by attn.attention,
/// attn.attention_kvcache and attn.mask: each window side in [0, 2^31 - 1], a causal window's right
/// side 0 (the causal diagonal already bounds it), and `align` only on a
/// mask with a diagonal to place (causal or a window).
LogicalResult mlir::attn::verifyMaskBounds(Operation *op, bool causal,
                                           CausalAlignAttr align,
                                           IntegerAttr windowLeft,
                                           IntegerAttr windowRight) {
  for (auto [name, side] : {std::pair<StringRef, IntegerAttr>(
                                "window_left", windowLeft),
                            {"window_right", windowRight}})
    if (side && (side.getInt() < 0 || side.getInt() > kMaxWindowSide))
      return op->emitOpError()
             << "has '" << name << "' = " << side.getInt()
             << ": a window side is 0 to " << kMaxWindowSide
             << " keys; leave it out for no bound on that side";
  if (causal && windowRight && windowRight.getInt() != 0)
    return op->emitOpError()
           << "is 'causal' with 'window_right' = " << windowRight.getInt()
           << ": a causal row sees no key right of its diagonal; drop "
              "'window_right' (or set it to 0) or drop 'causal'";
  if (align && !causal && !windowLeft && !windowRight)
    return op->emitOpError()
           << "has 'causal_align' = " << stringifyCausalAlign(align.getValue())
           << " but neither 'causal' nor a window: add 'causal' (or "
              "'window_left' / 'window_right') or drop 'causal_align'";
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

int64_t AttentionOp::getHeadDim() {
  auto q = cast<MemRefType>(getQ().getType());
  return q.getDimSize(q.getRank() - 1);
}

int64_t AttentionOp::getHeadDimV() {
  auto v = cast<MemRefType>(getV().getType());
  return v.getDimSize(v.getRank() - 1);
}

Type AttentionOp::getElementType() {
  return cast<MemRefType>(getQ().getType()).getElementType();
}

/// The operands imply the element type, head dim, LSE and packed batch; the
/// attributes of the fields' names hold the rest (readProblemAttributes).
AttentionProblem AttentionOp::problem() {
  AttentionProblem problem;
  problem.dtype = isa<Float8E4M3FNType>(getElementType()) ? DType::e4m3
                  : getElementType().isBF16()              ? DType::bf16
                                                           : DType::f16;
  problem.headDim = getHeadDim();
  if (getHeadDimV() != getHeadDim())
    problem.headDimV = getHeadDimV();
  problem.withLse = getLse() != nullptr;
  problem.varlen = isVarlen();
  problem.pageSize = getPageSize();
  problem.alibi = getAlibiSlopes() != nullptr;
  problem.blockScales =
      getQDescale() && cast<MemRefType>(getQDescale().getType()).getRank() == 3;
  problem.vRowMajor = problem.dtype == DType::e4m3 &&
                      !isKeyMajor(cast<MemRefType>(getV().getType()));
  readProblemAttributes(*this, problem);
  return problem;
}

LogicalResult mlir::attn::verifyUnitLastStride(Operation *op, MemRefType type,
                                               StringRef name) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return op->emitOpError() << "operand '" << name
                             << "' must have a strided layout, got " << type;
  if (strides.back() != 1)
    return op->emitOpError()
           << "operand '" << name
           << "' must be contiguous in its last dimension (stride 1), got "
              "stride "
           << (ShapedType::isDynamic(strides.back())
                   ? std::string("?")
                   : std::to_string(strides.back()));
  return success();
}

LogicalResult mlir::attn::verifyHeadGroups(Operation *op, int64_t heads,
                                           int64_t kvHeads) {
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(kvHeads) ||
      (kvHeads != 0 && heads % kvHeads == 0))
    return success();
  return op->emitOpError()
         << "number of heads " << heads
         << " must be a multiple of the number of key/value heads, " << kvHeads;
}

LogicalResult
mlir::attn::verifyScaleAndSoftcap(Operation *op, const APFloat &scale,
                                  std::optional<APFloat> softcap) {
  if (llvm::Error error = checkSoftmaxScale(scale.convertToFloat()))
    return op->emitOpError() << llvm::toString(std::move(error));
  if (softcap)
    if (llvm::Error error =
            checkSoftmaxScale(softcap->convertToFloat(), "softcap", "softcap"))
      return op->emitOpError() << llvm::toString(std::move(error))
                               << "; leave it out for no capping";
  return success();
}

LogicalResult
mlir::attn::verifyDataOperands(Operation *op,
                               ArrayRef<std::pair<Value, StringRef>> tensors,
                               Type element, int64_t headDim,
                               StringRef reference) {
  for (auto [value, name] : tensors) {
    auto type = cast<MemRefType>(value.getType());
    if (type.getElementType() != element)
      return op->emitOpError()
             << "operand '" << name << "' has element type "
             << type.getElementType() << " but 'q' has " << element;
    if (type.getDimSize(type.getRank() - 1) != headDim)
      return op->emitOpError()
             << "operand '" << name << "' has head dimension "
             << type.getDimSize(type.getRank() - 1) << " but '" << reference
             << "' has " << headDim;
    if (failed(verifyUnitLastStride(op, type, name)))
      return failure();
  }
  if (llvm::Error error = checkHeadDim(headDim))
    return op->emitOpError() << (reference == "q" ? "" : "value ")
                             << llvm::toString(std::move(error));
  return success();
}

/// Checks that the static sizes among `dims` (one logical size, `what`)
/// agree and returns that size, or kDynamic when all are dynamic (the
/// runtime checks those).
FailureOr<int64_t> mlir::attn::verifySameSize(Operation *op, StringRef what,
                                              ArrayRef<DimRef> dims) {
  std::optional<DimRef> first;
  int64_t size = ShapedType::kDynamic;
  for (const DimRef &ref : dims) {
    int64_t s = cast<MemRefType>(ref.value.getType()).getDimSize(ref.dim);
    if (ShapedType::isDynamic(s))
      continue;
    if (!first) {
      first = ref;
      size = s;
    } else if (s != size) {
      return op->emitOpError()
             << what << " differs: operand '" << ref.name << "' has " << s
             << " (dim " << ref.dim << ") but '" << first->name << "' has "
             << size << " (dim " << first->dim << ")";
    }
  }
  return size;
}

/// Checks the cu_seqlens operands of a varlen attn.attention: both given,
/// contiguous rank-1 i32 memrefs, of the same static length when known.
LogicalResult mlir::attn::verifyCuSeqlens(Operation *op, Value cuSeqlensQ,
                                          Value cuSeqlensK) {
  if (!cuSeqlensQ || !cuSeqlensK)
    return op->emitOpError("a variable-length batch needs both cu_seqlens_q "
                           "and cu_seqlens_k");
  for (auto [value, name] : {std::pair(cuSeqlensQ, "cu_seqlens_q"),
                             std::pair(cuSeqlensK, "cu_seqlens_k")}) {
    auto type = dyn_cast<MemRefType>(value.getType());
    if (!type || type.getRank() != 1 || !type.getElementType().isInteger(32))
      return op->emitOpError()
             << "operand '" << name
             << "' must be a rank-1 i32 memref [B + 1] (where each sequence "
                "starts), got "
             << value.getType();
    if (!type.getLayout().isIdentity())
      return op->emitOpError() << "operand '" << name
                              << "' must be contiguous (the identity layout), "
                                 "got "
                              << type;
  }
  if (failed(verifySameSize(op, "number of sequences + 1",
                            {{cuSeqlensQ, "cu_seqlens_q", 0},
                             {cuSeqlensK, "cu_seqlens_k", 0}})))
    return failure();
  return success();
}

LogicalResult mlir::attn::verifyNoUnknownAttributes(Operation *op) {
  ArrayRef<StringAttr> declared = op->getName().getAttributeNames();
  for (NamedAttribute attr : op->getDiscardableAttrs()) {
    StringRef name = attr.getName().getValue();
    if (name.contains('.'))
      continue;
    SmallVector<StringRef> names;
    StringRef nearest;
    unsigned best = ~0u;
    for (StringAttr known : declared) {
      // operandSegmentSizes is the op's bookkeeping, not an option.
      if (known.getValue() == "operandSegmentSizes")
        continue;
      names.push_back(known.getValue());
      unsigned distance = name.edit_distance(known.getValue());
      if (distance < best)
        best = distance, nearest = known.getValue();
    }
    InFlightDiagnostic diag = op->emitOpError()
                              << "has an unknown attribute '" << name
                              << "'; its attributes are "
                              << llvm::join(names, ", ");
    if (best <= 3)
      diag << " (did you mean '" << nearest << "'?)";
    return diag;
  }
  return success();
}

/// ALiBi's slopes: an f32 [B, H] memref whose heads are contiguous (its
/// batch stride may be 0: one slope per head).
LogicalResult mlir::attn::verifyAlibiSlopes(Operation *op, Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || memref.getRank() != 2 || !memref.getElementType().isF32())
    return op->emitOpError() << "operand 'alibi_slopes' must be a rank-2 f32 "
                                "memref [B, H], got "
                             << type;
  return verifyUnitLastStride(op, memref, "alibi_slopes");
}

bool mlir::attn::isKeyMajor(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return type.getRank() >= 3 &&
         succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides[type.getRank() - 3] == 1;
}

/// FP8 attention's V, O and descales: V f8E4M3FN and K-major (its keys
/// contiguous: the FP8 MMA reads both operands K-major), O bf16, and the
/// three f32 [B, Hkv] descales.
static LogicalResult verifyFp8ValueOperands(AttentionOp op) {
  auto v = cast<MemRefType>(op.getV().getType());
  auto o = cast<MemRefType>(op.getO().getType());
  if (v.getElementType() != op.getElementType())
    return op.emitOpError() << "operand 'v' has element type "
                            << v.getElementType() << " but 'q' has "
                            << op.getElementType();
  if (!o.getElementType().isBF16())
    return op.emitOpError() << "operand 'o' of FP8 attention must hold bf16, "
                               "got "
                            << o.getElementType();
  if (o.getDimSize(o.getRank() - 1) != op.getHeadDimV())
    return op.emitOpError() << "operand 'o' has head dimension "
                            << o.getDimSize(o.getRank() - 1)
                            << " but 'v' has " << op.getHeadDimV();
  if (failed(verifyUnitLastStride(op, o, "o")))
    return failure();
  // V K-major (keys contiguous, as the FP8 wgmma reads it), or row-major
  // (head dim contiguous), which the kernel transposes in shared memory.
  SmallVector<int64_t> vStrides;
  int64_t vOffset;
  bool rowMajor = succeeded(v.getStridesAndOffset(vStrides, vOffset)) &&
                  vStrides.back() == 1;
  if (!isKeyMajor(v) && !rowMajor)
    return op.emitOpError()
           << "operand 'v' of FP8 attention must be K-major, its keys "
              "contiguous (strided<[?, 1, ?, ?]>: V stored transposed, "
              "[B, Hkv, D, Nk]), or row-major with its head dim contiguous "
              "(transposed in the kernel), got "
           << v;
  Value descales[] = {op.getQDescale(), op.getKDescale(), op.getVDescale()};
  StringRef names[] = {"q_descale", "k_descale", "v_descale"};
  // Block quantization: q's, k's and v's descales per 128-row block, rank
  // 3 with the block contiguous.
  bool blocks = false;
  if (auto q = dyn_cast_or_null<MemRefType>(op.getQDescale() ? op.getQDescale().getType() : Type()))
    blocks = q.getRank() == 3;
  for (auto [value, name] : llvm::zip(descales, names)) {
    if (!value)
      return op.emitOpError() << "has f8E4M3FN inputs but no '" << name
                              << "': FP8 attention takes descale(q_descale, "
                                 "k_descale, v_descale), f32 [B, Hkv]";
    auto type = dyn_cast<MemRefType>(value.getType());
    int64_t rank = blocks ? 3 : 2;
    if (!type || type.getRank() != rank || !type.getElementType().isF32())
      return op.emitOpError()
             << "operand '" << name << "' must be a rank-" << rank
             << " f32 memref "
             << (rank == 3 ? "[B, H, blocks] (block scales: q's, k's and "
                             "v's are all rank 3)"
                           : "[B, Hkv]")
             << ", got " << value.getType();
    if (rank == 3 && failed(verifyUnitLastStride(op, type, name)))
      return failure();
  }
  return success();
}

/// A varlen batch's paged K/V: `block_table` i32 [B, max_blocks], and K
/// with a static page size, a positive multiple of 16 (whole MMA k steps).
static LogicalResult verifyPagedKeysAndValues(AttentionOp op, bool packed) {
  if (!packed)
    return op.emitOpError("reads pages (a block table) without varlen: a "
                          "paged K/V is read by a packed batch of queries "
                          "here, or by attn.attention_kvcache");
  if (failed(verifyRankAndElement(op, op.getBlockTable(), "block_table", 2,
                                  IntegerType::get(op->getContext(), 32),
                                  "[B, max_blocks] (the block table)")))
    return failure();
  auto k = dyn_cast<MemRefType>(op.getK().getType());
  int64_t pageSize = k && k.getRank() == 4 ? k.getDimSize(1) : 0;
  if (ShapedType::isDynamic(pageSize) || pageSize < kPageRowMultiple ||
      pageSize % kPageRowMultiple != 0)
    return op.emitOpError()
           << "reads pages: k must be [num_blocks, page_size, Hkv, D] with a "
              "static page size that is a positive multiple of 16, got "
           << op.getK().getType();
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyNoUnknownAttributes(*this)))
    return failure();
  std::pair<Value, StringRef> tensors[] = {
      {getQ(), "q"}, {getK(), "k"}, {getV(), "v"}, {getO(), "o"}};
  // A packed (variable-length) batch has no batch dimension: every logical
  // dimension below is one lower.
  bool packed = getCuSeqlensQ() || getCuSeqlensK();
  if (packed && failed(verifyCuSeqlens(*this, getCuSeqlensQ(), getCuSeqlensK())))
    return failure();
  unsigned shift = packed ? 1 : 0;
  // A paged K/V (varlen only) keeps its rank-4 [num_blocks, page_size, Hkv,
  // D] layout: K's and V's dimensions are not shifted.
  bool paged = isPaged();
  if (paged && failed(verifyPagedKeysAndValues(*this, packed)))
    return failure();
  unsigned kvShift = paged ? 0 : shift;
  // FP8 q, k and v (o is bf16) come with their descales.
  bool fp8 = isa<Float8E4M3FNType>(getElementType());
  for (auto [value, name] : tensors)
    if (failed(verifyDataMemRef(*this, value.getType(), name,
                                packed && !(paged && (name == "k" || name == "v")),
                                fp8 && name != "o")))
      return failure();
  // Q and K share the head dim; V and O have the value head dim (DeepSeek's
  // 192/128), the same unless the problem says otherwise.
  if (failed(verifyDataOperands(*this, ArrayRef(tensors).take_front(2),
                                getElementType(), getHeadDim())))
    return failure();
  if (fp8 ? failed(verifyFp8ValueOperands(*this))
          : failed(verifyDataOperands(*this, ArrayRef(tensors).drop_front(2),
                                      getElementType(), getHeadDimV(), "v")))
    return failure();
  if (!fp8 && (getQDescale() || getKDescale() || getVDescale()))
    return emitOpError("has descales but its inputs are not FP8: descales "
                       "come with f8E4M3FN q, k and v; drop them");
  Value lse = getLse();
  if (lse) {
    auto type = dyn_cast<MemRefType>(lse.getType());
    if (packed && (!type || type.getRank() != 2 ||
                   !type.getElementType().isF32()))
      return emitOpError() << "operand 'lse' must be a rank-2 f32 memref "
                              "[H, total_q] (a packed batch's layout, as "
                              "flash_attn_varlen_func's), got "
                           << lse.getType();
    if (!packed &&
        (!type || type.getRank() != 3 || !type.getElementType().isF32()))
      return emitOpError() << "operand 'lse' must be a rank-3 f32 memref "
                              "[B, H, Nq], got "
                           << lse.getType();
    if (!type.getLayout().isIdentity())
      return emitOpError() << "operand 'lse' must be contiguous (the identity "
                              "layout), got "
                           << type;
  }
  if (Value slopes = getAlibiSlopes())
    if (failed(verifyAlibiSlopes(*this, slopes.getType())))
      return failure();
  // Static sizes: Q, O [B, Nq, H, D]; K, V [B, Nk, Hkv, D]; LSE [B, H, Nq]
  // (packed: Q, O [total_q, H, D]; K, V [total_k, Hkv, D]; LSE [H, total_q]).
  SmallVector<DimRef> batch = {
      {getQ(), "q", 0}, {getK(), "k", 0}, {getV(), "v", 0}, {getO(), "o", 0}};
  // K's and V's pages: the same count and size in both.
  if (paged && (failed(verifySameSize(*this, "number of pages",
                                      {{getK(), "k", 0}, {getV(), "v", 0}})) ||
                failed(verifySameSize(*this, "page size",
                                      {{getK(), "k", 1}, {getV(), "v", 1}}))))
    return failure();
  SmallVector<DimRef> queries = {{getQ(), "q", 1 - shift},
                                 {getO(), "o", 1 - shift}};
  SmallVector<DimRef> heads = {{getQ(), "q", 2 - shift},
                               {getO(), "o", 2 - shift}};
  if (lse) {
    batch.push_back({lse, "lse", 0});
    heads.push_back({lse, "lse", 1 - shift});
    queries.push_back({lse, "lse", 2 - shift});
  }
  if ((!packed && failed(verifySameSize(*this, "batch size", batch))) ||
      failed(verifySameSize(*this, packed ? "total query rows" : "query length",
                            queries)) ||
      (!paged &&
       failed(verifySameSize(*this, packed ? "total key rows" : "key length",
                             {{getK(), "k", 1 - shift},
                              {getV(), "v", 1 - shift}}))))
    return failure();
  FailureOr<int64_t> numHeads = verifySameSize(*this, "number of heads", heads);
  if (failed(numHeads))
    return failure();
  FailureOr<int64_t> numKvHeads =
      verifySameSize(*this, "number of key/value heads",
                     {{getK(), "k", 2 - kvShift}, {getV(), "v", 2 - kvShift}});
  if (failed(numKvHeads))
    return failure();
  if (failed(verifyHeadGroups(*this, *numHeads, *numKvHeads)) ||
      failed(verifyScaleAndSoftcap(*this, getScale(), getSoftcap())))
    return failure();
  // ALiBi measures from the diagonal: causal_align places it even without
  // a mask.
  return verifyMaskBounds(
      *this, getCausal(), getAlibiSlopes() ? CausalAlignAttr() : getCausalAlignAttr(),
      getWindowLeftAttr(), getWindowRightAttr());
}

//===----------------------------------------------------------------------===//
// CopyAsyncOp
//===----------------------------------------------------------------------===//

LogicalResult mlir::attn::verifyTileCopy(Operation *op, Type globalType,
                                         Type batchType, SmemTileType tile,
                                         bool toGlobal, bool transpose) {
  // The batch operand's type says whether the tensor must be packed.
  auto global = dyn_cast<MemRefType>(globalType);
  bool fp8 = global && isa<Float8E4M3FNType>(global.getElementType());
  if (failed(verifyDataMemRef(op, globalType, toGlobal ? "dst" : "src",
                              isa<SeqType>(batchType), fp8)))
    return failure();
  int64_t headDim = global.getDimSize(global.getRank() - 1);
  StringRef side = toGlobal ? "destination" : "source";
  if (global.getElementType() != tile.getElementType())
    return op->emitOpError()
           << side << " element type " << global.getElementType()
           << " does not match the tile's " << tile.getElementType();
  if (tile.getSwizzle() == 0)
    return op->emitOpError()
           << (toGlobal ? "TMA stores" : "asynchronous copies")
           << " need a swizzled tile (swizzle = 32, 64 or 128), got " << tile;
  // A transposing copy reads an FP8 tensor row by row into the transpose.
  if (transpose && (!fp8 || isKeyMajor(global)))
    return op->emitOpError()
           << "transposes its source, which must be a row-major FP8 tensor "
              "(V of FP8 attention stored with its head dim contiguous), "
              "got "
           << globalType;
  // A K-major source (FP8's V) lands transposed: D rows of keys.
  if (!toGlobal && (isKeyMajor(global) || transpose)) {
    if (tile.getRows() != headDim)
      return op->emitOpError()
             << "copies a K-major source (keys contiguous) into its "
                "transpose, a tile of D rows: the tile has "
             << tile.getRows() << " rows but the head dimension is " << headDim;
    return success();
  }
  // The tile has whole swizzle panels (a whole TMA box on sm_90a): a copy
  // zero-fills the columns past the head dimension, a store clips them.
  int64_t cols = llvm::alignTo(headDim, tile.getPanelCols());
  if (tile.getCols() != cols) {
    InFlightDiagnostic diag =
        op->emitOpError() << "tile has " << tile.getCols()
                          << " columns but the " << side << " head dimension "
                          << headDim << " needs " << cols << " (whole "
                          << tile.getPanelCols() << "-column swizzle panels";
    if (toGlobal)
      diag << ", clipped at " << headDim << ")";
    else
      diag << "; the copy zero-fills the columns past " << headDim << ")";
    return diag;
  }
  return success();
}

LogicalResult CopyAsyncOp::verify() {
  if (failed(verifyTileCopy(*this, getSrc().getType(), getBatch().getType(),
                            getDst().getType(), /*toGlobal=*/false,
                            getTranspose())))
    return failure();
  return verifyKvCacheCopy(*this, getSrc().getType(), getDst().getType(),
                           getPages(), headPack());
}

//===----------------------------------------------------------------------===//
// MmaOp
//===----------------------------------------------------------------------===//

LogicalResult MmaOp::verify() {
  int64_t m, k;
  Type aElement;
  if (auto smem = dyn_cast<SmemTileType>(getA().getType())) {
    m = smem.getRows();
    k = smem.getCols();
    aElement = smem.getElementType();
  } else {
    auto regs = cast<RegTileType>(getA().getType());
    if (regs.getFragment() != FragmentKind::operand_a)
      return emitOpError() << "register operand 'a' must have 'operand_a' "
                              "fragments, got "
                           << regs;
    m = regs.getShape()[0];
    k = regs.getShape()[1];
    aElement = regs.getElementType();
  }
  SmemTileType b = getB().getType();
  if (b.getElementType() != aElement)
    return emitOpError() << "operand element types differ: " << aElement
                         << " and " << b.getElementType();
  std::pair<Value, StringRef> smemOperands[] = {{getA(), "a"}, {getB(), "b"}};
  for (auto [operand, name] : smemOperands)
    if (auto tile = dyn_cast<SmemTileType>(operand.getType());
        tile && tile.getSwizzle() == 0)
      return emitOpError() << "shared-memory operand '" << name
                           << "' must be a swizzled tile (swizzle = 32, 64 "
                              "or 128), got "
                           << tile;
  int64_t bK = getTransposeB() ? b.getCols() : b.getRows();
  int64_t bN = getTransposeB() ? b.getRows() : b.getCols();
  if (bK != k)
    return emitOpError() << "reduction sizes differ: 'a' is " << m << "x" << k
                         << " but 'b' gives k = " << bK
                         << (getTransposeB() ? " (transposed)" : "");
  auto result = cast<RegTileType>(getResult().getType());
  if (failed(verifyAccTile(*this, result, "result")))
    return failure();
  // A [K, N] 'b' may be wider than the result, which then reads its first
  // columns (a tile padded to whole swizzle panels); a transposed one gives
  // exactly N rows.
  int64_t n = result.getShape()[1];
  if (result.getShape()[0] != m || (getTransposeB() && n != bN))
    return emitOpError() << "result must be " << m << "x" << bN << ", got "
                         << result.getShape()[0] << "x" << n;
  if (n > bN)
    return emitOpError() << "result has " << n << " columns but 'b' has " << bN
                         << ": a product reads at most all of them";
  if (getAcc() && getAcc().getType() != result)
    return emitOpError() << "accumulator type " << getAcc().getType()
                         << " differs from the result type " << result;
  // The MMA's k step: 16 elements of 16 bits, 32 of 8 bits (FP8).
  bool fp8 = isa<Float8E4M3FNType>(aElement);
  int64_t kStep = fp8 ? 32 : 16;
  if (k % kStep != 0)
    return emitOpError() << "reduction size " << k << " must be a multiple of "
                         << kStep << " (the MMA k step of " << aElement << ")";
  // FP8 wgmma reads both operands K-major: 'b' only transposed.
  if (fp8 && !getTransposeB())
    return emitOpError("an f8E4M3FN product reads 'b' K-major (transpose_b): "
                       "FP8 wgmma has no N-major operand; transpose the tile "
                       "(a K-major V is copied in transposed)");
  if (fp8 && getTarget(*this) != TargetKind::sm_90a)
    return emitOpError("f8E4M3FN products need #attn.target<sm_90a> (FP8 "
                       "wgmma); sm_80 has no FP8 MMA");
  if (getAsync()) {
    if (getTarget(*this) != TargetKind::sm_90a)
      return emitOpError("asynchronous MMAs need #attn.target<sm_90a> "
                         "(wgmma); sm_80's mma.sync is synchronous");
    for (Operation *user : getResult().getUsers())
      if (!isa<MmaWaitOp>(user))
        return emitOpError() << "an asynchronous result may only be used by "
                                "attn.mma_wait, but '"
                             << user->getName() << "' uses it";
    // One wait, in the same block: an MMA left in flight past its block
    // (or waited twice) has no well-defined completion point.
    if (!getResult().hasOneUse() ||
        getResult().getUses().begin()->getOwner()->getBlock() != getOperation()->getBlock())
      return emitOpError("an asynchronous MMA needs exactly one attn.mma_wait "
                         "in its own block");
  }
  if (getTarget(*this) == TargetKind::sm_90a) {
    // wgmma m64nNk16: N at most 256, M in whole 64-row warpgroup slices.
    if (n > 256 || m % 64 != 0)
      return emitOpError() << "sm_90a wgmma needs M a multiple of 64 and N <= "
                              "256, got "
                           << m << "x" << n;
    // An N-major 'b' is read in whole swizzle atoms along N (partial atoms
    // are no canonical wgmma layout).
    if (!getTransposeB() && n % b.getPanelCols() != 0)
      return emitOpError() << "sm_90a wgmma reads an N-major 'b' in whole "
                           << b.getPanelCols()
                           << "-column swizzle panels: N = " << n
                           << " must be a multiple of " << b.getPanelCols();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax and row ops
//===----------------------------------------------------------------------===//

LogicalResult MaskOp::verify() {
  if (failed(verifyAccTile(*this, getInput().getType(), "input")) ||
      failed(verifyMaskBounds(*this, getCausal(), getCausalAlignAttr(),
                              getWindowLeftAttr(), getWindowRightAttr())))
    return failure();
  if (isBottomRight() && !getQLen())
    return emitOpError("a bottom-right mask needs 'q_len' (the number of "
                       "query rows, which places the diagonal)");
  if (!isBottomRight() && getQLen())
    return emitOpError("'q_len' is only used by a bottom-right mask (causal "
                       "or windowed); drop it or set causal_align = "
                       "#attn.causal_align<bottom_right>");
  return verifyHeadPackRows(*this, headPack(),
                            cast<RegTileType>(getInput().getType()).getRows());
}

LogicalResult SoftcapOp::verify() {
  if (failed(verifyAccTile(*this, getInput().getType(), "input")))
    return failure();
  float scale = getScale().convertToFloat();
  if (!(scale > 0.0f) || !std::isfinite(scale))
    return emitOpError() << "scale must be positive and finite, got " << scale;
  return success();
}

LogicalResult AlibiOp::verify() {
  if (failed(verifyAccTile(*this, getInput().getType(), "input")) ||
      failed(verifyAlibiSlopes(*this, getSlopes().getType())))
    return failure();
  float scale = getScale().convertToFloat();
  if (!(scale > 0.0f) || !std::isfinite(scale))
    return emitOpError() << "scale must be positive and finite, got " << scale;
  return verifyHeadPackRows(*this, headPack(),
                            cast<RegTileType>(getInput().getType()).getRows());
}

LogicalResult OnlineSoftmaxOp::verify() {
  if (failed(verifyAccTile(*this, getScores().getType(), "scores")) ||
      failed(verifyRowVectorFor(*this, getScores().getType(),
                                getMax().getType(), "max")) ||
      failed(verifyRowVectorFor(*this, getScores().getType(),
                                getSum().getType(), "sum")))
    return failure();
  if (getProbs().getType() != getScores().getType())
    return emitOpError("'probs' must have the type of 'scores'");
  if (Value factor = getFactor())
    if (failed(verifyRowVectorFor(*this, getScores().getType(),
                                  factor.getType(), "factor")))
      return failure();
  if (getFactor() && getFixedMax())
    return emitOpError("a run-time 'factor' and 'fixed_max' do not combine: "
                       "a fixed max is an offset in units of the constant "
                       "scale");
  if (bool(getBlockFactor()) != bool(getInverseBlockFactor()))
    return emitOpError("takes 'block_factor' with its 'inverse_block_factor' "
                       "or neither");
  if (Value factor = getBlockFactor()) {
    if (getFixedMax())
      return emitOpError("a 'block_factor' and 'fixed_max' do not combine: "
                         "a fixed max bounds the scores themselves");
    for (Value row : {factor, Value(getInverseBlockFactor())})
      if (row.getType() != getMax().getType())
        return emitOpError("'block_factor' and 'inverse_block_factor' must "
                           "have the type of 'max'");
  }
  for (Value row : {getNewMax(), getNewSum(), getAlpha()})
    if (row.getType() != getMax().getType())
      return emitOpError("row results must have the type of 'max'");
  return success();
}

LogicalResult SoftmaxFinalizeOp::verify() {
  for (Value factor : {getFactor(), getOutFactor()})
    if (factor && factor.getType() != getSum().getType())
      return emitOpError() << "factors must have the type of 'sum' ("
                           << getSum().getType() << "), got "
                           << factor.getType();
  if (Value lseSum = getLseSum())
    if (lseSum.getType() != getSum().getType())
      return emitOpError() << "'lse_sum' must have the type of 'sum' ("
                           << getSum().getType() << "), got "
                           << lseSum.getType();
  return success();
}

LogicalResult RowReduceOp::verify() {
  if (failed(verifyAccTile(*this, getInput().getType(), "input")) ||
      failed(verifyRowVectorFor(*this, getInput().getType(),
                                getInit().getType(), "init")))
    return failure();
  if (getResult().getType() != getInit().getType())
    return emitOpError("result must have the type of 'init'");
  if (getRounded() && getKind() != ReduceKind::sum)
    return emitOpError("'rounded' applies to a sum (of probabilities), not "
                       "to a max");
  return success();
}

LogicalResult Exp2DiffOp::verify() {
  if (IntegerAttr attr = getEmulatedEighthsAttr()) {
    int64_t eighths = attr.getInt();
    if (eighths < 1 || eighths > 8)
      return emitOpError() << "emulated_eighths = " << eighths
                           << " is out of range; use 1 to 8 (eighths of the "
                              "fragment blocks), or no attribute for none";
    auto input = cast<RegTileType>(getInput().getType());
    if (input.getFragment() != FragmentKind::acc)
      return emitOpError() << "emulated_eighths selects fragment blocks of an "
                              "'acc' tile (the scores), but 'input' is "
                           << input << "; drop the attribute";
  }
  if (Value factor = getFactor())
    if (failed(verifyRowVectorFor(*this, getInput().getType(),
                                  factor.getType(), "factor")))
      return failure();
  return verifyRowVectorFor(*this, getInput().getType(), getMax().getType(),
                            "max");
}

LogicalResult RescaleOp::verify() {
  return verifyRowVectorFor(*this, getInput().getType(),
                            getFactor().getType(), "factor");
}

OpFoldResult RescaleOp::fold(FoldAdaptor) {
  // A factor of one (a fixed-max softmax's alpha) leaves the input.
  if (auto splat = getFactor().getDefiningOp<SplatOp>())
    if (splat.getValue().isExactlyValue(1.0))
      return getInput();
  return {};
}

LogicalResult NormalizeOp::verify() {
  if (failed(verifyAccTile(*this, getInput().getType(), "input")))
    return failure();
  if (Value factor = getFactor())
    if (failed(verifyRowVectorFor(*this, getInput().getType(),
                                  factor.getType(), "factor")))
      return failure();
  return verifyRowVectorFor(*this, getInput().getType(), getSum().getType(),
                            "sum");
}

LogicalResult ConvertOp::verify() {
  auto input = cast<RegTileType>(getInput().getType());
  auto result = cast<RegTileType>(getResult().getType());
  if (failed(verifyAccTile(*this, input, "input")))
    return failure();
  if (result.getFragment() != FragmentKind::operand_a)
    return emitOpError() << "result must have 'operand_a' fragments, got "
                         << result;
  if (input.getShape() != result.getShape())
    return emitOpError("input and result shapes differ");
  if (isa<Float8E4M3FNType>(result.getElementType()) &&
      getTarget(*this) != TargetKind::sm_90a)
    return emitOpError("f8E4M3FN operands need #attn.target<sm_90a>");
  return success();
}

LogicalResult DescaleOp::verify() {
  auto result = cast<RegTileType>(getResult().getType());
  if (!result.isRow())
    return emitOpError() << "result must be a 'row' register tile, got "
                         << result;
  if (getFactors().empty())
    return emitOpError("needs at least one factor");
  bool indexed = getRow() || getBlock();
  if (getRow() && getBlock())
    return emitOpError("takes 'rows' or 'block', not both");
  if (indexed && getFactors().size() != 1)
    return emitOpError() << "with 'rows' or 'block' reads one rank-3 factor, "
                            "got "
                         << getFactors().size();
  int64_t rank = indexed ? 3 : 2;
  for (Value factor : getFactors()) {
    auto type = dyn_cast<MemRefType>(factor.getType());
    if (!type || type.getRank() != rank || !type.getElementType().isF32())
      return emitOpError() << "factors must be rank-" << rank
                           << " f32 memrefs "
                           << (indexed ? "[B, H, blocks] (with 'rows' or "
                                         "'block')"
                                       : "[B, H] (rank 3 takes 'rows' or "
                                         "'block')")
                           << ", got " << factor.getType();
    if (indexed && failed(verifyUnitLastStride(*this, type, "factor")))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Epilogue
//===----------------------------------------------------------------------===//

LogicalResult StoreOp::verify() {
  if (failed(verifyAccTile(*this, getValue().getType(), "value")))
    return failure();
  // A split-KV kernel stores its partial outputs in f32, [B, N, H, D].
  auto dst = dyn_cast<MemRefType>(getDst().getType());
  if (!dst || !dst.getElementType().isF32()) {
    if (failed(verifyDataMemRef(*this, getDst().getType(), "dst",
                                isa<SeqType>(getBatch().getType()))))
      return failure();
  } else if (dst.getRank() != 4 || dst.isDynamicDim(3) ||
             isa<SeqType>(getBatch().getType())) {
    return emitOpError() << "an f32 'dst' (partial outputs) must be a rank-4 "
                            "memref [B, N, H, D] with a static head "
                            "dimension, indexed by a batch, got "
                         << dst;
  }
  auto value = cast<RegTileType>(getValue().getType());
  if (failed(verifyHeadPackRows(*this, headPack(), value.getRows())))
    return failure();
  // The store writes the first D columns: a tile computed on a head
  // dimension padded to the MMA's 16-column k step may carry up to 8 more.
  int64_t headDim = dst.getDimSize(dst.getRank() - 1);
  int64_t cols = value.getShape()[1];
  if (cols < headDim || cols > static_cast<int64_t>(llvm::alignTo(headDim, 16)))
    return emitOpError() << "tile has " << cols
                         << " columns but the destination head dimension is "
                         << headDim << ": use " << headDim
                         << " columns (or up to " << llvm::alignTo(headDim, 16)
                         << ", of which the store writes the first " << headDim
                         << ")";
  return success();
}

LogicalResult StoreRowsOp::verify() {
  auto value = cast<RegTileType>(getValue().getType());
  if (!value.isRow())
    return emitOpError() << "'value' must be a 'row' register tile, got "
                         << value;
  auto dst = dyn_cast<MemRefType>(getDst().getType());
  bool packed = isa<SeqType>(getBatch().getType());
  if (packed && (!dst || dst.getRank() != kPackedRowsRank ||
                 !dst.getElementType().isF32()))
    return emitOpError() << "'dst' must be a rank-2 f32 memref [H, total] (a "
                            "packed batch's rows), got "
                         << getDst().getType();
  if (!packed &&
      (!dst || dst.getRank() != 3 || !dst.getElementType().isF32()))
    return emitOpError() << "'dst' must be a rank-3 f32 memref [B, H, N], got "
                         << getDst().getType();
  return verifyHeadPackRows(*this, headPack(), value.getRows());
}
