//===- Driver.h - The CUDA driver, loaded at run time -----------*- C++ -*-===//
//
// libattnrt links no CUDA library: the driver API is reached through a table
// of function pointers filled with dlopen("libcuda.so.1") + dlsym. The
// prototypes come from cuda.h (headers only), so every pointer has exactly
// the type of the function it holds.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_LIB_DRIVER_H
#define ATTNRT_LIB_DRIVER_H

#include "attnrt/attnrt.h"

#include <cuda.h>

#include <string>

namespace attnrt {

/// Driver entry points used by the runtime. cuda.h maps some names to
/// versioned symbols (cuDevicePrimaryCtxRelease -> ..._v2); the table binds
/// the versioned symbol the header's prototype belongs to.
struct DriverApi {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDriverGetVersion) driverGetVersion = nullptr;
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuDeviceGetName) deviceGetName = nullptr;
  decltype(&::cuCtxGetCurrent) ctxGetCurrent = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuCtxGetDevice) ctxGetDevice = nullptr;
  decltype(&::cuCtxPushCurrent) ctxPushCurrent = nullptr;
  decltype(&::cuCtxPopCurrent) ctxPopCurrent = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primaryCtxRelease = nullptr;
  decltype(&::cuModuleLoadDataEx) moduleLoadDataEx = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuFuncGetAttribute) funcGetAttribute = nullptr;
  decltype(&::cuFuncSetAttribute) funcSetAttribute = nullptr;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancyMaxActiveBlocks = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuPointerGetAttributes) pointerGetAttributes = nullptr;
  /// Optional: CUDA 12.0+ drivers only; needed by TMA (sm_90a) kernels.
  decltype(&::cuTensorMapEncodeTiled) tensorMapEncodeTiled = nullptr;
  /// Optional: the varlen checks' copy of cu_seqlens (attnrt_set_seqlen_checks)
  /// and attnrt_check_kvcache_values' copy of the lengths and block table.
  decltype(&::cuMemcpyDtoHAsync) memcpyDtoHAsync = nullptr;
  decltype(&::cuStreamSynchronize) streamSynchronize = nullptr;
  decltype(&::cuStreamIsCapturing) streamIsCapturing = nullptr;

  /// The driver's version as cuDriverGetVersion reports it (12080 = 12.8).
  int version = 0;
  /// File the driver was loaded from (for messages).
  std::string path;
};

/// Loads the driver and runs cuInit(0) once per process; a failed attempt
/// is retried on the next call. The library is ATTNRT_CUDA_DRIVER if set,
/// else "libcuda.so.1". On failure records a message and returns
/// ATTNRT_ERROR_NO_DRIVER (missing, stub or too old driver),
/// ATTNRT_ERROR_NO_DEVICE or ATTNRT_ERROR_CUDA.
attnrt_status loadDriver(const DriverApi **out);

/// "CUDA_ERROR_INVALID_VALUE (invalid argument)" for `result`; works even
/// when the driver cannot name it.
std::string describe(const DriverApi &api, CUresult result);

/// Records "<what> failed with <describe(result)>: <hint>" and returns
/// ATTNRT_ERROR_CUDA.
attnrt_status failCuda(const DriverApi &api, CUresult result, const char *what, const char *hint);

} // namespace attnrt

#endif // ATTNRT_LIB_DRIVER_H
