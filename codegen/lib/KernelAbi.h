//===- KernelAbi.h - a kernel's parameters, derived from its IR -*- C++ -*-===//
//
// The one place that decides a kernel's parameter list (docs/ABI.md): which
// tensors it takes (by role, from the kernel's `attn.tensors`), which of
// them the copy engine loads (a TMA descriptor each, with the box its
// copies use), their pointers and element strides, and the problem sizes.
// attn-to-nvvm builds the llvm.func signature from it and records it on the
// kernel (`attn.params`), the metadata writer copies that record into the
// JSON, and the runtime binds each parameter by its kind and tensor: no
// positional list is kept anywhere else.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CODEGEN_KERNELABI_H
#define ATTN_CODEGEN_KERNELABI_H

#include "abi/TensorRoles.h"
#include "attn/Dialect/AttnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace mlir::attn {

/// The role of a kernel tensor (the `attn.tensors` names): the runtime's
/// table (runtime/abi/TensorRoles.h), so compiler and runtime agree on it.
using Tensor = attnrt::abi::TensorRole;
/// Number of tensor roles.
constexpr int kNumTensors = attnrt::abi::kNumTensorRoles;

/// "q", "k", "v", "o", "lse", "cu_seqlens_q", "cu_seqlens_k",
/// "cache_seqlens", "block_table", "o_partial", "lse_partial".
llvm::StringRef tensorName(Tensor tensor);
/// The role named `name`, if it is one.
std::optional<Tensor> tensorFromName(llvm::StringRef name);

/// What a kernel parameter carries.
enum class AbiParamKind {
  TensorMap, ///< a 128-byte CUtensorMap of a tensor, by value (sm_90a TMA)
  Pointer,   ///< a tensor's 64-bit global address
  Stride,    ///< one element stride of a tensor (i64)
  Size,      ///< one problem size (i32)
};

/// "tensor_map", "pointer", "stride", "size".
llvm::StringRef abiParamKindName(AbiParamKind kind);

/// One kernel parameter.
struct AbiParam {
  AbiParamKind kind = AbiParamKind::Size;
  Tensor tensor = Tensor::Q;       ///< TensorMap, Pointer, Stride
  int dim = 0;                     ///< Stride: 0 = b, 1 = n, 2 = h (a packed
                                   ///< [total, H, D] tensor has n and h, a
                                   ///< block table b only: its row stride)
  SizeKind size = SizeKind::batch; ///< Size
  /// TensorMap: the TMA box, one swizzle panel of the copied tile (its
  /// columns, 16, 32 or 64, give the swizzle span: 32, 64 or 128 bytes).
  int64_t boxCols = 0, boxRows = 0;

  /// The parameter's name: tma_q, q, q_stride_b, nq, ...
  std::string name() const;
};

/// A kernel's tensors (in argument order) and its parameters (in order).
struct KernelAbi {
  llvm::SmallVector<Tensor> tensors;
  llvm::SmallVector<AbiParam> params;
};

/// The problem size dimension `dim` of a kernel tensor of role `tensor`
/// spans (the kernel's size parameter memref.dim reads), or none for a
/// dimension no size parameter describes: the head dimension, a paged
/// cache's static page size, a workspace's splits x batch rows.
std::optional<SizeKind> tensorDimSize(Tensor tensor, unsigned dim,
                                      bool pagedCache);
/// Derives the ABI of a tile-program kernel for `target`. Fails with a
/// located error when `attn.tensors` is missing or does not name each
/// argument by a distinct known role, or when a tensor is copied with
/// different box shapes.
FailureOr<KernelAbi> deriveKernelAbi(func::FuncOp kernel, TargetKind target);

/// The parameters as the `attn.params` attribute of the lowered kernel: one
/// dictionary per parameter (name, kind, tensor, dim, size, box).
ArrayAttr abiParamsAttr(MLIRContext *ctx, const KernelAbi &abi);

} // namespace mlir::attn

#endif // ATTN_CODEGEN_KERNELABI_H
