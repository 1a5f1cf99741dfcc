//===- Metadata.h - Kernel metadata (docs/ABI.md) ---------------*- C++ -*-===//

#ifndef ATTNRT_LIB_METADATA_H
#define ATTNRT_LIB_METADATA_H

#include "attnrt/attnrt.h"

#include <vector>

namespace attnrt {

/// One kernel parameter of ABI v1: its name in the metadata "params" list
/// and its size in the PTX parameter space.
struct AbiParam {
  const char *name;
  unsigned bytes;
};

/// Bytes of a CUtensorMap, passed by value to sm_90a kernels.
constexpr unsigned kTensorMapBytes = 128;

/// The parameters the runtime passes, in order (docs/ABI.md "Kernel
/// parameters"): [tma_q, tma_k, tma_v,] q, k, v, o, lse, 12 strides, 4 sizes.
const std::vector<AbiParam> &abiParams(bool usesTma);

/// "f16" / "bf16" for an attnrt_dtype, "invalid" otherwise.
const char *dtypeName(int dtype);

/// Bytes per element of Q/K/V/O (2 for both supported dtypes).
constexpr int kElementBytes = 2;

/// Parses and validates a metadata JSON text into `out` (device fields set
/// to -1). Records a message naming the key and returns
/// ATTNRT_ERROR_INVALID_METADATA on failure.
attnrt_status parseMetadata(const char *json, attnrt_kernel_info &out);

} // namespace attnrt

#endif // ATTNRT_LIB_METADATA_H
