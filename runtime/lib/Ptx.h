//===- Ptx.h - Consistency check of PTX text against metadata ---*- C++ -*-===//
//
// Before handing PTX to the driver, the runtime reads just enough of it to
// catch a kernel and metadata that disagree: the .target, the .entry name
// and the byte size of each entry parameter. A wrong parameter list would
// otherwise make the kernel read garbage and fault, poisoning the context.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_LIB_PTX_H
#define ATTNRT_LIB_PTX_H

#include "Metadata.h"

#include "attnrt/attnrt.h"

namespace attnrt {

/// Checks `ptx` against `info`: ".target" equals info.arch, an ".entry"
/// named info.kernel exists, and its parameters have the sizes of the
/// metadata's parameter list `abi`. Returns ATTNRT_ERROR_INVALID_PTX with
/// a message on mismatch.
attnrt_status checkPtx(const char *ptx, const attnrt_kernel_info &info, const KernelAbi &abi);

} // namespace attnrt

#endif // ATTNRT_LIB_PTX_H
