//===- Jit.cpp - The JIT: memory cache, disk cache, modules per context ---===//
//
// A request walks down three levels and fills them on the way back:
//   memory (this JIT, per key) -> disk (DiskCache, shared by processes)
//   -> the compiler (Compile.cpp).
// Loaded modules are kept per key and per CUDA context. Each key has its own
// slot and mutex, so threads asking for the same kernel wait for one compile
// while requests for other kernels go on in parallel.
//
//===----------------------------------------------------------------------===//
#include "Compile.h"
#include "DiskCache.h"
#include "Log.h"
#include "Status.h"
#include "attn/Codegen/Quantize.h"
#include "attn/Passes/TileConfig.h"

#include "llvm/Support/FileSystem.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

using namespace attngen;
using mlir::attn::AttentionSpec;
using mlir::attn::TargetKind;

struct attngen_compiled {
  CompiledKernel kernel;
  /// A split-KV kernel's combine kernel (owned by its own slot), or null.
  const attngen_compiled *combine = nullptr;
};

struct attngen_kernel {
  const attngen_compiled *compiled = nullptr;
  attnrt_module *module = nullptr;
  /// A split-KV kernel's combine kernel loaded in the same context (owned
  /// by the combine's slot), or null.
  const attngen_kernel *combine = nullptr;
  /// A KV-cache kernel (metadata "kv_cache"): launched with
  /// attnrt_forward_kvcache.
  bool kvCache = false;
  ~attngen_kernel() { attnrt_module_unload(module); }
};

namespace {

/// How long a process waits for another one compiling the same kernel
/// before compiling it itself.
constexpr std::chrono::milliseconds kCompileLockTimeout{120000};

/// Loads slower than this are reported even without ATTNGEN_LOG.
constexpr double kSlowLoadSeconds = 1.0;

struct Slot {
  std::mutex mutex;
  std::unique_ptr<attngen_compiled> compiled;
  std::map<void *, std::unique_ptr<attngen_kernel>> kernels; ///< by CUcontext
};

struct Counters {
  std::atomic<uint64_t> requests{0}, memoryHits{0}, diskHits{0}, compiles{0},
      diskWrites{0}, corruptEntries{0}, moduleLoads{0};
};

bool diskCacheDisabledByEnv() {
  const char *value = std::getenv("ATTNGEN_DISABLE_DISK_CACHE");
  return value && *value && std::strcmp(value, "0") != 0;
}

/// The calling thread's CUDA context (see attnrt_current_device) and the
/// target attngen compiles for on its GPU.
attngen_status currentDevice(void **context, TargetKind &arch) {
  int major = 0, minor = 0;
  if (attnrt_status s = attnrt_current_device(context, nullptr, &major, &minor))
    return failFromRuntime(s);
  // ATTNGEN_ARCH=sm_80 runs the sm_80 kernels on a Hopper GPU too (their
  // PTX runs on every GPU from 8.0): how their GPU checks run on an H200.
  const char *forced = std::getenv("ATTNGEN_ARCH");
  bool forceSm80 = forced && std::strcmp(forced, "sm_80") == 0;
  if (major == 9 && minor == 0 && !forceSm80) {
    arch = TargetKind::sm_90a;
    return ATTNGEN_OK;
  }
  if (major >= 8) {
    // Ampere, Ada and GPUs newer than Hopper: sm_80 PTX, which the driver
    // compiles for each of them (sm_90a code runs on 9.0 only).
    arch = TargetKind::sm_80;
    return ATTNGEN_OK;
  }
  return fail(ATTNGEN_ERROR_UNSUPPORTED_DEVICE,
              "the current GPU has compute capability {}.{}; attngen "
              "kernels need 8.0 (Ampere) or newer",
              major, minor);
}

} // namespace

struct attngen_jit {
  explicit attngen_jit(std::string dir) : disk(std::move(dir)) {}
  ~attngen_jit() {
    for (auto &entry : quantizeKernels)
      attnrt_quantize_unload(entry.second);
  }

  /// Quantize kernels, loaded, by context and kernel name.
  std::mutex quantizeMutex;
  std::map<std::pair<void *, std::string>, attnrt_quantize_kernel *> quantizeKernels;

