//===- Module.h - A loaded kernel -------------------------------*- C++ -*-===//

#ifndef ATTNRT_LIB_MODULE_H
#define ATTNRT_LIB_MODULE_H

#include "Driver.h"
#include "Metadata.h"

#include "attnrt/attnrt.h"

#include <cuda.h>

/// The opaque handle of the C API: the kernel's metadata, the context it was
/// loaded in, and its CUmodule / CUfunction.
struct attnrt_module {
  attnrt_kernel_info info;
  /// The kernel's parameters, as its metadata lists them.
  attnrt::KernelAbi abi;
  const attnrt::DriverApi *api = nullptr;
  CUcontext context = nullptr;
  CUdevice device = 0;
  /// True when load retained device 0's primary context (no context was
  /// current); unload releases it.
  bool retainedPrimary = false;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
};

namespace attnrt {

/// Makes `context` current for the lifetime of the guard if another (or
/// none) is current, so a module can be used from any thread.
class ScopedContext {
public:
  ScopedContext(const DriverApi &driver, CUcontext context);
  ~ScopedContext();
  ScopedContext(const ScopedContext &) = delete;
  ScopedContext &operator=(const ScopedContext &) = delete;

  /// ATTNRT_OK, or the error of switching contexts (message recorded).
  attnrt_status status() const { return result; }

private:
  const DriverApi &api;
  bool pushed = false;
  attnrt_status result = ATTNRT_OK;
};

} // namespace attnrt

#endif // ATTNRT_LIB_MODULE_H
