//===- PTXEmitter.cpp - LLVM dialect -> LLVM IR -> PTX, in process --------===//
#include "attn/Codegen/Codegen.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"

#include <mutex>

using namespace mlir;
using namespace mlir::attn;

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace {

constexpr llvm::StringLiteral kNvptxTriple = "nvptx64-nvidia-cuda";

/// CPU and PTX ISA version per target: sm_90a needs PTX 8.0+ for wgmma and
/// TMA (8.6 for the newer NVVM forms); sm_80 code stays loadable on older
/// drivers with PTX 7.0.
std::pair<const char *, const char *> cpuAndFeatures(TargetKind target) {
  if (target == TargetKind::sm_90a)
    return {"sm_90a", "+ptx86"};
  return {"sm_80", "+ptx70"};
}

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Expected<std::string> mlir::attn::emitPtx(ModuleOp module,
                                                TargetKind target,
                                                bool emitLlvm, int optLevel) {
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });

  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "attngen");
  if (!llvmModule)
    return makeError("translation of the lowered module to LLVM IR failed");

  llvm::Triple triple(kNvptxTriple);
  std::string error;
  const llvm::Target *nvptx =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!nvptx)
    return makeError("the NVPTX backend is not available: " + error);
  auto [cpu, features] = cpuAndFeatures(target);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(nvptx->createTargetMachine(
      triple, cpu, features, options, std::nullopt, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());

  // The LLVM O3 pipeline with the NVPTX target's own passes.
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(machine.get());
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = optLevel <= 1   ? llvm::OptimizationLevel::O1
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                  : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager passes = builder.buildPerModuleDefaultPipeline(level);
  passes.run(*llvmModule, mam);

  std::string text;
  llvm::raw_string_ostream os(text);
  if (emitLlvm) {
    llvmModule->print(os, nullptr);
    return text;
  }
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream bufferStream(buffer);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, bufferStream, nullptr,
                                   llvm::CodeGenFileType::AssemblyFile))
    return makeError("the NVPTX backend cannot emit assembly");
  codegen.run(*llvmModule);
  return std::string(buffer.str());
}