  DiskCache disk;
  Counters counters;
  std::mutex slotsMutex;
  std::unordered_map<std::string, std::unique_ptr<Slot>> slots;

  Slot &slotFor(const std::string &key) {
    std::lock_guard<std::mutex> guard(slotsMutex);
    std::unique_ptr<Slot> &slot = slots[key];
    if (!slot)
      slot = std::make_unique<Slot>();
    return *slot;
  }

  /// Memory, then disk, then the compiler; the slot's mutex is held.
  ///
  /// A first disk read goes without the key's lock (the common hit). On a
  /// miss or a bad entry the process takes the lock and reads again: another
  /// process may have written or repaired the entry meanwhile. Only a bad
  /// entry seen under the lock is reported, removed and rebuilt, so one
  /// corrupt file is rebuilt once however many processes trip on it.
  attngen_status fill(Slot &slot, const AttentionSpec &spec,
                      const std::string &key) {
    if (slot.compiled) {
      ++counters.memoryHits;
      return ATTNGEN_OK;
    }
    auto compiled = std::make_unique<attngen_compiled>();
    Stopwatch clock;
    std::string why;
    if (readDisk(key, compiled->kernel, why) == DiskCache::Lookup::Hit) {
      slot.compiled = std::move(compiled);
      return ATTNGEN_OK;
    }
    DiskCache::KeyLock lock = disk.lock(key, kCompileLockTimeout);
    switch (readDisk(key, compiled->kernel, why)) {
    case DiskCache::Lookup::Hit:
      slot.compiled = std::move(compiled);
      return ATTNGEN_OK;
    case DiskCache::Lookup::Corrupt:
      ++counters.corruptEntries;
      // Always said: a corrupt cache is worth knowing about.
      logLine(fmt::format("discarded cache entry '{}': {}; rebuilding it",
                          disk.entryPath(key), why));
      disk.remove(key);
      break;
    case DiskCache::Lookup::Miss:
      break;
    }
    if (attngen_status s = compileKernel(spec, compiled->kernel))
      return s;
    ++counters.compiles;
    if (disk.write(compiled->kernel))
      ++counters.diskWrites;
    logAt(LogLevel::Info, "{}: compiled and cached in {:.3f} s ({})",
          compiled->kernel.kernelName, clock.seconds(),
          disk.enabled() ? disk.entryPath(key) : "memory only");
    slot.compiled = std::move(compiled);
    return ATTNGEN_OK;
  }

  DiskCache::Lookup readDisk(const std::string &key, CompiledKernel &out,
                             std::string &why) {
    DiskCache::Lookup lookup = disk.read(key, out, why);
    if (lookup == DiskCache::Lookup::Hit) {
      ++counters.diskHits;
      logAt(LogLevel::Info, "{}: loaded from the disk cache ({})",
            out.kernelName, disk.entryPath(key));
    }
    return lookup;
  }

  /// The slot of `cspec` on `arch`, its kernel compiled (or read back) and
  /// its mutex held by `lock`. A split-KV kernel's combine kernel is filled
  /// with it (its own slot, locked after this one: combine slots have no
  /// combine of their own, so locks are always taken in that order).
  attngen_status filledSlot(const attngen_spec *cspec, TargetKind arch,
                            Slot *&slot, std::unique_lock<std::mutex> &lock,
                            Slot **combineSlot = nullptr,
                            int64_t deviceSmem = 0) {
    ++counters.requests;
    AttentionSpec spec;
    if (attngen_status s = readSpec(cspec, arch, spec))
      return s;
    // The GPU allows less shared memory than the target (an sm_80 kernel on
    // an sm_86/sm_89 GPU): fit the tiles to it unless the caller said.
    if (deviceSmem > 0 && deviceSmem < maxSharedMemoryBytes(arch) &&
        spec.maxSmem == 0)
      spec.maxSmem = deviceSmem;
    std::string key = cacheKey(spec);
    slot = &slotFor(key);
    lock = std::unique_lock<std::mutex>(slot->mutex);
    if (attngen_status s = fill(*slot, spec, key))
      return s;
    if (!spec.splitKv || spec.combine)
      return ATTNGEN_OK;
    AttentionSpec combine = combineSpecOf(spec);
    std::string combineKey = cacheKey(combine);
    Slot &other = slotFor(combineKey);
    std::lock_guard<std::mutex> combineLock(other.mutex);
    if (attngen_status s = fill(other, combine, combineKey))
      return s;
    slot->compiled->combine = other.compiled.get();
    if (combineSlot)
      *combineSlot = &other;
    return ATTNGEN_OK;
  }

