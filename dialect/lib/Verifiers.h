//===- Verifiers.h - checks shared by the attn op verifiers ----*- C++ -*-===//
#ifndef ATTN_DIALECT_LIB_VERIFIERS_H
#define ATTN_DIALECT_LIB_VERIFIERS_H

#include "attn/Dialect/AttnDialect.h"

namespace mlir::attn {
/// Checks that `type` is a rank-4 [B, N, H, D] memref of f16/bf16 whose head
/// dimension is static; `name` names the operand in diagnostics.
LogicalResult verifyBNHDMemRef(Operation *op, Type type, StringRef name);

/// Checks that `type` is a memref of f16/bf16 (with `fp8`: f8E4M3FN) whose
/// head dimension is static, of rank 4 [B, N, H, D], or with `packed` of
/// rank 3 [total, H, D] (a variable-length batch); `name` names the operand
/// in diagnostics.
LogicalResult verifyDataMemRef(Operation *op, Type type, StringRef name,
                               bool packed, bool fp8 = false);

/// One dimension of one operand, for the static size checks.
struct DimRef {
  Value value;
  StringRef name;
  unsigned dim;
};

/// Checks that the static sizes among `dims` (one logical size, `what`)
/// agree and returns that size, or kDynamic when all are dynamic (the
/// runtime checks those).
FailureOr<int64_t> verifySameSize(Operation *op, StringRef what,
                                  ArrayRef<DimRef> dims);

/// Checks the cu_seqlens operands of a varlen problem op: both given,
/// contiguous rank-1 i32 memrefs, of the same static length when known.
LogicalResult verifyCuSeqlens(Operation *op, Value cuSeqlensQ,
                              Value cuSeqlensK);

/// Checks that `type`'s innermost dimension is contiguous (stride 1): the
/// kernels copy rows in 16-byte chunks and take no stride for it.
/// ALiBi's slopes: an f32 [B, H] memref, contiguous in its last dimension.
LogicalResult verifyAlibiSlopes(Operation *op, Type type);

LogicalResult verifyUnitLastStride(Operation *op, MemRefType type,
                                   StringRef name);

/// Checks the data operands of a problem op (attn.attention,
/// attn.attention_kvcache) against `q`'s element type and head dimension
/// (the last dimension): each matches, is contiguous in its last dimension,
/// and the head dimension is one the kernels support.
/// `reference` names the operand the head dim comes from in the messages.
LogicalResult verifyDataOperands(Operation *op,
                                 ArrayRef<std::pair<Value, StringRef>> tensors,
                                 Type element, int64_t headDim,
                                 StringRef reference = "q");

/// Checks that `heads` query heads share `kvHeads` key/value heads evenly
/// (grouped-query attention); a dynamic count passes.
LogicalResult verifyHeadGroups(Operation *op, int64_t heads, int64_t kvHeads);

/// A mask's window sides (0 to 2^31 - 1), a causal window's right side 0,
/// and `align` only with a diagonal to place (causal or a window).
LogicalResult verifyMaskBounds(Operation *op, bool causal, CausalAlignAttr align,
                               IntegerAttr windowLeft, IntegerAttr windowRight);

/// Checks a problem op's softmax `scale` and its optional soft cap (both
/// finite, positive, and small enough for the f32 exponentials).
LogicalResult verifyScaleAndSoftcap(Operation *op, const APFloat &scale,
                                    std::optional<APFloat> softcap);

/// Checks a global -> shared tile copy (attn.copy_async, attn.pipe_load),
/// or with `toGlobal` a shared -> global store (attn.tma_store): a
/// [B, N, H, D] f16/bf16 tensor (or a packed [total, H, D] one addressed by
/// a sequence, `batchType` !attn.seq) whose element type and head dimension
/// match the swizzled tile `tile`.
/// With `transpose` the tile is a row-major FP8 source's transpose (D rows
/// of keys), as a K-major source's copy lands.
LogicalResult verifyTileCopy(Operation *op, Type globalType, Type batchType,
                             SmemTileType tile, bool toGlobal = false,
                             bool transpose = false);

/// Checks what a KV-cache copy adds to verifyTileCopy: `headPack` query
/// heads packed into `dst` (dividing its rows into whole 8-row groups) and a
/// paged source (`pages`, the block table) whose static page size is a
/// multiple of 16 and fits the tile (one page holds it or it holds whole
/// pages). Shared by attn.copy_async and attn.pipe_load.
LogicalResult verifyKvCacheCopy(Operation *op, Type srcType, SmemTileType dst,
                                Value pages, int64_t headPack);

/// Checks that a problem op holds no attribute it does not declare, other
/// than another dialect's (`dialect.name`): a misspelt field (`casual`,
/// `soft_cap`) would otherwise build a kernel without it. The message lists
/// the op's attributes and suggests the nearest.
LogicalResult verifyNoUnknownAttributes(Operation *op);

/// A page of a paged K/V holds a whole number of 16-row MMA k steps.
inline constexpr int64_t kPageRowMultiple = 16;

/// Checks that `value`'s type is a memref of `rank` dimensions holding
/// `element`; `what` describes it in the message ("[B] i32").
LogicalResult verifyRankAndElement(Operation *op, Value value, StringRef name,
                                   int64_t rank, Type element, StringRef what);

/// Checks that `headPack` heads divide the `rows` of a register tile.
LogicalResult verifyHeadPackRows(Operation *op, int64_t headPack,
                                 int64_t rows);
} // namespace mlir::attn

#endif // ATTN_DIALECT_LIB_VERIFIERS_H
