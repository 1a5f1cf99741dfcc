//===- Verifiers.h - checks shared by the attn op verifiers ----*- C++ -*-===//
#ifndef ATTN_DIALECT_LIB_VERIFIERS_H
#define ATTN_DIALECT_LIB_VERIFIERS_H

#include "attn/Dialect/AttnDialect.h"

namespace mlir::attn {
/// Checks a global -> shared tile copy (attn.copy_async, attn.pipe_load): a
/// [B, N, H, D] f16/bf16 source (or a packed [total, H, D] one addressed by
/// a sequence, `batchType` !attn.seq) whose element type and head dimension
/// match the 128-byte swizzled tile `dst`.
LogicalResult verifyTileCopy(Operation *op, Type srcType, Type batchType,
                             SmemTileType dst);

} // namespace mlir::attn

#endif // ATTN_DIALECT_LIB_VERIFIERS_H
