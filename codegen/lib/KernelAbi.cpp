//===- KernelAbi.cpp - a kernel's parameters, derived from its IR ---------===//
#include "KernelAbi.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

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
  int t = static_cast<int>(tensor);
  return t >= 0 && t < kNumTensors ? attnrt::abi::kTensorRoleNames[t] : "";
}

std::optional<Tensor> mlir::attn::tensorFromName(StringRef name) {
  for (int t = 0; t < kNumTensors; ++t)
    if (name == attnrt::abi::kTensorRoleNames[t])
      return static_cast<Tensor>(t);
  return std::nullopt;
}

/// Every role name, quoted, for a diagnostic: "q", "k", ... or "lse_partial".
static std::string roleList() {
  std::string list;
  for (int t = 0; t < kNumTensors; ++t)
    list += fmt::format("{}\"{}\"",
                        t == 0                 ? ""
                        : t + 1 == kNumTensors ? " or "
                                               : ", ",
                        attnrt::abi::kTensorRoleNames[t]);
  return list;
}

std::optional<SizeKind> mlir::attn::tensorDimSize(Tensor tensor, unsigned dim,
                                                  bool pagedCache) {
  switch (tensor) {
  case Tensor::Q:
  case Tensor::O:
  case Tensor::Dout:
  case Tensor::Dq:
  case Tensor::DqAccum:
    return dim == 0   ? std::optional(SizeKind::batch)
           : dim == 1 ? std::optional(SizeKind::nq)
           : dim == 2 ? std::optional(SizeKind::num_heads)
                      : std::nullopt;
  case Tensor::Dk:
  case Tensor::Dv:
    return dim == 0   ? std::optional(SizeKind::batch)
           : dim == 1 ? std::optional(SizeKind::nk)
           : dim == 2 ? std::optional(SizeKind::num_kv_heads)
                      : std::nullopt;
  case Tensor::K:
  case Tensor::V:
    if (dim == 0)
      return pagedCache ? SizeKind::num_blocks : SizeKind::batch;
    if (dim == 1)
      return pagedCache ? std::nullopt : std::optional(SizeKind::nk);
    return dim == 2 ? std::optional(SizeKind::num_kv_heads) : std::nullopt;
  case Tensor::Lse:
  case Tensor::Delta:
    return dim == 0   ? std::optional(SizeKind::batch)
           : dim == 1 ? std::optional(SizeKind::num_heads)
           : dim == 2 ? std::optional(SizeKind::nq)
                      : std::nullopt;
  case Tensor::CuSeqlensQ:
  case Tensor::CuSeqlensK:
    return std::nullopt; // B + 1 entries: no size parameter holds that
  case Tensor::CacheSeqlens:
    return dim == 0 ? std::optional(SizeKind::batch) : std::nullopt;
  case Tensor::BlockTable:
    return dim == 0   ? std::optional(SizeKind::batch)
           : dim == 1 ? std::optional(SizeKind::max_blocks)
                      : std::nullopt;
  case Tensor::AlibiSlopes:
    return dim == 1 ? std::optional(SizeKind::num_heads) : std::nullopt;
  case Tensor::OPartial:
    return dim == 1   ? std::optional(SizeKind::nq)
           : dim == 2 ? std::optional(SizeKind::num_heads)
                      : std::nullopt;
  case Tensor::LsePartial:
    return dim == 1   ? std::optional(SizeKind::num_heads)
           : dim == 2 ? std::optional(SizeKind::nq)
                      : std::nullopt;
  case Tensor::QDescale:
  case Tensor::KDescale:
  case Tensor::VDescale:
    return std::nullopt; // [B, Hkv] or per block: the strides say which
  }
  return std::nullopt;
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
/// present (a combine kernel: o_partial, lse_partial and o).
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
             << " is not a tensor role; use " << roleList();
    if (llvm::is_contained(roles, *role))
      return kernel.emitOpError() << "'" << kTensorsAttrName << "' names "
                                  << name << " twice";
    roles.push_back(*role);
  }
  // A split-KV combine kernel merges partial results into o; every other
  // kernel reads q, k, v and writes o.
  if (isCombineKernel(kernel)) {
    for (Tensor required : {Tensor::OPartial, Tensor::LsePartial, Tensor::O})
      if (!llvm::is_contained(roles, required))
        return kernel.emitOpError()
               << "'" << kTensorsAttrName << "' has no \""
               << tensorName(required)
               << "\": a combine kernel reads o_partial and lse_partial and "
                  "writes o";
    return roles;
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
  // The problem fixes the order: an edited list would hand the runtime's
  // pointers to the wrong arguments (k's to the body's v).
  if (std::optional<AttentionProblem> problem = getProblem(kernel)) {
    SmallVector<StringRef> expected = kernelTensorRoles(*problem);
    bool same = expected.size() == roles.size();
    for (size_t i = 0; same && i < roles.size(); ++i)
      same = tensorName(roles[i]) == expected[i];
    if (!same) {
      std::string list;
      llvm::raw_string_ostream os(list);
      os << "[";
      llvm::interleave(
          expected, os, [&](StringRef r) { os << "\"" << r << "\""; }, ", ");
      os << "]";
      return kernel.emitOpError()
             << "'" << kTensorsAttrName << "' is " << names
             << " but this kernel's problem (attn.problem) takes its tensors "
                "as "
             << list
             << ": the argument order is fixed; restore it (or regenerate "
                "the tile program with attngen --emit=mlir)";
    }
  }
  return roles;
}

