//===- Passes.h - the FlashAttention passes ---------------------*- C++ -*-===//
#ifndef ATTN_PASSES_PASSES_H
#define ATTN_PASSES_PASSES_H

#include "attn/Dialect/AttnDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {
#define GEN_PASS_DECL
#include "attn/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

#endif // ATTN_PASSES_PASSES_H
