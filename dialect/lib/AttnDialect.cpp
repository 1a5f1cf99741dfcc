//===- AttnDialect.cpp - attn dialect registration ------------------------===//
#include "attn/Dialect/AttnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
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

//===----------------------------------------------------------------------===//
// The attn.* attributes on other dialects' ops
//===----------------------------------------------------------------------===//

namespace {
/// One attn.* attribute that passes hand each other, and what it must be.
struct KnownAttribute {
  llvm::StringLiteral name;
  bool (*accepts)(Attribute);
  const char *what;
};

template <class T> bool is(Attribute attr) { return isa<T>(attr); }

bool isStringArray(Attribute attr) {
  auto array = dyn_cast<ArrayAttr>(attr);
  return array && llvm::all_of(array, [](Attribute a) { return isa<StringAttr>(a); });
}

const KnownAttribute kKnownAttributes[] = {
    {kTargetAttrName, is<TargetAttr>, "a #attn.target"},
    {kTilingAttrName, is<TilingAttr>, "a #attn.tiling"},
    {kProblemAttrName, is<ProblemAttr>, "an #attn.problem"},
    {kScheduleAttrName, is<ScheduleAttr>, "an #attn.schedule"},
    {kGridAttrName, is<GridAttr>, "an #attn.grid"},
    {kKernelAttrName, is<UnitAttr>, "a unit attribute"},
    {kTileLoopAttrName, is<UnitAttr>, "a unit attribute"},
    {kTensorsAttrName, isStringArray, "an array of tensor role names"},
    // The lowered kernel's launch facts (attn-to-nvvm).
    {"attn.params", is<ArrayAttr>, "an array of parameter dictionaries"},
    {"attn.num_threads", is<IntegerAttr>, "an integer"},
    {"attn.smem_bytes", is<IntegerAttr>, "an integer"},
    {"attn.uses_tma", is<BoolAttr>, "a boolean"},
    {"attn.exp2_emulated_eighths", is<IntegerAttr>, "an integer"},
};
} // namespace

/// Every attn.* attribute is one the passes know, of the kind they read: a
/// misspelled or mistyped fact is an error, never silently dropped. A
/// kernel's #attn.problem must agree with its output tensor.
LogicalResult AttnDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  const KnownAttribute *known = llvm::find_if(
      kKnownAttributes, [&](const KnownAttribute &k) { return k.name == name; });
  if (known == std::end(kKnownAttributes)) {
    std::string names;
    for (const KnownAttribute &k : kKnownAttributes)
      names += (names.empty() ? "" : ", ") + k.name.str();
    return op->emitError() << "unknown attribute '" << name
                           << "' of the attn dialect; it knows " << names;
  }
  if (!known->accepts(attr.getValue()))
    return op->emitError() << "'" << name << "' must be " << known->what
                           << ", got " << attr.getValue();
  auto problem = dyn_cast<ProblemAttr>(attr.getValue());
  auto func = dyn_cast<FunctionOpInterface>(op);
  auto roles = op->getAttrOfType<ArrayAttr>(kTensorsAttrName);
  if (!problem || !func || !roles || func.isExternal() ||
      roles.size() != func.getNumArguments())
    return success();
  // The output tensor of a tile program has the problem's value head dim
  // and element type.
  for (auto [role, arg] : llvm::zip(roles, func.getArguments())) {
    auto memref = dyn_cast<MemRefType>(arg.getType());
    if (cast<StringAttr>(role).getValue() != "o" || !memref)
      continue;
    const AttentionProblem &p = problem.getValue();
    Type element = memref.getElementType();
    // FP8 attention writes a bf16 o.
    bool dtypeAgrees = p.dtype == DType::f16 ? element.isF16() : element.isBF16();
    // A combine kernel has one head dim (the split kernel's value head dim).
    int64_t cols = p.combine ? p.headDim : p.valueHeadDim();
    if (memref.getDimSize(memref.getRank() - 1) != cols || !dtypeAgrees)
      return op->emitError()
             << "attn.problem says " << (cols == p.headDim ? "head_dim" : "head_dim_v")
             << " = " << cols << " and dtype = "
             << spec::Element::text(p.dtype) << " but the kernel's o is "
             << memref;
  }
  return success();
}

LogicalResult mlir::attn::requireTiled(Operation *root, llvm::StringRef pass) {
  Operation *untiled = nullptr;
  root->walk([&](Operation *op) {
    if (isa<AttentionOp, AttentionKvCacheOp, CombineSplitsOp,
            AttentionBackwardOp>(op)) {
      untiled = op;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (!untiled)
    return success();
  return untiled->emitError()
         << "'" << pass << "' runs on tile programs, but this '"
         << untiled->getName()
         << "' is not tiled yet: run attn-tile first (after attn-configure), "
            "or the whole --attn-pipeline";
}