/// The tile program was built for its grid's row tile: an `attn.tiling`
/// whose block_m says otherwise (an edited attribute) would only change the
/// metadata, not the code.
static LogicalResult checkRowTile(func::FuncOp kernel) {
  std::optional<AttentionProblem> problem = getProblem(kernel);
  auto tiling = kernel->getAttrOfType<TilingAttr>(kTilingAttrName);
  auto grid = kernel->getAttrOfType<GridAttr>(kGridAttrName);
  if (!problem || problem->kvCache || problem->combine || !tiling || !grid)
    return success();
  for (unsigned i = 0, e = grid.getTiles().size(); i < e; ++i) {
    GridDimAttr dim = grid.getTile(i);
    if (!llvm::is_contained({SizeKind::nq, SizeKind::nk, SizeKind::max_seqlen_q,
                             SizeKind::max_seqlen_k},
                            dim.getSize()))
      continue;
    if (dim.getTile() != tiling.getBlockM())
      return kernel.emitOpError()
             << "'attn.tiling' says block_m = " << tiling.getBlockM()
             << " but the tile program steps " << dim.getTile()
             << " rows per CTA ('attn.grid'): it was built for "
             << dim.getTile()
             << "; change the spec and regenerate the tile program "
                "(attngen --block-m=N --emit=mlir) instead of the attribute";
    return success();
  }
  return success();
}

