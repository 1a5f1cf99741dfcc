//===- Driver.cpp - dlopen of libcuda.so.1 and its function table ----------===//

#include "Driver.h"

#include "Error.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace attnrt {

/// Environment variable naming the driver library to load instead of
/// libcuda.so.1 (e.g. a driver outside the loader path, or a test double).
static constexpr const char *kDriverEnv = "ATTNRT_CUDA_DRIVER";
/// The driver's soname, as installed by every NVIDIA Linux driver.
static constexpr const char *kDriverSoname = "libcuda.so.1";

/// Two-step stringification so a cuda.h alias (cuCtxPushCurrent ->
/// cuCtxPushCurrent_v2) is expanded before it is quoted.
#define ATTNRT_STRINGIFY_IMPL(x) #x
#define ATTNRT_SYMBOL_NAME(fn) ATTNRT_STRINGIFY_IMPL(fn)

namespace {

/// Process-wide driver state, guarded by `mutex`.
struct DriverState {
  std::mutex mutex;
  DriverApi api;
  bool ready = false;
};

DriverState &state() {
  static DriverState instance;
  return instance;
}

/// dlsym into a typed function pointer; false if the symbol is absent.
template <typename Fn> bool bindSymbol(void *library, const char *symbol, Fn &slot) {
  slot = reinterpret_cast<Fn>(dlsym(library, symbol));
  return slot != nullptr;
}

/// The file `library` was loaded from, or `fallback` if dlinfo can't say.
std::string loadedPath(void *symbolInLibrary, const char *fallback) {
  Dl_info info;
  if (symbolInLibrary && dladdr(symbolInLibrary, &info) && info.dli_fname)
    return info.dli_fname;
  return fallback;
}

/// Fills `api` from `library`. Returns the name of the first required
/// symbol that is missing, or nullptr when all are present.
const char *bindAll(void *library, DriverApi &api) {
#define ATTNRT_BIND(member, fn)                                                                    \
  if (!bindSymbol(library, ATTNRT_SYMBOL_NAME(fn), api.member))                                    \
    return ATTNRT_SYMBOL_NAME(fn);
  ATTNRT_BIND(init, cuInit)
  ATTNRT_BIND(driverGetVersion, cuDriverGetVersion)
  ATTNRT_BIND(getErrorName, cuGetErrorName)
  ATTNRT_BIND(getErrorString, cuGetErrorString)
  ATTNRT_BIND(deviceGet, cuDeviceGet)
  ATTNRT_BIND(deviceGetCount, cuDeviceGetCount)
  ATTNRT_BIND(deviceGetAttribute, cuDeviceGetAttribute)
  ATTNRT_BIND(deviceGetName, cuDeviceGetName)
  ATTNRT_BIND(ctxGetCurrent, cuCtxGetCurrent)
  ATTNRT_BIND(ctxSetCurrent, cuCtxSetCurrent)
  ATTNRT_BIND(ctxGetDevice, cuCtxGetDevice)
  ATTNRT_BIND(ctxPushCurrent, cuCtxPushCurrent)
  ATTNRT_BIND(ctxPopCurrent, cuCtxPopCurrent)
  ATTNRT_BIND(primaryCtxRetain, cuDevicePrimaryCtxRetain)
  ATTNRT_BIND(primaryCtxRelease, cuDevicePrimaryCtxRelease)
  ATTNRT_BIND(moduleLoadDataEx, cuModuleLoadDataEx)
  ATTNRT_BIND(moduleUnload, cuModuleUnload)
  ATTNRT_BIND(moduleGetFunction, cuModuleGetFunction)
  ATTNRT_BIND(funcGetAttribute, cuFuncGetAttribute)
  ATTNRT_BIND(funcSetAttribute, cuFuncSetAttribute)
  ATTNRT_BIND(occupancyMaxActiveBlocks, cuOccupancyMaxActiveBlocksPerMultiprocessor)
  ATTNRT_BIND(launchKernel, cuLaunchKernel)
  ATTNRT_BIND(pointerGetAttributes, cuPointerGetAttributes)
#undef ATTNRT_BIND
  // Optional: absent from pre-12.0 drivers; TMA modules check for it.
  bindSymbol(library, ATTNRT_SYMBOL_NAME(cuTensorMapEncodeTiled), api.tensorMapEncodeTiled);
  // Optional: only the varlen checks use them, and they say so if absent.
  bindSymbol(library, ATTNRT_SYMBOL_NAME(cuMemcpyDtoHAsync), api.memcpyDtoHAsync);
  bindSymbol(library, ATTNRT_SYMBOL_NAME(cuStreamSynchronize), api.streamSynchronize);
  bindSymbol(library, ATTNRT_SYMBOL_NAME(cuStreamIsCapturing), api.streamIsCapturing);
  return nullptr;
}

} // namespace

