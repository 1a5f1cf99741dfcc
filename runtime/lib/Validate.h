//===- Validate.h - Checks of a forward call against a kernel ---*- C++ -*-===//

#ifndef ATTNRT_LIB_VALIDATE_H
#define ATTNRT_LIB_VALIDATE_H

#include "attnrt/attnrt.h"

namespace attnrt {

/// True when the call has nothing to compute (batch == 0 or nq == 0).
bool isEmptyForward(const attnrt_forward_args &args);

/// Pure host-side check of `args` against `info` (see Validate.cpp for the
/// list); records a message and returns ATTNRT_ERROR_INVALID_ARGUMENT.
attnrt_status checkForwardArgs(const attnrt_kernel_info &info, const attnrt_forward_args &args);

/// grid = (ceil(nq / block_m), H, B), block = (num_threads, 1, 1), dynamic
/// shared memory = smem_bytes. `args` must have passed checkForwardArgs.
void launchDims(const attnrt_kernel_info &info, const attnrt_forward_args &args, unsigned grid[3],
                unsigned block[3], unsigned &smemBytes);

} // namespace attnrt

#endif // ATTNRT_LIB_VALIDATE_H
