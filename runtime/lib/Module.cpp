//===- Module.cpp - Loading and unloading kernels ---------------------------===//
//
// attnrt_module_load: metadata -> PTX consistency -> driver -> context ->
// device checks -> JIT -> function attributes. Everything that can be
// checked without a GPU is checked before the driver is touched.
//
//===----------------------------------------------------------------------===//

#include "Module.h"

#include "Error.h"
#include "Metadata.h"
#include "Ptx.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

namespace attnrt {

/// Size of each JIT log buffer (ptxas errors and info).
static constexpr unsigned kJitLogBytes = 16384;
/// Length of a device name buffer for cuDeviceGetName.
static constexpr int kDeviceNameBytes = 256;

ScopedContext::ScopedContext(const DriverApi &driver, CUcontext context) : api(driver) {
  CUcontext current = nullptr;
  CUresult r = api.ctxGetCurrent(&current);
  if (r != CUDA_SUCCESS) {
    result = failCuda(api, r, "cuCtxGetCurrent", "the CUDA driver is in a bad state; restart the process");
    return;
  }
  if (current == context)
    return;
  r = api.ctxPushCurrent(context);
  if (r != CUDA_SUCCESS) {
    result = failCuda(api, r, "cuCtxPushCurrent of the module's context",
                      "the context the module was loaded in may have been destroyed; load the "
                      "module again");
    return;
  }
  pushed = true;
}

ScopedContext::~ScopedContext() {
  if (pushed) {
    CUcontext popped;
    api.ctxPopCurrent(&popped);
  }
}

namespace {

/// Unloads what `m` holds (module, retained primary context). Safe on a
/// partly loaded module.
void destroy(attnrt_module *m) {
  if (!m)
    return;
  if (m->api && m->module) {
    ScopedContext scope(*m->api, m->context);
    m->api->moduleUnload(m->module);
  }
  if (m->api && m->retainedPrimary) {
    // Never leave a thread current on a context that may be destroyed.
    CUcontext current = nullptr;
    if (m->api->ctxGetCurrent(&current) == CUDA_SUCCESS && current == m->context)
      m->api->ctxSetCurrent(nullptr);
    m->api->primaryCtxRelease(m->device);
  }
  delete m;
}

/// Owner of a module under construction.
struct ModuleDeleter {
  void operator()(attnrt_module *m) const { destroy(m); }
};
using ModulePtr = std::unique_ptr<attnrt_module, ModuleDeleter>;

/// Picks the context: the current one, else device 0's primary context
/// (retained and made current).
attnrt_status acquireContext(attnrt_module &m) {
  const DriverApi &api = *m.api;
  CUresult r = api.ctxGetCurrent(&m.context);
  if (r != CUDA_SUCCESS)
    return failCuda(api, r, "cuCtxGetCurrent", "the CUDA driver is in a bad state; restart the process");
  if (m.context) {
    r = api.ctxGetDevice(&m.device);
    if (r != CUDA_SUCCESS)
      return failCuda(api, r, "cuCtxGetDevice on the current context",
                      "the current CUDA context is unusable (destroyed?); make a valid context "
                      "current or none at all");
    return ATTNRT_OK;
  }
  int count = 0;
  r = api.deviceGetCount(&count);
  if (r != CUDA_SUCCESS)
    return failCuda(api, r, "cuDeviceGetCount", "check nvidia-smi");
  if (count == 0)
    return fail(ATTNRT_ERROR_NO_DEVICE,
                "the CUDA driver sees no device: check nvidia-smi and that CUDA_VISIBLE_DEVICES does "
                "not hide every GPU");
  r = api.deviceGet(&m.device, 0);
  if (r != CUDA_SUCCESS)
    return failCuda(api, r, "cuDeviceGet(0)", "check nvidia-smi");
  r = api.primaryCtxRetain(&m.context, m.device);
  if (r != CUDA_SUCCESS)
    return failCuda(api, r, "cuDevicePrimaryCtxRetain on device 0",
                    "the GPU may be in exclusive-process mode and used by another process, or out "
                    "of memory");
  m.retainedPrimary = true;
  r = api.ctxSetCurrent(m.context);
  if (r != CUDA_SUCCESS)
    return failCuda(api, r, "cuCtxSetCurrent of device 0's primary context", "check nvidia-smi");
  return ATTNRT_OK;
}

/// One integer attribute of the device.
attnrt_status deviceAttribute(const attnrt_module &m, CUdevice_attribute attribute, const char *name,
                              int &value) {
  CUresult r = m.api->deviceGetAttribute(&value, attribute, m.device);
  if (r != CUDA_SUCCESS)
    return failCuda(*m.api, r, name, "check nvidia-smi");
  return ATTNRT_OK;
}

/// Compute capability vs "arch", and shared memory vs the opt-in limit.
attnrt_status checkDevice(attnrt_module &m, const char *deviceName) {
  attnrt_kernel_info &info = m.info;
  info.device = static_cast<int>(m.device);
  if (attnrt_status s = deviceAttribute(m, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                        "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)", info.cc_major))
    return s;
  if (attnrt_status s = deviceAttribute(m, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                        "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)", info.cc_minor))
    return s;
  bool sm90a = std::strcmp(info.arch, "sm_90a") == 0;
  bool supported = sm90a ? (info.cc_major == 9 && info.cc_minor == 0) : info.cc_major >= 8;
  if (!supported)
    return fail(ATTNRT_ERROR_UNSUPPORTED_DEVICE,
                "kernel '%s' is compiled for %s, which runs only on compute capability %s, but "
                "device %d (%s) has compute capability %d.%d: %s",
                info.kernel, info.arch, sm90a ? "9.0 exactly (H100/H200)" : "8.0 or newer",
                info.device, deviceName, info.cc_major, info.cc_minor,
                sm90a ? "compile the kernel for sm_80 to run on this GPU, or use a Hopper GPU"
                      : "use an Ampere or newer GPU");

  // A persistent kernel's grid is a multiple of the SM count.
  if (attnrt_status s = deviceAttribute(m, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                        "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)", info.num_sms))
    return s;
  int optin = 0;
  if (attnrt_status s = deviceAttribute(m, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                        "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)", optin))
    return s;
  if (info.smem_bytes > optin)
    return fail(ATTNRT_ERROR_UNSUPPORTED_DEVICE,
                "kernel '%s' needs %d bytes of dynamic shared memory per block but device %d (%s) "
                "allows at most %d: compile the kernel with smaller tiles or fewer pipeline stages",
                info.kernel, info.smem_bytes, info.device, deviceName, optin);
  return ATTNRT_OK;
}

/// JIT-compiles the PTX, reporting ptxas' log on failure.
attnrt_status loadPtx(attnrt_module &m, const char *ptx) {
  const DriverApi &api = *m.api;
  std::unique_ptr<char[]> errorLog(new char[kJitLogBytes]());
  std::unique_ptr<char[]> infoLog(new char[kJitLogBytes]());
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {errorLog.get(), reinterpret_cast<void *>(static_cast<uintptr_t>(kJitLogBytes)),
                    infoLog.get(), reinterpret_cast<void *>(static_cast<uintptr_t>(kJitLogBytes))};
  CUresult r = api.moduleLoadDataEx(&m.module, ptx, sizeof(options) / sizeof(options[0]), options, values);
  if (r == CUDA_SUCCESS)
    return ATTNRT_OK;
  m.module = nullptr;
  errorLog[kJitLogBytes - 1] = '\0';
  const char *hint = "fix the kernel generator";
  if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    hint = "the driver is older than the PTX ISA version of the kernel; update the NVIDIA driver or "
           "emit an older PTX version";
  else if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_PTX)
    hint = "the PTX does not assemble for this GPU; the ptxas log says why (try ptxas -arch=<arch> "
           "on the file)";
  return fail(ATTNRT_ERROR_CUDA,
              "cuModuleLoadDataEx (JIT of kernel '%s' for %s) failed with %s: %s; ptxas log: %s",
              m.info.kernel, m.info.arch, describe(api, r).c_str(), hint,
              errorLog[0] ? errorLog.get() : "(empty)");
}

/// Looks the entry up, reads its resource use and raises its dynamic
/// shared memory limit to smem_bytes.
attnrt_status prepareFunction(attnrt_module &m, const char *deviceName) {
  const DriverApi &api = *m.api;
  attnrt_kernel_info &info = m.info;
  CUresult r = api.moduleGetFunction(&m.function, m.module, info.kernel);
  if (r != CUDA_SUCCESS)
    return failCuda(api, r, "cuModuleGetFunction",
                    "the PTX has no entry named like the metadata's \"kernel\"; regenerate both with "
                    "the same attngen run");
  struct {
    CUfunction_attribute attribute;
    const char *name;
    int *slot;
  } attributes[] = {
      {CU_FUNC_ATTRIBUTE_NUM_REGS, "NUM_REGS", &info.num_regs},
      {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "LOCAL_SIZE_BYTES", &info.local_bytes},
      {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES", &info.static_smem_bytes},
      {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK", &info.max_threads_per_block}};
  for (auto &a : attributes) {
    r = api.funcGetAttribute(a.slot, a.attribute, m.function);
    if (r != CUDA_SUCCESS)
      return failCuda(api, r, format("cuFuncGetAttribute(%s)", a.name).c_str(), "check nvidia-smi");
  }
  if (info.num_threads > info.max_threads_per_block)
    return fail(ATTNRT_ERROR_UNSUPPORTED_DEVICE,
                "kernel '%s' uses %d registers per thread, so at most %d threads fit in a block on "
                "device %d (%s), but its metadata says num_threads = %d: reduce the kernel's "
                "register use or its thread count",
                info.kernel, info.num_regs, info.max_threads_per_block, info.device, deviceName,
                info.num_threads);
  // A persistent kernel's grid is a multiple of the SM count.
  if (attnrt_status s = deviceAttribute(m, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                        "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)", info.num_sms))
    return s;
  int optin = 0;
  if (attnrt_status s = deviceAttribute(m, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                        "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)", optin))
    return s;
  if (info.static_smem_bytes + info.smem_bytes > optin)
    return fail(ATTNRT_ERROR_UNSUPPORTED_DEVICE,
                "kernel '%s' needs %d bytes of static plus %d bytes of dynamic shared memory, more "
                "than the %d bytes per block device %d (%s) allows: compile with smaller tiles",
                info.kernel, info.static_smem_bytes, info.smem_bytes, optin, info.device, deviceName);
  r = api.funcSetAttribute(m.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, info.smem_bytes);
  if (r != CUDA_SUCCESS)
    return failCuda(api, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                    "the device refused the kernel's shared memory size; compile with smaller tiles");
  // How many CTAs share an SM, with the registers and the shared memory
  // just set: the split-KV planner's CTA slots.
  r = api.occupancyMaxActiveBlocks(&info.max_ctas_per_sm, m.function, info.num_threads,
                                   static_cast<size_t>(info.smem_bytes));
  if (r != CUDA_SUCCESS)
    return failCuda(api, r, "cuOccupancyMaxActiveBlocksPerMultiprocessor", "check nvidia-smi");
  if (info.uses_tma && !api.tensorMapEncodeTiled)
    return fail(ATTNRT_ERROR_NO_DRIVER,
                "kernel '%s' uses TMA but the CUDA driver '%s' has no cuTensorMapEncodeTiled: update "
                "the NVIDIA driver to a CUDA 12.0 or newer one",
                info.kernel, api.path.c_str());
  return ATTNRT_OK;
}

attnrt_status loadModule(const char *ptx, const char *metadataJson, attnrt_module **out) {
  if (!out)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "attnrt_module_load got out = NULL: pass the address of an attnrt_module pointer");
  *out = nullptr;
  if (!ptx)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "the PTX text is NULL: pass the contents of the kernel's .ptx file");

  ModulePtr m(new attnrt_module());
  if (attnrt_status s = parseMetadata(metadataJson, m->info, &m->abi))
    return s;
  if (attnrt_status s = checkPtx(ptx, m->info, m->abi))
    return s;
  if (attnrt_status s = loadDriver(&m->api))
    return s;
  if (attnrt_status s = acquireContext(*m))
    return s;
  ScopedContext scope(*m->api, m->context);
  if (attnrt_status s = scope.status())
    return s;

  char deviceName[kDeviceNameBytes] = "unknown GPU";
  if (m->api->deviceGetName(deviceName, kDeviceNameBytes, m->device) != CUDA_SUCCESS)
    std::snprintf(deviceName, sizeof(deviceName), "unknown GPU");
  if (attnrt_status s = checkDevice(*m, deviceName))
    return s;
  if (attnrt_status s = loadPtx(*m, ptx))
    return s;
  if (attnrt_status s = prepareFunction(*m, deviceName))
    return s;
  *out = m.release();
  return ATTNRT_OK;
}

/// Reads a whole file into `text`.
attnrt_status readFile(const char *path, const char *what, std::string &text) {
  if (!path)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT, "the %s path is NULL: pass the path of the kernel's %s",
                what, what);
  FILE *file = std::fopen(path, "rb");
  if (!file)
    return fail(ATTNRT_ERROR_IO, "cannot open the %s '%s': %s; check the path", what, path,
                std::strerror(errno));
  text.clear();
  char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    text.append(buffer, n);
  bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed)
    return fail(ATTNRT_ERROR_IO, "cannot read the %s '%s': %s", what, path, std::strerror(errno));
  if (text.find('\0') != std::string::npos)
    return fail(ATTNRT_ERROR_IO,
                "the %s '%s' contains NUL bytes: it is not a text file (pass the .ptx and .json "
                "files, not a cubin)",
                what, path);
  return ATTNRT_OK;
}

} // namespace

} // namespace attnrt