  /// The kernel of `slot` loaded in `context` (the slot's mutex held).
  attngen_status loaded(Slot &slot, void *context, attngen_kernel *&out) {
    std::unique_ptr<attngen_kernel> &kernel = slot.kernels[context];
    if (!kernel) {
      auto loaded = std::make_unique<attngen_kernel>();
      loaded->compiled = slot.compiled.get();
      Stopwatch clock;
      const CompiledKernel &k = slot.compiled->kernel;
      if (attnrt_status s = attnrt_module_load(k.ptx.c_str(), k.metadata.c_str(),
                                               &loaded->module)) {
        slot.kernels.erase(context);
        return failFromRuntime(s);
      }
      ++counters.moduleLoads;
      attnrt_kernel_info info;
      loaded->kvCache = attnrt_module_info(loaded->module, &info) == ATTNRT_OK &&
                        info.kv_cache;
      // The driver compiles PTX to machine code on a first load (then keeps
      // it in its own cache): say so when that is slow.
      double seconds = clock.seconds();
      if (reportSlow(seconds, kSlowLoadSeconds))
        logLine(fmt::format("{}: loaded on the GPU in {:.3f} s (the driver's "
                            "PTX compile included)",
                            k.kernelName, seconds));
      kernel = std::move(loaded);
    }
    out = kernel.get();
    return ATTNGEN_OK;
  }

  attngen_status compile(const attngen_spec *cspec, TargetKind arch,
                         const attngen_compiled **out) {
    Slot *slot = nullptr;
    std::unique_lock<std::mutex> lock;
    if (attngen_status s = filledSlot(cspec, arch, slot, lock))
      return s;
    *out = slot->compiled.get();
    return ATTNGEN_OK;
  }

  attngen_status getKernel(const attngen_spec *cspec,
                           const attngen_kernel **out) {
    void *context = nullptr;
    TargetKind arch;
    if (attngen_status s = currentDevice(&context, arch))
      return s;
    int deviceSmem = 0;
    if (attnrt_status s = attnrt_current_device_max_smem(&deviceSmem))
      return failFromRuntime(s);
    Slot *slot = nullptr, *combineSlot = nullptr;
    std::unique_lock<std::mutex> lock;
    if (attngen_status s =
            filledSlot(cspec, arch, slot, lock, &combineSlot, deviceSmem))
      return s;
    attngen_kernel *kernel = nullptr;
    if (attngen_status s = loaded(*slot, context, kernel))
      return s;
    if (combineSlot && !kernel->combine) {
      std::lock_guard<std::mutex> combineLock(combineSlot->mutex);
      attngen_kernel *combine = nullptr;
      if (attngen_status s = loaded(*combineSlot, context, combine))
        return s;
      kernel->combine = combine;
    }
    *out = kernel;
    return ATTNGEN_OK;
  }

};

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

