//===- Quantize.h - the FP8 quantize kernel -----------------------*- C++ -*-===//
//
// A generated kernel that turns a bf16/f16 [B, N, H, D] tensor into e4m3
// for the FP8 attention kernels: optionally rotated first by a Hadamard
// transform with random signs over the head dim (incoherent processing,
// FlashAttention-3 §3.3: q and k rotated alike leave QK^T unchanged and
// spread outliers), quantized with one scale per 128-row block or with
// scales the caller gives, and stored row-major or K-major (V for the PV
// GEMM). docs/ABI.md "Quantize kernel" has its parameters and launch.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CODEGEN_QUANTIZE_H
#define ATTN_CODEGEN_QUANTIZE_H

#include "attn/Dialect/AttnDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace mlir::attn {

/// What one quantize kernel is compiled for.
struct QuantizeKernelSpec {
  TargetKind target = TargetKind::sm_90a;
  int64_t headDim = 128;       ///< 64, 128 or 256
  DType source = DType::bf16;  ///< bf16 or f16
  bool hadamard = false;       ///< rotate each row by diag(signs) H / sqrt(D)
  uint64_t seed = kDefaultHadamardSeed; ///< the random signs' seed

  static constexpr uint64_t kDefaultHadamardSeed = 0x5eed;
};

/// Rows per CTA and per scale of block quantization (the FP8 attention
/// kernels' key block).
inline constexpr int64_t kQuantizeBlockRows = 128;

/// The launch facts of a quantize kernel.
struct QuantizeLaunch {
  std::string kernel;     ///< its .entry name
  int64_t numThreads = 0; ///< blockDim.x; the grid is (ceil(N / 128), H, B)
  int64_t smemBytes = 0;  ///< dynamic shared memory
};

/// Checks `spec`; the message says what is supported.
llvm::Error checkQuantizeSpec(const QuantizeKernelSpec &spec);

/// The kernel's name and launch facts.
QuantizeLaunch quantizeLaunch(const QuantizeKernelSpec &spec);

/// The sign (+1: false, -1: true) of column `column` of the rotation.
bool hadamardSignNegative(uint64_t seed, int64_t column);

/// Builds the kernel into `module` as an llvm.func (LLVM, NVVM, arith and
/// scf ops; lowerQuantizeModule finishes the conversion).
void buildQuantizeKernel(ModuleOp module, const QuantizeKernelSpec &spec);

/// The upstream conversions that leave `module` in the LLVM dialect.
LogicalResult lowerQuantizeModule(ModuleOp module);

/// The kernel's PTX.
llvm::Expected<std::string> emitQuantizePtx(MLIRContext &context,
                                            const QuantizeKernelSpec &spec);

} // namespace mlir::attn

#endif // ATTN_CODEGEN_QUANTIZE_H
