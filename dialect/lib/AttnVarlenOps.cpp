//===- AttnVarlenOps.cpp - verifiers of the variable-length batch ops -----===//
#include "attn/Dialect/AttnDialect.h"

using namespace mlir;
using namespace mlir::attn;

LogicalResult SequenceOp::verify() {
  auto type = dyn_cast<MemRefType>(getCuSeqlens().getType());
  if (!type || type.getRank() != 1 || !type.getElementType().isInteger(32) ||
      !type.getLayout().isIdentity())
    return emitOpError() << "'cu_seqlens' must be a contiguous rank-1 i32 "
                            "memref [B + 1], got "
                         << getCuSeqlens().getType();
  return success();
}