extern "C" {

attnrt_status attnrt_module_load(const char *ptx, const char *metadata_json, attnrt_module **out) {
  return attnrt::guardApi("attnrt_module_load",
                          [&] { return attnrt::loadModule(ptx, metadata_json, out); });
}

attnrt_status attnrt_module_load_files(const char *ptx_path, const char *metadata_path,
                                       attnrt_module **out) {
  return attnrt::guardApi("attnrt_module_load_files", [&] {
    if (!out)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "attnrt_module_load_files got out = NULL: pass the address of an "
                          "attnrt_module pointer");
    *out = nullptr;
    std::string ptx, metadata;
    if (attnrt_status s = attnrt::readFile(ptx_path, "PTX file", ptx))
      return s;
    if (attnrt_status s = attnrt::readFile(metadata_path, "metadata file", metadata))
      return s;
    attnrt_status s = attnrt::loadModule(ptx.c_str(), metadata.c_str(), out);
    if (s != ATTNRT_OK) {
      // Say which files the failure is about.
      std::string message = attnrt::format("%s [loading '%s' with '%s']", attnrt_last_error(),
                                           ptx_path, metadata_path);
      attnrt::failWith(s, std::move(message));
    }
    return s;
  });
}

attnrt_status attnrt_module_unload(attnrt_module *module) {
  return attnrt::guardApi("attnrt_module_unload", [&] {
    attnrt::destroy(module);
    return ATTNRT_OK;
  });
}