extern "C" {

const char *attngen_version(void) { return ATTNGEN_VERSION; }
const char *attngen_compiler_id(void) { return compilerId().c_str(); }
size_t attngen_sizeof_spec(void) { return sizeof(attngen_spec); }
size_t attngen_sizeof_jit_stats(void) { return sizeof(attngen_jit_stats); }

void attngen_spec_init_sized(attngen_spec *spec, size_t size) {
  if (!spec || size < offsetof(attngen_spec, causal_align))
    return;
  attngen_spec defaults{};
  // The table's defaults, as the C struct holds them.
#define SPEC_FIELD(G, InC, Member, name, json, Kind, Default, ...)             \
  ATTNGEN_DEFAULT_##InC(name, Default)
#define ATTNGEN_DEFAULT_C(name, Default) defaults.name = Default;
#define ATTNGEN_DEFAULT_NOC(name, Default)
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTNGEN_DEFAULT_C
#undef ATTNGEN_DEFAULT_NOC
  size = std::min(size, sizeof(attngen_spec));
  defaults.struct_size = size;
  std::memcpy(spec, &defaults, size);
}

#undef attngen_spec_init
void attngen_spec_init(attngen_spec *spec) {
  attngen_spec_init_sized(spec, offsetof(attngen_spec, causal_align));
}

void attngen_jit_options_init(attngen_jit_options *options) {
  if (!options)
    return;
  *options = attngen_jit_options{};
  options->struct_size = sizeof(attngen_jit_options);
  options->disk_cache = diskCacheDisabledByEnv() ? 0 : 1;
}

attngen_status attngen_spec_check(const attngen_spec *spec, const char *arch) {
  return guardApi("attngen_spec_check", [&] {
    TargetKind target;
    if (attngen_status s = parseArch(arch, target))
      return s;
    AttentionSpec parsed;
    return readSpec(spec, target, parsed);
  });
}

attngen_status attngen_device_arch(char *arch, size_t capacity) {
  return guardApi("attngen_device_arch", [&] {
    if (!arch || capacity < 8)
      return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                  "attngen_device_arch needs a buffer of at least 8 bytes");
    TargetKind target;
    if (attngen_status s = currentDevice(nullptr, target))
      return s;
    std::snprintf(arch, capacity, "%s", archName(target));
    return ATTNGEN_OK;
  });
}

attngen_status attngen_jit_create(const attngen_jit_options *options,
                                  attngen_jit **out) {
  return guardApi("attngen_jit_create", [&] {
    if (!out)
      return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                  "attngen_jit_create got out = NULL: pass the address of an "
                  "attngen_jit pointer");
    *out = nullptr;
    attngen_jit_options defaults;
    attngen_jit_options_init(&defaults);
    if (options && options->struct_size < offsetof(attngen_jit_options, disk_cache) + sizeof(int))
      return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                  "the options' struct_size is {}: initialise them with "
                  "attngen_jit_options_init",
                  options->struct_size);
    const attngen_jit_options &o = options ? *options : defaults;
    std::string dir;
    if (o.disk_cache) {
      dir = o.cache_dir && *o.cache_dir ? o.cache_dir : defaultCacheDir();
      if (dir.empty())
        logLine("no cache folder (HOME, XDG_CACHE_HOME and ATTNGEN_CACHE_DIR "
                "are unset): kernels are cached in memory only");
      // A file where the folder should be: say so once, and report no
      // folder (attngen_jit_cache_dir returns "").
      if (!dir.empty() && llvm::sys::fs::exists(dir) &&
          !llvm::sys::fs::is_directory(dir)) {
        logLine(fmt::format("the cache folder '{}' is a file, not a folder: "
                            "kernels are cached in memory only (point "
                            "ATTNGEN_CACHE_DIR at a folder)",
                            dir));
        dir.clear();
      }
    }
    *out = new attngen_jit(dir);
    logAt(LogLevel::Info, "JIT created; compiler {}; disk cache {}",
          compilerId(), dir.empty() ? "off" : dir);
    return ATTNGEN_OK;
  });
}

void attngen_jit_destroy(attngen_jit *jit) { delete jit; }

attngen_status attngen_jit_compile(attngen_jit *jit, const attngen_spec *spec,
                                   const char *arch,
                                   const attngen_compiled **out) {
  return guardApi("attngen_jit_compile", [&] {
    if (!jit || !out)
      return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                  "attngen_jit_compile needs a JIT (attngen_jit_create) and "
                  "a non-NULL out");
    *out = nullptr;
    TargetKind target;
    // An empty name is refused by parseArch: only NULL and "auto" mean the
    // current device.
    if (!arch || std::strcmp(arch, "auto") == 0) {
      if (attngen_status s = currentDevice(nullptr, target))
        return s;
    } else if (attngen_status s = parseArch(arch, target)) {
      return s;
    }
    return jit->compile(spec, target, out);
  });
}

attngen_status attngen_jit_get_kernel(attngen_jit *jit, const attngen_spec *spec,
                                      const attngen_kernel **out) {
  return guardApi("attngen_jit_get_kernel", [&] {
    if (!jit || !out)
      return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                  "attngen_jit_get_kernel needs a JIT (attngen_jit_create) "
                  "and a non-NULL out");
    *out = nullptr;
    return jit->getKernel(spec, out);
  });
}

