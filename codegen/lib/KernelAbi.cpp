//===- KernelAbi.cpp - a kernel's parameters, derived from its IR ---------===//
#include "KernelAbi.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"

#include <fmt/format.h>

using namespace mlir;
using namespace mlir::attn;

/// Stride dimension letters: b, n, h (the last dimension is contiguous).
static constexpr const char *kStrideDims[] = {"b", "n", "h"};
/// The sizes every kernel takes, in parameter order.
static constexpr SizeKind kSizes[] = {SizeKind::batch, SizeKind::nq,
                                      SizeKind::nk, SizeKind::num_heads,
                                      SizeKind::num_kv_heads};

StringRef mlir::attn::tensorName(Tensor tensor) {
  switch (tensor) {
  case Tensor::Q:
    return "q";
  case Tensor::K:
    return "k";
  case Tensor::V:
    return "v";
  case Tensor::O:
    return "o";
  case Tensor::Lse:
    return "lse";
  case Tensor::CuSeqlensQ:
    return "cu_seqlens_q";
  case Tensor::CuSeqlensK:
    return "cu_seqlens_k";
  }
  return "";
}

std::optional<Tensor> mlir::attn::tensorFromName(StringRef name) {
  return llvm::StringSwitch<std::optional<Tensor>>(name)
      .Case("q", Tensor::Q)
      .Case("k", Tensor::K)
      .Case("v", Tensor::V)
      .Case("o", Tensor::O)
      .Case("lse", Tensor::Lse)
      .Case("cu_seqlens_q", Tensor::CuSeqlensQ)
      .Case("cu_seqlens_k", Tensor::CuSeqlensK)
      .Default(std::nullopt);
}

StringRef mlir::attn::abiParamKindName(AbiParamKind kind) {
  switch (kind) {
  case AbiParamKind::TensorMap:
    return "tensor_map";
  case AbiParamKind::Pointer:
    return "pointer";
  case AbiParamKind::Stride:
    return "stride";
  case AbiParamKind::Size:
    return "size";
  }
  return "";
}

std::string AbiParam::name() const {
  switch (kind) {
  case AbiParamKind::TensorMap:
    return fmt::format("tma_{}", tensorName(tensor).str());
  case AbiParamKind::Pointer:
    return tensorName(tensor).str();
  case AbiParamKind::Stride:
    return fmt::format("{}_stride_{}", tensorName(tensor).str(),
                       kStrideDims[dim]);
  case AbiParamKind::Size:
    return stringifySizeKind(size).str();
  }
  return "";
}

/// Reads `attn.tensors`: one distinct role per argument, q, k, v and o
/// present.
static FailureOr<SmallVector<Tensor>> readTensorRoles(func::FuncOp kernel) {
  auto names = kernel->getAttrOfType<ArrayAttr>(kTensorsAttrName);
  if (!names)
    return kernel.emitOpError()
           << "needs an '" << kTensorsAttrName
           << "' attribute naming the role of each argument (e.g. [\"q\", "
              "\"k\", \"v\", \"o\", \"lse\"]); attn-tile sets it";
  if (names.size() != kernel.getNumArguments())
    return kernel.emitOpError()
           << "'" << kTensorsAttrName << "' names " << names.size()
           << " tensors but the kernel has " << kernel.getNumArguments()
           << " arguments";
  SmallVector<Tensor> roles;
  for (Attribute name : names) {
    auto text = dyn_cast<StringAttr>(name);
    std::optional<Tensor> role =
        text ? tensorFromName(text.getValue()) : std::nullopt;
    if (!role)
      return kernel.emitOpError()
             << "'" << kTensorsAttrName << "' entry " << name
             << " is not a tensor role; use \"q\", \"k\", \"v\", \"o\", "
                "\"lse\", \"cu_seqlens_q\" or \"cu_seqlens_k\"";
    if (llvm::is_contained(roles, *role))
      return kernel.emitOpError() << "'" << kTensorsAttrName << "' names "
                                  << name << " twice";
    roles.push_back(*role);
  }
  for (Tensor required : {Tensor::Q, Tensor::K, Tensor::V, Tensor::O})
    if (!llvm::is_contained(roles, required))
      return kernel.emitOpError()
             << "'" << kTensorsAttrName << "' has no \""
             << tensorName(required) << "\": a forward kernel reads q, k, v "
                                        "and writes o";
  // A packed batch is read through both vectors of sequence starts.
  if (llvm::is_contained(roles, Tensor::CuSeqlensQ) !=
      llvm::is_contained(roles, Tensor::CuSeqlensK))
    return kernel.emitOpError()
           << "'" << kTensorsAttrName
           << "' names one of \"cu_seqlens_q\" and \"cu_seqlens_k\": a "
              "variable-length kernel takes both";
  return roles;
}

