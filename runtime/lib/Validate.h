//===- Validate.h - Checks of a forward call against a kernel ---*- C++ -*-===//

#ifndef ATTNRT_LIB_VALIDATE_H
#define ATTNRT_LIB_VALIDATE_H

#include "attnrt/attnrt.h"

#include <cstdint>

namespace attnrt {

/// True when the call has nothing to compute (batch == 0 or nq == 0).
bool isEmptyForward(const attnrt_forward_args &args);

/// Pure host-side check of `args` against `info` (see Validate.cpp for the
/// list); records a message and returns ATTNRT_ERROR_INVALID_ARGUMENT.
attnrt_status checkForwardArgs(const attnrt_kernel_info &info, const attnrt_forward_args &args);

/// Checks host copies of a varlen call's cu_seqlens against `args` (see
/// attnrt_check_cu_seqlens); `args.batch` must be in range.
attnrt_status checkCuSeqlens(const attnrt_forward_args &args, const int32_t *cuSeqlensQ,
                             const int32_t *cuSeqlensK);
/// The value of an attnrt_size in `args`.
int64_t sizeValue(const attnrt_forward_args &args, int size);

/// Tiles along dimension `d` of the kernel's grid rule.
int64_t gridTiles(const attnrt_kernel_info &info, const attnrt_forward_args &args, int d);

/// The grid of the kernel's rule (the tile space, or for a persistent kernel
/// min(ctas_per_sm * num_sms, tiles) CTAs), block = (num_threads, 1, 1),
/// dynamic shared memory = smem_bytes. `args` must have passed
/// checkForwardArgs. Fails for a persistent kernel whose info has no device.
attnrt_status launchDims(const attnrt_kernel_info &info, const attnrt_forward_args &args,
                         unsigned grid[3], unsigned block[3], unsigned &smemBytes);

} // namespace attnrt

#endif // ATTNRT_LIB_VALIDATE_H
