//===- AttnTypes.cpp - attn types: parsing, printing, verification --------===//
#include "attn/Dialect/AttnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#define GET_TYPEDEF_CLASSES
#include "attn/Dialect/AttnTypes.cpp.inc"

void AttnDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "attn/Dialect/AttnTypes.cpp.inc"
      >();
}

/// Swizzle spans (bytes) a shared-memory tile may use, as TMA and wgmma
/// know them (CU_TENSOR_MAP_SWIZZLE_32B/64B/128B); 0 means unswizzled.
static constexpr int64_t kSupportedSwizzles[] = {0, 32, 64, 128};

/// Parses `<RxCxT` (the shared part of both tile types' syntax).
static ParseResult parseShapeAndType(AsmParser &parser,
                                     SmallVectorImpl<int64_t> &shape,
                                     Type &elementType) {
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false) ||
      parser.parseType(elementType))
    return failure();
  return success();
}

static void printShapeAndType(AsmPrinter &printer, ArrayRef<int64_t> shape,
                              Type elementType) {
  printer << "<";
  for (int64_t dim : shape)
    printer << dim << "x";
  printer << elementType;
}

//===----------------------------------------------------------------------===//
// SmemTileType
//===----------------------------------------------------------------------===//

Type SmemTileType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  int64_t swizzle = 0;
  if (parseShapeAndType(parser, shape, elementType))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("swizzle") || parser.parseEqual() ||
        parser.parseInteger(swizzle))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<SmemTileType>(parser.getContext(), shape,
                                         elementType, swizzle);
}

void SmemTileType::print(AsmPrinter &printer) const {
  printShapeAndType(printer, getShape(), getElementType());
  if (getSwizzle() != 0)
    printer << ", swizzle = " << getSwizzle();
  printer << ">";
}

LogicalResult
SmemTileType::verify(function_ref<InFlightDiagnostic()> emitError,
                     ArrayRef<int64_t> shape, Type elementType,
                     int64_t swizzle) {
  if (shape.size() != 2)
    return emitError() << "shared-memory tile must be 2-D, got rank "
                       << shape.size();
  // f32: the staging tile of a reduction into global memory; f8E4M3FN:
  // FP8 attention's operands.
  if (!elementType.isF16() && !elementType.isBF16() && !elementType.isF32() &&
      !isa<Float8E4M3FNType>(elementType))
    return emitError() << "shared-memory tile element type must be f16, bf16, "
                          "f32 or f8E4M3FN, got "
                       << elementType;
  if (!llvm::is_contained(kSupportedSwizzles, swizzle))
    return emitError() << "unsupported swizzle " << swizzle
                       << " bytes; supported: 0, 32, 64, 128";
  if (shape[0] <= 0 || shape[0] % 8 != 0)
    return emitError() << "shared-memory tile rows (" << shape[0]
                       << ") must be a positive multiple of 8";
  if (shape[1] <= 0)
    return emitError() << "shared-memory tile columns (" << shape[1]
                       << ") must be positive";
  // A panel row of an S-byte swizzle holds S / bytes elements.
  int64_t panelCols = swizzle / (elementType.getIntOrFloatBitWidth() / 8);
  if (swizzle != 0 && shape[1] % panelCols != 0)
    return emitError() << "a " << swizzle << "-byte swizzled tile is made of "
                       << panelCols << "-column panels: its columns ("
                       << shape[1] << ") must be a multiple of " << panelCols;
  return success();
}

//===----------------------------------------------------------------------===//
// RegTileType
//===----------------------------------------------------------------------===//

Type RegTileType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  StringRef fragmentName;
  if (parseShapeAndType(parser, shape, elementType) || parser.parseComma() ||
      parser.parseKeyword(&fragmentName) || parser.parseGreater())
    return {};
  std::optional<FragmentKind> fragment = symbolizeFragmentKind(fragmentName);
  if (!fragment) {
    parser.emitError(parser.getNameLoc())
        << "unknown fragment kind '" << fragmentName
        << "'; expected acc, operand_a, row, col or lanes";
    return {};
  }
  return parser.getChecked<RegTileType>(parser.getContext(), shape,
                                        elementType, *fragment);
}

void RegTileType::print(AsmPrinter &printer) const {
  printShapeAndType(printer, getShape(), getElementType());
  printer << ", " << stringifyFragmentKind(getFragment()) << ">";
}

LogicalResult RegTileType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayRef<int64_t> shape, Type elementType,
                                  FragmentKind fragment) {
  size_t expectedRank = fragment == FragmentKind::row ||
                                fragment == FragmentKind::col ||
                                fragment == FragmentKind::lanes
                            ? 1
                            : 2;
  if (shape.size() != expectedRank)
    return emitError() << "register tile with '"
                       << stringifyFragmentKind(fragment) << "' fragments must "
                       << "have rank " << expectedRank << ", got "
                       << shape.size();
  // Every fragment kind covers whole 16-row MMA slices.
  if (shape[0] <= 0 || shape[0] % 16 != 0)
    return emitError() << "register tile rows (" << shape[0]
                       << ") must be a positive multiple of 16";
  switch (fragment) {
  case FragmentKind::acc:
  case FragmentKind::row:
  case FragmentKind::col:
  case FragmentKind::lanes:
    if (!elementType.isF32())
      return emitError() << "'" << stringifyFragmentKind(fragment)
                         << "' register tile must hold f32, got "
                         << elementType;
    break;
  case FragmentKind::operand_a:
    if (!elementType.isF16() && !elementType.isBF16() &&
        !isa<Float8E4M3FNType>(elementType))
      return emitError() << "'operand_a' register tile must hold f16, bf16 "
                            "or f8E4M3FN, got "
                         << elementType;
    break;
  }
  if (fragment == FragmentKind::acc && shape[1] % 8 != 0)
    return emitError() << "'acc' register tile columns (" << shape[1]
                       << ") must be a multiple of 8";
  // One MMA k step: 16 columns of a 16-bit type, 32 of an 8-bit one.
  int64_t kStep = isa<Float8E4M3FNType>(elementType) ? 32 : 16;
  if (fragment == FragmentKind::operand_a && shape[1] % kStep != 0)
    return emitError() << "'operand_a' register tile of " << elementType
                       << " columns (" << shape[1]
                       << ") must be a multiple of " << kStep;
  return success();
}

LogicalResult
PipeType::verify(function_ref<InFlightDiagnostic()> emitError, int64_t stages,
                 SmemTileType buffer) {
  if (stages < 1 || stages > kMaxPipeStages)
    return emitError() << "a pipe has 1 to " << kMaxPipeStages
                       << " stages, got " << stages;
  if (!buffer)
    return emitError() << "a pipe's buffer must be an !attn.smem tile";
  return success();
}