FailureOr<KernelAbi> mlir::attn::deriveKernelAbi(func::FuncOp kernel,
                                                 TargetKind target) {
  FailureOr<SmallVector<Tensor>> roles = readTensorRoles(kernel);
  if (failed(roles))
    return failure();
  KernelAbi abi;
  abi.tensors = *roles;
  auto roleOf = [&](Value v) -> std::optional<Tensor> {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &kernel.getBody().front())
      return std::nullopt;
    return abi.tensors[arg.getArgNumber()];
  };

  // sm_90a loads every copied tile with TMA: one descriptor per source
  // tensor, whose box is one swizzle panel of the tile (all copies of a
  // tensor must use the same rows and panel width).
  llvm::SmallDenseMap<int, std::pair<int64_t, int64_t>> boxes; // cols, rows
  if (target == TargetKind::sm_90a) {
    WalkResult walk = kernel.walk([&](Operation *op) {
      Value src;
      SmemTileType tile;
      if (auto copy = dyn_cast<CopyAsyncOp>(op)) {
        src = copy.getSrc();
        tile = copy.getDst().getType();
      } else if (auto load = dyn_cast<PipeLoadOp>(op)) {
        src = load.getSrc();
        tile = load.getPipe().getType().getBuffer();
      } else {
        return WalkResult::advance();
      }
      std::optional<Tensor> role = roleOf(src);
      if (!role)
        return WalkResult::advance(); // checkLowerable reports it
      std::pair<int64_t, int64_t> box = {tile.getPanelCols(), tile.getRows()};
      auto [it, inserted] = boxes.try_emplace(static_cast<int>(*role), box);
      if (!inserted && it->second != box) {
        op->emitOpError() << "copies " << tensorName(*role) << " in a "
                          << box.second << "-row tile of " << box.first
                          << "-column swizzle panels, which another copy "
                          << "loads in " << it->second.second << " rows of "
                          << it->second.first
                          << "-column panels: one TMA descriptor (one box) "
                             "serves every copy of a tensor";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }

  for (int t = 0; t < kNumTensors; ++t)
    if (auto it = boxes.find(t); it != boxes.end()) {
      AbiParam map;
      map.kind = AbiParamKind::TensorMap;
      map.tensor = static_cast<Tensor>(t);
      map.boxCols = it->second.first;
      map.boxRows = it->second.second;
      abi.params.push_back(map);
    }
  for (Tensor tensor : abi.tensors) {
    AbiParam pointer;
    pointer.kind = AbiParamKind::Pointer;
    pointer.tensor = tensor;
    abi.params.push_back(pointer);
  }
  // [B, N, H, D] tensors are addressed through strides of b, n and h, a
  // packed (varlen) batch's [total, H, D] tensors through n and h; the row
  // vectors (LSE, [B, H, N] or [H, total]) and cu_seqlens are contiguous.
  bool packed = llvm::is_contained(abi.tensors, Tensor::CuSeqlensQ);
  for (auto [tensor, arg] : llvm::zip(abi.tensors, kernel.getArguments())) {
    if (tensor == Tensor::Lse || tensor == Tensor::CuSeqlensQ ||
        tensor == Tensor::CuSeqlensK)
      continue;
    int64_t rank = cast<MemRefType>(arg.getType()).getRank();
    if (rank != (packed ? 3 : 4))
      return kernel.emitOpError()
             << "argument '" << tensorName(tensor) << "' has rank " << rank
             << "; a " << (packed ? "variable-length" : "dense")
             << " kernel's tensors are "
             << (packed ? "[total, H, D]" : "[B, N, H, D]");
    for (int dim = packed ? 1 : 0; dim < 3; ++dim) {
      AbiParam stride;
      stride.kind = AbiParamKind::Stride;
      stride.tensor = tensor;
      stride.dim = dim;
      abi.params.push_back(stride);
    }
  }
  // The sizes every kernel takes, then any other size the grid rule names
  // (a varlen kernel's max_seqlen_q), so the runtime has a value for each.
  SmallVector<SizeKind> sizes(std::begin(kSizes), std::end(kSizes));
  if (auto grid = kernel->getAttrOfType<GridAttr>(kGridAttrName))
    for (unsigned i = 0, e = grid.getTiles().size(); i < e; ++i)
      if (!llvm::is_contained(sizes, grid.getTile(i).getSize()))
        sizes.push_back(grid.getTile(i).getSize());
  for (SizeKind size : sizes) {
    AbiParam param;
    param.kind = AbiParamKind::Size;
    param.size = size;
    abi.params.push_back(param);
  }
  return abi;
}

ArrayAttr mlir::attn::abiParamsAttr(MLIRContext *ctx, const KernelAbi &abi) {
  Builder b(ctx);
  SmallVector<Attribute> params;
  for (const AbiParam &param : abi.params) {
    SmallVector<NamedAttribute> fields = {
        b.getNamedAttr("name", b.getStringAttr(param.name())),
        b.getNamedAttr("kind", b.getStringAttr(abiParamKindName(param.kind)))};
    switch (param.kind) {
    case AbiParamKind::TensorMap:
      fields.push_back(b.getNamedAttr(
          "box", b.getI64ArrayAttr({param.boxCols, param.boxRows})));
      [[fallthrough]];
    case AbiParamKind::Pointer:
      fields.push_back(
          b.getNamedAttr("tensor", b.getStringAttr(tensorName(param.tensor))));
      break;
    case AbiParamKind::Stride:
      fields.push_back(
          b.getNamedAttr("tensor", b.getStringAttr(tensorName(param.tensor))));
      fields.push_back(
          b.getNamedAttr("dim", b.getStringAttr(kStrideDims[param.dim])));
      break;
    case AbiParamKind::Size:
      fields.push_back(b.getNamedAttr(
          "size", b.getStringAttr(stringifySizeKind(param.size))));
      break;
    }
    params.push_back(b.getDictionaryAttr(fields));
  }
  return b.getArrayAttr(params);
}
