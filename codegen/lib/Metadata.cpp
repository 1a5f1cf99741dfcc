//===- Metadata.cpp - launch metadata of a lowered kernel -----------------===//
#include "attn/Codegen/Codegen.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::attn;

llvm::Expected<KernelMetadata> mlir::attn::readKernelMetadata(ModuleOp module) {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  KernelMetadata meta;
  SmallVector<LLVM::LLVMFuncOp> kernels;
  module.walk([&](LLVM::LLVMFuncOp func) {
    if (func->hasAttr("attn.params"))
      kernels.push_back(func);
  });
  if (kernels.empty())
    return fail("no lowered attention kernel in the module (run attn-to-nvvm "
                "first)");
  // One metadata object describes one kernel.
  if (kernels.size() > 1)
    return fail(llvm::Twine(kernels.size()) +
                " lowered attention kernels in the module; the metadata "
                "describes one");
  LLVM::LLVMFuncOp kernel = kernels.front();
  auto getInt = [&](StringRef name) {
    auto attr = kernel->getAttrOfType<IntegerAttr>(name);
    return attr ? attr.getInt() : 0;
  };
  meta.kernel = kernel.getName().str();
  meta.target = getTarget(module).value_or(TargetKind::sm_90a);
  std::optional<AttentionProblem> problem = getProblem(kernel);
  auto tiling = kernel->getAttrOfType<TilingAttr>(kTilingAttrName);
  if (!problem || !tiling)
    return fail("kernel " + meta.kernel + " has no attn.problem or "
                "attn.tiling (run attn-to-nvvm on a tiled kernel)");
  meta.problem = *problem;
  // The problem goes into JSON, which has no inf or nan: each field's own
  // check (the attribute's verifier ran them too).
  if (llvm::Error error = verifyProblem(meta.problem))
    return fail("kernel " + meta.kernel + ": " +
                llvm::toString(std::move(error)));
  meta.exp2EmulatedEighths = getInt("attn.exp2_emulated_eighths");
  meta.blockM = tiling.getBlockM();
  meta.blockN = tiling.getBlockN();
  meta.numThreads = getInt("attn.num_threads");
  meta.smemBytes = getInt("attn.smem_bytes");
  meta.usesTma = kernel->getAttrOfType<BoolAttr>("attn.uses_tma").getValue();
  for (Attribute entry : kernel->getAttrOfType<ArrayAttr>("attn.params")) {
    auto fields = cast<DictionaryAttr>(entry);
    auto text = [&](StringRef key) {
      auto value = fields.getAs<StringAttr>(key);
      return value ? value.str() : std::string();
    };
    KernelParam param;
    param.name = text("name");
    param.kind = text("kind");
    param.tensor = text("tensor");
    param.dim = text("dim");
    param.size = text("size");
    if (auto box = fields.getAs<ArrayAttr>("box")) {
      param.boxCols = cast<IntegerAttr>(box[0]).getInt();
      param.boxRows = cast<IntegerAttr>(box[1]).getInt();
    }
    meta.params.push_back(std::move(param));
  }
  auto grid = kernel->getAttrOfType<GridAttr>(kGridAttrName);
  if (!grid)
    return fail("kernel " + meta.kernel + " has no attn.grid (run "
                "attn-to-nvvm on a tiled kernel)");
  for (unsigned i = 0, e = grid.getTiles().size(); i < e; ++i) {
    GridDimAttr dim = grid.getTile(i);
    meta.gridTiles.push_back(
        {stringifySizeKind(dim.getSize()).str(), dim.getTile(),
         dim.getTimes() ? stringifySizeKind(*dim.getTimes()).str() : ""});
  }
  meta.ctasPerSm = grid.getCtasPerSm();
  return meta;
}

/// A problem field's metadata value: the kind's JSON form.
template <class Kind, class T>
static llvm::json::Value jsonOf(const AttentionProblem &problem, Kind,
                                const T &value) {
  if constexpr (std::is_same_v<Kind, spec::Element>)
    return spec::Element::text(value);
  else if constexpr (std::is_same_v<Kind, spec::Align>)
    // "none" where there is no diagonal to place.
    return problem.placesDiagonal() ? spec::Align::text(value) : "none";
  else if constexpr (std::is_same_v<Kind, spec::Backward>)
    return spec::Backward::key(value);
  else if constexpr (std::is_same_v<Kind, spec::Combine>)
    return value ? "combine" : "forward";
  else
    return value;
}

std::string mlir::attn::metadataToJson(const KernelMetadata &meta) {
  llvm::json::Array params;
  for (const KernelParam &p : meta.params) {
    llvm::json::Object param{{"name", p.name}, {"kind", p.kind}};
    if (!p.tensor.empty())
      param["tensor"] = p.tensor;
    if (!p.dim.empty())
      param["dim"] = p.dim;
    if (!p.size.empty())
      param["size"] = p.size;
    if (p.kind == "tensor_map")
      param["box"] = llvm::json::Array{p.boxCols, p.boxRows};
    params.push_back(std::move(param));
  }
  llvm::json::Array tiles;
  for (const GridTile &t : meta.gridTiles) {
    llvm::json::Object tile{{"size", t.size}, {"tile", t.tile}};
    if (!t.times.empty())
      tile["times"] = t.times;
    tiles.push_back(std::move(tile));
  }
  llvm::json::Object object{
      {"format", "attngen-kernel-v2"},
      {"kernel", meta.kernel},
      {"arch", stringifyTargetKind(meta.target)},
      {"block_m", meta.blockM},
      {"block_n", meta.blockN},
      {"num_threads", meta.numThreads},
      {"smem_bytes", meta.smemBytes},
      {"uses_tma", meta.usesTma},
      {"grid", llvm::json::Object{{"tiles", std::move(tiles)},
                                  {"ctas_per_sm", meta.ctasPerSm}}},
      {"params", std::move(params)},
  };
  // The problem: each PROBLEM field under its metadata key.
  spec::forEachFieldOf<spec::Group::PROBLEM>(
      meta.problem, [&](const spec::FieldInfo &field, auto kind,
                        const auto &value) {
        object[field.json] = jsonOf(meta.problem, kind, value);
      });
  // A causal row sees no key right of its diagonal: the metadata says the
  // 0 that the kernel name spells (_r0), not the problem's -1.
  if (meta.problem.causal)
    object["window_right"] = 0;
  // Only a kernel that emulates says so: the runtime ignores the key (it
  // changes no launch), it tells a benchmark which variant ran.
  if (meta.exp2EmulatedEighths > 0)
    object["exp2_emulated_eighths"] = meta.exp2EmulatedEighths;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(object))) << "\n";
  return text;
}
