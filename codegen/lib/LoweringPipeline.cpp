//===- LoweringPipeline.cpp - attn-to-nvvm and the upstream conversions ---===//
#include "attn/Codegen/Codegen.h"
#include "attn/Passes/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::attn;

/// Index bitwidth of the kernels: every index (rows, blocks) fits in 32 bits
/// and 64-bit integer math is slow on the GPU; addresses are built in i64.
static constexpr unsigned kIndexBitwidth = 32;

void mlir::attn::buildLoweringPipeline(OpPassManager &pm) {
  pm.addPass(createAttnExpandZeroRows());
  pm.addPass(createAttnAllocateSmem());
  pm.addPass(createAttnToNVVM());
  pm.addPass(createSCFToControlFlowPass());
  ArithToLLVMConversionPassOptions arith;
  arith.indexBitwidth = kIndexBitwidth;
  pm.addPass(createArithToLLVMConversionPass(arith));
  ConvertControlFlowToLLVMPassOptions cf;
  cf.indexBitwidth = kIndexBitwidth;
  pm.addPass(createConvertControlFlowToLLVMPass(cf));
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::attn::registerCodegenDialects(DialectRegistry &registry) {
  registry.insert<AttnDialect, arith::ArithDialect, func::FuncDialect,
                  memref::MemRefDialect, scf::SCFDialect,
                  cf::ControlFlowDialect, LLVM::LLVMDialect,
                  NVVM::NVVMDialect, vector::VectorDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}
