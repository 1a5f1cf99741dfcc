//===- Metadata.h - Kernel metadata (docs/ABI.md) ---------------*- C++ -*-===//

#ifndef ATTNRT_LIB_METADATA_H
#define ATTNRT_LIB_METADATA_H

#include "abi/TensorRoles.h"
#include "attnrt/attnrt.h"

#include <string>
#include <vector>

namespace attnrt {

/// Bytes of a CUtensorMap, passed by value to sm_90a kernels.
constexpr unsigned kTensorMapBytes = 128;

/// What a kernel parameter carries (metadata "params"[i]."kind").
enum class ParamKind { TensorMap, Pointer, Stride, Size };

/// The tensors of a forward call the runtime can bind ("tensor"): the ABI's
/// table (runtime/abi/TensorRoles.h), which the compiler names them from.
using abi::TensorRole;
using abi::kNumTensorRoles;

/// One kernel parameter as the metadata describes it (docs/ABI.md "Kernel
/// parameters"): the runtime binds it by kind and tensor, never by position.
struct KernelParam {
  std::string name;
  ParamKind kind = ParamKind::Size;
  TensorRole tensor = TensorRole::Q; ///< TensorMap, Pointer, Stride
  int dim = 0;                       ///< Stride: 0 b, 1 n, 2 h
  int size = ATTNRT_SIZE_BATCH;      ///< Size: an attnrt_size
  int boxCols = 0, boxRows = 0;      ///< TensorMap

  /// Bytes in the PTX parameter space: 128, 8 or 4.
  unsigned bytes() const;
};

/// The parameter list of a kernel, in order.
struct KernelAbi {
  std::vector<KernelParam> params;
};

/// "f16" / "bf16" for an attnrt_dtype, "invalid" otherwise.
const char *dtypeName(int dtype);

/// Bytes per element of Q/K/V/O (2 for both supported dtypes).
constexpr int kElementBytes = 2;

/// The swizzle span (bytes) of a TMA box `boxCols` elements wide: its row
/// is one span of 32, 64 or 128 bytes (docs/ABI.md); 0 for any other width.
int tmaSwizzleSpanOf(int boxCols, int elementBytes = kElementBytes);
/// Bytes of one element of `role` as the kernels address it: 4 for the f32
/// tensors a TMA descriptor may cover (the dQ accumulator), else 2.
int tmaElementBytes(TensorRole role, int dtype);

/// Parses and validates a metadata JSON text into `out` (device fields set
/// to -1) and, when `abi` is given, the parameter list into it. Records a
/// message naming the key and returns ATTNRT_ERROR_INVALID_METADATA on
/// failure.
attnrt_status parseMetadata(const char *json, attnrt_kernel_info &out, KernelAbi *abi = nullptr);

/// "batch", "nq", ... for an attnrt_size.
const char *sizeName(int size);

/// "q", "k", ..., "lse_partial" for a TensorRole.
const char *tensorRoleName(TensorRole role);

} // namespace attnrt

#endif // ATTNRT_LIB_METADATA_H
