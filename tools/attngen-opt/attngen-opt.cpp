//===- attngen-opt.cpp - mlir-opt with the attn dialect and passes --------===//
#include "attn/Codegen/Codegen.h"
#include "attn/Dialect/AttnDialect.h"
#include "attn/Passes/Passes.h"
#include "attn/Spec/Spec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::attn::AttnDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::cf::ControlFlowDialect,
                  mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect>();
  mlir::attn::registerAttnPasses();
  mlir::attn::registerCodegenPasses();
  // attn-configure and the pipelines attngen runs (attn-pipeline replays
  // attngen from a problem module to the LLVM dialect).
  mlir::attn::registerSpecPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attngen pass driver\n", registry));
}
