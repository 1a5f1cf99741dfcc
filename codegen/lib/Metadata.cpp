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
  meta.dtype = kernel->getAttrOfType<StringAttr>("attn.dtype").str();
  meta.headDim = getInt("attn.head_dim");
  meta.causal = kernel->hasAttr("attn.causal");
  if (auto align = kernel->getAttrOfType<CausalAlignAttr>("attn.causal_align"))
    meta.causalAlign = align.getValue();
  if (auto scale = kernel->getAttrOfType<FloatAttr>("attn.scale"))
    meta.scale = scale.getValueAsDouble();
  // The scale goes into JSON, which has no inf or nan.
  if (llvm::Error error = checkSoftmaxScale(meta.scale))
    return fail("kernel " + meta.kernel + ": " +
                llvm::toString(std::move(error)));
  if (auto cap = kernel->getAttrOfType<FloatAttr>("attn.softcap"))
    meta.softcap = cap.getValueAsDouble();
  if (meta.softcap != 0)
    if (llvm::Error error = checkSoftmaxScale(meta.softcap, "softcap", "softcap"))
      return fail("kernel " + meta.kernel + ": " +
                  llvm::toString(std::move(error)));
  meta.blockM = getInt("attn.block_m");
  meta.blockN = getInt("attn.block_n");
  meta.numThreads = getInt("attn.num_threads");
  meta.smemBytes = getInt("attn.smem_bytes");
  meta.usesTma = kernel->getAttrOfType<BoolAttr>("attn.uses_tma").getValue();
  auto lse = kernel->getAttrOfType<BoolAttr>("attn.lse");
  meta.writesLse = lse && lse.getValue();
  for (Attribute name : kernel->getAttrOfType<ArrayAttr>("attn.params"))
    meta.params.push_back(cast<StringAttr>(name).str());
  return meta;
}

std::string mlir::attn::metadataToJson(const KernelMetadata &meta) {
  llvm::json::Array params;
  for (const std::string &p : meta.params)
    params.push_back(p);
  llvm::json::Object object{
      {"format", "attngen-kernel-v1"},
      {"kernel", meta.kernel},
      {"arch", stringifyTargetKind(meta.target)},
      {"dtype", meta.dtype},
      {"head_dim", meta.headDim},
      {"causal", meta.causal},
      {"causal_align",
       meta.causal ? stringifyCausalAlign(meta.causalAlign) : "none"},
      {"lse", meta.writesLse},
      {"scale", meta.scale},
      {"softcap", meta.softcap},
      {"block_m", meta.blockM},
      {"block_n", meta.blockN},
      {"num_threads", meta.numThreads},
      {"smem_bytes", meta.smemBytes},
      {"uses_tma", meta.usesTma},
      {"tma_box_cols", 64},
      {"tma_box_rows_q", meta.blockM},
      {"tma_box_rows_k", meta.blockN},
      {"tma_box_rows_v", meta.blockN},
      {"params", std::move(params)},
  };
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(object))) << "\n";
  return text;
}
