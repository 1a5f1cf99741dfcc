//===- AttnDialect.cpp - attn dialect registration ------------------------===//
#include "attn/Dialect/AttnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#include "attn/Dialect/AttnDialect.cpp.inc"
#include "attn/Dialect/AttnEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "attn/Dialect/AttnAttrs.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attn/Dialect/AttnOps.cpp.inc"
      >();
  registerTypes();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attn/Dialect/AttnAttrs.cpp.inc"
      >();
}

std::optional<TargetKind> mlir::attn::getTarget(Operation *op) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op)
                                  : op->getParentOfType<ModuleOp>();
  if (!module)
    return std::nullopt;
  if (auto target = module->getAttrOfType<TargetAttr>(kTargetAttrName))
    return target.getKind();
  return std::nullopt;
}