std::string describe(const DriverApi &api, CUresult result) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (api.getErrorName && api.getErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (api.getErrorString && api.getErrorString(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  if (name && text)
    return format("%s (%s)", name, text);
  if (name)
    return name;
  return format("CUresult %d", static_cast<int>(result));
}

attnrt_status failCuda(const DriverApi &api, CUresult result, const char *what, const char *hint) {
  return fail(ATTNRT_ERROR_CUDA, "%s failed with %s: %s", what, describe(api, result).c_str(), hint);
}

attnrt_status loadDriver(const DriverApi **out) {
  DriverState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.ready) {
    *out = &s.api;
    return ATTNRT_OK;
  }

  const char *override = std::getenv(kDriverEnv);
  const char *request = (override && *override) ? override : kDriverSoname;
  void *library = dlopen(request, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    return fail(ATTNRT_ERROR_NO_DRIVER,
                "could not load the CUDA driver library '%s' (%s): no NVIDIA driver is installed or "
                "its libcuda.so.1 is not on the loader path; install the NVIDIA driver, add its "
                "directory to LD_LIBRARY_PATH, or set %s to the full path of libcuda.so.1",
                request, why ? why : "unknown dlopen error", kDriverEnv);
  }

  DriverApi api;
  if (const char *missing = bindAll(library, api)) {
    std::string path = loadedPath(dlsym(library, "cuInit"), request);
    dlclose(library);
    return fail(ATTNRT_ERROR_NO_DRIVER,
                "the CUDA driver library '%s' has no symbol '%s': the driver is too old for attngen "
                "(it needs a CUDA 12.0 or newer driver, R525+); update the NVIDIA driver",
                path.c_str(), missing);
  }
  api.path = loadedPath(reinterpret_cast<void *>(api.init), request);

  // From here on the library stays loaded even on failure: cuInit may have
  // started driver threads, and dlclose under them is unsafe. A retry
  // dlopens the same handle again.
  CUresult result = api.init(0);
  if (result == CUDA_ERROR_STUB_LIBRARY)
    return fail(ATTNRT_ERROR_NO_DRIVER,
                "'%s' is the CUDA toolkit's stub library, not a real driver (cuInit returned "
                "CUDA_ERROR_STUB_LIBRARY): run on a machine with an NVIDIA driver, and keep the "
                "toolkit's lib64/stubs directory out of LD_LIBRARY_PATH",
                api.path.c_str());
  if (result == CUDA_ERROR_NO_DEVICE)
    return fail(ATTNRT_ERROR_NO_DEVICE,
                "the CUDA driver '%s' found no CUDA device (cuInit returned CUDA_ERROR_NO_DEVICE): "
                "check nvidia-smi and that CUDA_VISIBLE_DEVICES does not hide every GPU",
                api.path.c_str());
  if (result == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE ||
      result == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
    return fail(ATTNRT_ERROR_NO_DRIVER,
                "the CUDA driver '%s' cannot be initialized (cuInit returned %s): the kernel module "
                "and the user-space driver disagree or are too old; reinstall or update the NVIDIA "
                "driver",
                api.path.c_str(), describe(api, result).c_str());
  if (result != CUDA_SUCCESS)
    return fail(ATTNRT_ERROR_CUDA,
                "cuInit(0) of the CUDA driver '%s' failed with %s: check that the GPU is healthy "
                "(nvidia-smi) and that this process may open /dev/nvidia*",
                api.path.c_str(), describe(api, result).c_str());
  if (api.driverGetVersion(&api.version) != CUDA_SUCCESS)
    api.version = 0;

  s.api = std::move(api);
  s.ready = true;
  *out = &s.api;
  return ATTNRT_OK;
}

} // namespace attnrt
