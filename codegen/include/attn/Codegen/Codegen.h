//===- Codegen.h - tile programs to NVVM, PTX and launch metadata -*- C++ -*-===//
#ifndef ATTN_CODEGEN_CODEGEN_H
#define ATTN_CODEGEN_CODEGEN_H

#include "attn/Dialect/AttnDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::attn {

#define GEN_PASS_DECL
#include "attn/Codegen/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "attn/Codegen/Passes.h.inc"

/// One kernel parameter, as the metadata lists it (docs/ABI.md "Kernel
/// parameters").
struct KernelParam {
  std::string name;   ///< tma_q, q, q_stride_b, nq, ...
  std::string kind;   ///< "tensor_map", "pointer", "stride" or "size"
  std::string tensor; ///< tensor_map, pointer, stride: "q", "k", ...
  std::string dim;    ///< stride: "b", "n" or "h"
  std::string size;   ///< size: "batch", "nq", "nk", "num_heads", ...
  int64_t boxCols = 0, boxRows = 0; ///< tensor_map: the TMA box
};

/// One dimension of the tile space: ceil(size / tile) [* times] (docs/ABI.md
/// "Launch").
struct GridTile {
  std::string size;
  int64_t tile = 1;
  std::string times; ///< a size multiplying the tiles ("num_splits"), or ""
};

/// Everything the runtime needs to launch a kernel (see docs/ABI.md): the
/// problem it computes (#attn.problem) and the launch facts the lowering
/// derived.
struct KernelMetadata {
  std::string kernel;
  TargetKind target = TargetKind::sm_90a;
  AttentionProblem problem;
  int64_t blockM = 0, blockN = 0, numThreads = 0, smemBytes = 0;
  bool usesTma = false;
  std::vector<KernelParam> params;
  std::vector<GridTile> gridTiles;
  int64_t ctasPerSm = 0; ///< 0: one CTA per tile; > 0: persistent
  /// Eighths of the score exponentials in software (0: none; the JSON has
  /// "exp2_emulated_eighths" only when > 0).
  int64_t exp2EmulatedEighths = 0;
};

/// Adds attn-to-nvvm and the upstream conversions to the LLVM dialect;
/// attn-to-nvvm follows each kernel's #attn.schedule (its denormal mode).
void buildLoweringPipeline(OpPassManager &pm);

/// Reads the launch metadata off a lowered module (attributes set by
/// attn-to-nvvm on the kernel).
llvm::Expected<KernelMetadata> readKernelMetadata(ModuleOp module);

/// Metadata as the JSON object of docs/ABI.md.
std::string metadataToJson(const KernelMetadata &metadata);

/// Translates an LLVM-dialect module to LLVM IR, optimises it (O3) and runs
/// the NVPTX backend in process. `emitLlvm` returns the optimised LLVM IR
/// text instead of PTX.
llvm::Expected<std::string> emitPtx(ModuleOp module, TargetKind target,
                                    bool emitLlvm = false, int optLevel = 3);

/// Registers the dialects and translations the code generator needs.
void registerCodegenDialects(DialectRegistry &registry);

} // namespace mlir::attn

#endif // ATTN_CODEGEN_CODEGEN_H