FailureOr<KernelAbi> mlir::attn::deriveKernelAbi(func::FuncOp kernel,
                                                 TargetKind target) {
  FailureOr<SmallVector<Tensor>> roles = readTensorRoles(kernel);
  if (failed(roles) || failed(checkRowTile(kernel)))
    return failure();
  KernelAbi abi;
  abi.tensors = *roles;
  auto roleOf = [&](Value v) -> std::optional<Tensor> {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &kernel.getBody().front())
      return std::nullopt;
    return abi.tensors[arg.getArgNumber()];
  };

  // sm_90a loads every copied tile with TMA, and attn.tma_store writes O
  // with it: one descriptor per tensor, whose box is one swizzle panel of
  // the tile (all copies of a tensor must use the same rows and panel
  // width).
  llvm::SmallDenseMap<int, std::pair<int64_t, int64_t>> boxes; // cols, rows
  if (target == TargetKind::sm_90a) {
    WalkResult walk = kernel.walk([&](Operation *op) {
      Value src, pages;
      SmemTileType tile;
      int64_t headPack = 1;
      if (auto copy = dyn_cast<CopyAsyncOp>(op)) {
        src = copy.getSrc();
        tile = copy.getDst().getType();
        pages = copy.getPages();
        headPack = copy.headPack();
      } else if (auto load = dyn_cast<PipeLoadOp>(op)) {
        src = load.getSrc();
        tile = load.getPipe().getType().getBuffer();
        pages = load.getPages();
        headPack = load.headPack();
      } else if (auto accumulate = dyn_cast<AccumulateDqOp>(op)) {
        // Each consumer warpgroup reduces its rows of the stage into dQ's
        // accumulator, one box per panel.
        src = accumulate.getDst();
        tile = accumulate.getStage().getType();
        headPack =
            op->getParentOfType<WarpSpecializeOp>().getConsumerWarpgroups();
      } else if (auto store = dyn_cast<TmaStoreOp>(op)) {
        // A TMA store writes each consumer warpgroup's rows: one box of
        // them per panel, as if the tile packed that many heads.
        src = store.getDst();
        tile = store.getBuffer().getType();
        headPack =
            op->getParentOfType<WarpSpecializeOp>().getConsumerWarpgroups();
      } else {
        return WalkResult::advance();
      }
      // A packed tile loads one box per head, a paged one one per page
      // when it covers several.
      int64_t rows = tile.getRows() / headPack;
      if (pages)
        rows = std::min(
            rows, cast<MemRefType>(src.getType()).getDimSize(1));
      std::optional<Tensor> role = roleOf(src);
      if (!role)
        return WalkResult::advance(); // checkLowerable reports it
      std::pair<int64_t, int64_t> box = {tile.getPanelCols(), rows};
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
  // [B, N, H, D] tensors (the partial outputs too) are addressed through
  // strides of b, n and h, a packed (varlen) batch's [total, H, D] tensors
  // through n and h; a block table [B, max_blocks] has a row stride; the row
  // vectors (LSE, [B, H, N] or [H, total], the partial LSEs), cu_seqlens and
  // cache_seqlens are contiguous.
  bool packed = llvm::is_contained(abi.tensors, Tensor::CuSeqlensQ);
  // A packed batch over a paged K/V: K and V keep their [num_blocks,
  // page_size, Hkv, D] layout and its page (b) stride.
  bool pagedKv = llvm::is_contained(abi.tensors, Tensor::BlockTable);
  for (auto [tensor, arg] : llvm::zip(abi.tensors, kernel.getArguments())) {
    if (tensor == Tensor::Lse || tensor == Tensor::CuSeqlensQ ||
        tensor == Tensor::CuSeqlensK || tensor == Tensor::CacheSeqlens ||
        tensor == Tensor::LsePartial || tensor == Tensor::Delta)
      continue;
    int64_t rank = cast<MemRefType>(arg.getType()).getRank();
    // FP8's descales, f32 [B, Hkv]: a batch and a head stride (both 0 for
    // one descale per tensor).
    if (tensor == Tensor::QDescale || tensor == Tensor::KDescale ||
        tensor == Tensor::VDescale) {
      for (int dim : {0, 2}) {
        AbiParam stride;
        stride.kind = AbiParamKind::Stride;
        stride.tensor = tensor;
        stride.dim = dim;
        abi.params.push_back(stride);
      }
      continue;
    }
    // A [B, H] matrix with a row (batch) stride: the block table, ALiBi's
    // slopes (stride 0 for one slope per head).
    bool matrix = tensor == Tensor::BlockTable || tensor == Tensor::AlibiSlopes;
    bool pages = pagedKv && (tensor == Tensor::K || tensor == Tensor::V);
    bool packedTensor = packed && !pages;
    if (!matrix && rank != (packedTensor ? 3 : 4))
      return kernel.emitOpError()
             << "argument '" << tensorName(tensor) << "' has rank " << rank
             << "; a " << (packed ? "variable-length" : "dense")
             << " kernel's " << (pages ? "paged k and v are " : "tensors are ")
             << (pages          ? "[num_blocks, page_size, Hkv, D]"
                 : packedTensor ? "[total, H, D]"
                                : "[B, N, H, D]");
    int firstDim = packedTensor && !matrix ? 1 : 0;
    int endDim = matrix ? 1 : 3;
    for (int dim = firstDim; dim < endDim; ++dim) {
      AbiParam stride;
      stride.kind = AbiParamKind::Stride;
      stride.tensor = tensor;
      stride.dim = dim;
      abi.params.push_back(stride);
    }
  }
  // The sizes every kernel takes, then any other size the grid rule names
  // (a varlen kernel's max_seqlen_q), then the ones a decoding kernel reads
  // (the number of splits, a paged cache's extents), so the runtime has a
  // value for each.
  SmallVector<SizeKind> sizes(std::begin(kSizes), std::end(kSizes));
  if (auto grid = kernel->getAttrOfType<GridAttr>(kGridAttrName))
    for (unsigned i = 0, e = grid.getTiles().size(); i < e; ++i)
      if (!llvm::is_contained(sizes, grid.getTile(i).getSize()))
        sizes.push_back(grid.getTile(i).getSize());
  kernel.walk([&](ProblemSizeOp op) {
    if (!llvm::is_contained(sizes, op.getSize()))
      sizes.push_back(op.getSize());
  });
  if (llvm::is_contained(abi.tensors, Tensor::BlockTable))
    for (SizeKind size : {SizeKind::max_blocks, SizeKind::num_blocks})
      if (!llvm::is_contained(sizes, size))
        sizes.push_back(size);
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