attnrt_status attnrt_current_device(void **context, int *device, int *cc_major, int *cc_minor) {
  return attnrt::guardApi("attnrt_current_device", [&] {
    attnrt_module probe; // only its context/device fields are used
    if (attnrt_status s = attnrt::loadDriver(&probe.api))
      return s;
    if (attnrt_status s = attnrt::acquireContext(probe))
      return s;
    int major = 0, minor = 0;
    if (attnrt_status s = attnrt::deviceAttribute(
            probe, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)", major))
      return s;
    if (attnrt_status s = attnrt::deviceAttribute(
            probe, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)", minor))
      return s;
    // A primary context retained here stays retained: it is now the
    // thread's current context, and modules loaded later rely on it.
    if (context)
      *context = probe.context;
    if (device)
      *device = probe.device;
    if (cc_major)
      *cc_major = major;
    if (cc_minor)
      *cc_minor = minor;
    return ATTNRT_OK;
  });
}

attnrt_status attnrt_current_device_max_smem(int *bytes) {
  return attnrt::guardApi("attnrt_current_device_max_smem", [&] {
    if (!bytes)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "attnrt_current_device_max_smem needs a non-NULL output");
    attnrt_module probe; // only its context/device fields are used
    if (attnrt_status s = attnrt::loadDriver(&probe.api))
      return s;
    if (attnrt_status s = attnrt::acquireContext(probe))
      return s;
    return attnrt::deviceAttribute(probe, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                   "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
                                   *bytes);
  });
}

attnrt_status attnrt_module_info(const attnrt_module *module, attnrt_kernel_info *out) {
  return attnrt::guardApi("attnrt_module_info", [&] {
    if (!module || !out)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "attnrt_module_info needs a loaded module and a non-NULL output");
    *out = module->info;
    return ATTNRT_OK;
  });
}

} // extern "C"
