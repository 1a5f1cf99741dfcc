//===- AttnDialect.cpp - attn dialect registration ------------------------===//
#include "attn/Dialect/AttnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

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

bool mlir::attn::touchesRegisterTiles(Operation *op) {
  auto isTile = [](Type t) { return isa<RegTileType>(t); };
  return llvm::any_of(op->getOperandTypes(), isTile) ||
         llvm::any_of(op->getResultTypes(), isTile);
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

llvm::Error mlir::attn::checkSoftmaxScale(double scale, llvm::StringRef what,
                                          llvm::StringRef symbol) {
  auto fail = [&](const std::string &why) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        fmt::format("{} {} {}", what.str(), scale, why));
  };
  if (!(scale > 0) || !std::isfinite(scale))
    return fail("must be positive and finite");
  float asF32 = static_cast<float>(scale);
  float folded = static_cast<float>(scale * llvm::numbers::log2e);
  if (!std::isfinite(asF32) || !std::isfinite(folded))
    return fail(fmt::format("is too large: {0} * log2(e) must not exceed "
                            "the largest f32 ({1:.3g}); use a smaller {0}",
                            symbol.str(), std::numeric_limits<float>::max()));
  if (!std::isnormal(asF32))
    return fail(fmt::format("is too small: it rounds to 0 or a subnormal f32; "
                            "use at least the smallest normal f32 ({:.3g})",
                            std::numeric_limits<float>::min()));
  return llvm::Error::success();
}

LogicalResult
GridDimAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                    SizeKind size, int64_t tile,
                    std::optional<SizeKind> times) {
  if (tile < 1)
    return emitError() << "grid_dim of " << stringifySizeKind(size)
                       << " needs a positive tile, got " << tile;
  if (times && *times == size)
    return emitError() << "grid_dim of " << stringifySizeKind(size)
                       << " cannot be multiplied by itself (times = "
                       << stringifySizeKind(*times) << ")";
  return success();
}

/// At most three grid dimensions: CUDA's x, y and z.
static constexpr size_t kMaxGridDims = 3;

LogicalResult GridAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayAttr tiles, int64_t ctasPerSm) {
  if (tiles.empty() || tiles.size() > kMaxGridDims)
    return emitError() << "grid needs 1 to 3 tile dimensions, got "
                       << tiles.size();
  for (Attribute tile : tiles)
    if (!isa<GridDimAttr>(tile))
      return emitError() << "grid tiles must be #attn.grid_dim attributes, "
                            "got "
                         << tile;
  if (ctasPerSm < 0)
    return emitError() << "grid ctas_per_sm must be 0 (one CTA per tile) or "
                          "positive (persistent), got "
                       << ctasPerSm;
  return success();
}

llvm::Error mlir::attn::checkHeadDim(int64_t headDim) {
  auto fail = [&](const std::string &why) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        fmt::format("head dimension {} is not supported: {}", headDim, why));
  };
  if (headDim <= 0)
    return fail(fmt::format("it must be a positive multiple of {} up to {}",
                            kHeadDimMultiple, kMaxHeadDim));
  if (headDim > kMaxHeadDim)
    return fail(fmt::format("the largest is {}", kMaxHeadDim));
  if (headDim % kHeadDimMultiple != 0)
    return fail(fmt::format(
        "use a multiple of {} (the kernels copy rows in 16-byte chunks): pad "
        "q, k and v with zero columns to {} and drop the extra output columns",
        kHeadDimMultiple, llvm::alignTo(headDim, kHeadDimMultiple)));
  return llvm::Error::success();
}