attngen_status attngen_jit_clear_memory_cache(attngen_jit *jit) {
  return guardApi("attngen_jit_clear_memory_cache", [&] {
    if (!jit)
      return fail(ATTNGEN_ERROR_INVALID_ARGUMENT, "the JIT is NULL");
    std::lock_guard<std::mutex> guard(jit->slotsMutex);
    jit->slots.clear();
    return ATTNGEN_OK;
  });
}

const char *attngen_jit_cache_dir(const attngen_jit *jit) {
  return jit ? jit->disk.dir().c_str() : "";
}

attngen_status attngen_jit_get_stats(const attngen_jit *jit,
                                     attngen_jit_stats *out) {
  if (!jit || !out)
    return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                "attngen_jit_get_stats needs a JIT and a non-NULL out");
  const Counters &c = jit->counters;
  *out = attngen_jit_stats{c.requests,   c.memoryHits,     c.diskHits,
                           c.compiles,   c.diskWrites,     c.corruptEntries,
                           c.moduleLoads};
  return ATTNGEN_OK;
}

const char *attngen_compiled_ptx(const attngen_compiled *c) {
  return c ? c->kernel.ptx.c_str() : "";
}
const char *attngen_compiled_metadata(const attngen_compiled *c) {
  return c ? c->kernel.metadata.c_str() : "";
}
const char *attngen_compiled_kernel_name(const attngen_compiled *c) {
  return c ? c->kernel.kernelName.c_str() : "";
}
const char *attngen_compiled_arch(const attngen_compiled *c) {
  return c ? c->kernel.arch.c_str() : "";
}
const char *attngen_compiled_cache_key(const attngen_compiled *c) {
  return c ? c->kernel.key.c_str() : "";
}
const attngen_compiled *attngen_compiled_combine(const attngen_compiled *c) {
  return c ? c->combine : nullptr;
}

const attngen_compiled *attngen_kernel_compiled(const attngen_kernel *k) {
  return k ? k->compiled : nullptr;
}

attngen_status attngen_kernel_info(const attngen_kernel *k,
                                   attnrt_kernel_info *out) {
  if (!k)
    return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                "the kernel is NULL: get one from attngen_jit_get_kernel");
  if (attnrt_status s = attnrt_module_info(k->module, out))
    return failFromRuntime(s);
  return ATTNGEN_OK;
}

attngen_status attngen_kernel_forward(const attngen_kernel *k,
                                      const attnrt_forward_args *args,
                                      void *stream) {
  if (!k)
    return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                "the kernel is NULL: get one from attngen_jit_get_kernel");
  // A KV-cache kernel's call may split and then needs its combine kernel.
  attnrt_status s = k->kvCache
                        ? attnrt_forward_kvcache(
                              k->module, k->combine ? k->combine->module : nullptr,
                              args, stream)
                        : attnrt_forward(k->module, args, stream);
  if (s)
    return failFromRuntime(s);
  return ATTNGEN_OK;
}

attngen_status attngen_kernel_backward(const attngen_kernel *dq,
                                       const attngen_kernel *dkdv,
                                       const attnrt_forward_args *args,
                                       void *stream) {
  if (!dq || !dkdv)
    return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                "a backward kernel is NULL: get the dq and dkdv kernels from "
                "attngen_jit_get_kernel (spec.backward = ATTNRT_BACKWARD_DQ, "
                "ATTNRT_BACKWARD_DKDV)");
  if (attnrt_status s = attnrt_backward(dq->module, dkdv->module, args, stream))
    return failFromRuntime(s);
  return ATTNGEN_OK;
}

attngen_status attngen_kernel_backward_fused(const attngen_kernel *pre,
                                             const attngen_kernel *fused,
                                             const attngen_kernel *post,
                                             const attnrt_forward_args *args,
                                             void *stream) {
  if (!pre || !fused || !post)
    return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                "a backward kernel is NULL: get the pre, fused and post kernels "
                "from attngen_jit_get_kernel (spec.backward = "
                "ATTNRT_BACKWARD_PRE, ATTNRT_BACKWARD_FUSED, "
                "ATTNRT_BACKWARD_POST)");
  if (attnrt_status s = attnrt_backward_fused(pre->module, fused->module,
                                              post->module, args, stream))
    return failFromRuntime(s);
  return ATTNGEN_OK;
}

attngen_status attngen_kernel_plan(const attngen_kernel *k,
                                   const attnrt_forward_args *args,
                                   int64_t *num_splits,
                                   size_t *workspace_bytes) {
  if (!k)
    return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                "the kernel is NULL: get one from attngen_jit_get_kernel");
  attnrt_kernel_info info;
  if (attnrt_status s = attnrt_module_info(k->module, &info))
    return failFromRuntime(s);
  if (attnrt_status s = attnrt_kvcache_plan(&info, args, num_splits,
                                            workspace_bytes))
    return failFromRuntime(s);
  return ATTNGEN_OK;
}

attngen_status attngen_kernel_check_kvcache_values(const attngen_kernel *k,
                                                   const attnrt_forward_args *args,
                                                   void *stream) {
  if (!k)
    return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                "the kernel is NULL: get one from attngen_jit_get_kernel");
  if (attnrt_status s = attnrt_check_kvcache_values(k->module, args, stream))
    return failFromRuntime(s);
  return ATTNGEN_OK;
}

} // extern "C"

attngen_status attngen_quantize_fp8(attngen_jit *jit, const attnrt_quantize_args *args,
                                    int hadamard, uint64_t hadamard_seed, void *stream) {
  return guardApi("attngen_quantize_fp8", [&] {
    if (!jit || !args)
      return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                  "attngen_quantize_fp8 needs a JIT (attngen_jit_create) and "
                  "non-NULL args");
    void *context = nullptr;
    TargetKind arch;
    if (attngen_status s = currentDevice(&context, arch))
      return s;
    mlir::attn::QuantizeKernelSpec spec;
    spec.target = arch;
    spec.headDim = args->head_dim;
    spec.source = args->src_dtype == ATTNRT_DTYPE_F16 ? mlir::attn::DType::f16
                                                      : mlir::attn::DType::bf16;
    spec.hadamard = hadamard != 0;
    spec.seed = hadamard_seed;
    if (args->src_dtype != ATTNRT_DTYPE_F16 && args->src_dtype != ATTNRT_DTYPE_BF16)
      return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                  "the quantize kernel reads bf16 or f16 (src_dtype), not dtype {}",
                  args->src_dtype);
    if (llvm::Error error = mlir::attn::checkQuantizeSpec(spec))
      return fail(arch == TargetKind::sm_90a ? ATTNGEN_ERROR_INVALID_ARGUMENT
                                             : ATTNGEN_ERROR_UNSUPPORTED_DEVICE,
                  "{}", llvm::toString(std::move(error)));
    mlir::attn::QuantizeLaunch launch = mlir::attn::quantizeLaunch(spec);
    if (attnrt_status s = attnrt_check_quantize_args(
            static_cast<int>(spec.headDim), args->src_dtype, args))
      return failFromRuntime(s);
    std::lock_guard<std::mutex> guard(jit->quantizeMutex);
    attnrt_quantize_kernel *&kernel = jit->quantizeKernels[{context, launch.kernel}];
    if (!kernel) {
      ++jit->counters.requests;
      mlir::MLIRContext mlirContext(mlir::MLIRContext::Threading::DISABLED);
      llvm::Expected<std::string> ptx = mlir::attn::emitQuantizePtx(mlirContext, spec);
      if (!ptx)
        return fail(ATTNGEN_ERROR_COMPILE, "{}", llvm::toString(ptx.takeError()));
      ++jit->counters.compiles;
      if (attnrt_status s = attnrt_quantize_load(
              ptx->c_str(), launch.kernel.c_str(), static_cast<int>(spec.headDim),
              args->src_dtype, static_cast<int>(launch.numThreads),
              static_cast<int>(launch.smemBytes), &kernel))
        return failFromRuntime(s);
      ++jit->counters.moduleLoads;
    }
    if (attnrt_status s = attnrt_quantize(kernel, args, stream))
      return failFromRuntime(s);
    return ATTNGEN_OK;
  });
}
