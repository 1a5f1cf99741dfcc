/*===- attngen.h - attngen JIT C API -----------------------------*- C -*-===*
 *
 * Ask for an attention kernel, get a compiled, cached kernel for the GPU at
 * hand, and launch it. This is the stable C interface of libattngen (the
 * compiler plus the runtime); attngen.hpp wraps it for C++ and the Python
 * package `attngen` reaches it through ctypes.
 *
 *   attngen_jit *jit;
 *   attngen_jit_create(NULL, &jit);              // default options
 *   attngen_spec spec;
 *   attngen_spec_init(&spec);                    // bf16, d128, not causal
 *   spec.causal = 1;
 *   const attngen_kernel *kernel;
 *   if (attngen_jit_get_kernel(jit, &spec, &kernel) != ATTNGEN_OK)
 *     fprintf(stderr, "%s\n", attngen_last_error());
 *   attnrt_forward_args args = {...};            // see attnrt.h
 *   attngen_kernel_forward(kernel, &args, stream);
 *   attngen_jit_destroy(jit);
 *
 * - Every function returns an attngen_status; on failure attngen_last_error()
 *   holds one sentence saying what is wrong and how to fix it.
 * - Kernels are cached in memory (per JIT, per CUDA context) and on disk
 *   (key: spec, target, compiler build). Any number of threads and processes
 *   may ask for the same kernel at once: each is compiled once, disk entries
 *   are written atomically, and an entry that is corrupt or from another
 *   compiler build is never loaded (it is rebuilt).
 * - Environment: ATTNGEN_CACHE_DIR (cache folder; default
 *   $XDG_CACHE_HOME/attngen or ~/.cache/attngen), ATTNGEN_DISABLE_DISK_CACHE=1,
 *   ATTNGEN_LOG=1 (cache events and timings on stderr) or 2 (also the
 *   compiler's stages). A compile that takes longer than a second reports
 *   its stages on stderr even without ATTNGEN_LOG.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTNGEN_ATTNGEN_H
#define ATTNGEN_ATTNGEN_H

#include "attnrt/attnrt.h"
#include "attnrt/attnrt_quantize.h"

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define ATTNGEN_API __attribute__((visibility("default")))
#else
#define ATTNGEN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Result of every call. Values 0-9 are those of attnrt_status (runtime
 *  failures are passed through unchanged); new values are only appended. */
typedef enum attngen_status {
  ATTNGEN_OK = 0,
  ATTNGEN_ERROR_INVALID_ARGUMENT = 1, /**< NULL pointer, shape, stride, ... */
  ATTNGEN_ERROR_INVALID_METADATA = 2,
  ATTNGEN_ERROR_NO_DRIVER = 3,        /**< no usable libcuda.so.1 */
  ATTNGEN_ERROR_NO_DEVICE = 4,        /**< the driver sees no GPU */
  ATTNGEN_ERROR_UNSUPPORTED_DEVICE = 5, /**< GPU older than sm_80, ... */
  ATTNGEN_ERROR_CUDA = 6,
  ATTNGEN_ERROR_INVALID_PTX = 7,
  ATTNGEN_ERROR_IO = 8,
  ATTNGEN_ERROR_INTERNAL = 9,
  /** The spec asks for something the compiler does not support (head
   *  dim, tile sizes, arch); the message lists what is supported. */
  ATTNGEN_ERROR_INVALID_SPEC = 10,
  /** The compiler failed on a valid spec: a compiler bug, please report. */
  ATTNGEN_ERROR_COMPILE = 11
} attngen_status;

/** Where the diagonal of a causal mask or a window sits when Nq != Nk
 *  (attngen_spec::causal_align). */
typedef enum attngen_causal_align {
  /** Query i sees keys j <= i, as PyTorch's is_causal. */
  ATTNGEN_CAUSAL_TOP_LEFT = ATTNRT_CAUSAL_ALIGN_TOP_LEFT,
  /** Query i sees keys j <= i + Nk - Nq, as FlashAttention >= 2.1 (the
   *  default, which attngen_spec_init sets); rows with i + Nk - Nq < 0 see
   *  no key (output 0, LSE -inf). */
  ATTNGEN_CAUSAL_BOTTOM_RIGHT = ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT
} attngen_causal_align;

/**
 * One attention kernel variant. Always start from attngen_spec_init(): it
 * sets struct_size and the defaults, which lets later versions of the
 * library append fields without breaking callers built against this header.
 *
 * The fields are the C rows of attnrt/spec_fields.def, in its order
 * (append only): each row gives the member's name, its C type (its Kind:
 * int for flags, enums and sizes, double for reals), its default, its CLI
 * flag and its meaning, which `attngen --help` prints. A tile override
 * (block_m, block_n, num_warps) at 0 is the tuned choice.
 *
 * A struct_size that ends before a field reads it as its default.
 */
#define ATTNGEN_SPEC_MEMBER_C(name, Kind) ATTNRT_SPEC_CTYPE_##Kind name;
#define ATTNGEN_SPEC_MEMBER_NOC(name, Kind)
#define SPEC_FIELD(Group, InC, Member, name, json, Kind, ...)                  \
  ATTNGEN_SPEC_MEMBER_##InC(name, Kind)
typedef struct attngen_spec {
  size_t struct_size; /**< sizeof(attngen_spec), set by attngen_spec_init */
#include "attnrt/spec_fields.def"
} attngen_spec;
#undef SPEC_FIELD
#undef ATTNGEN_SPEC_MEMBER_C
#undef ATTNGEN_SPEC_MEMBER_NOC

/** Options of a JIT. Start from attngen_jit_options_init(). */
typedef struct attngen_jit_options {
#define ATTNGEN_FIELD(type, name) type name;
#include "attngen/jit_options.def"
#undef ATTNGEN_FIELD
} attngen_jit_options;

/** Counters of one JIT since its creation. */
typedef struct attngen_jit_stats {
#define ATTNGEN_FIELD(type, name) type name;
#include "attngen/jit_stats.def"
#undef ATTNGEN_FIELD
} attngen_jit_stats;

typedef struct attngen_jit attngen_jit;
/** PTX plus launch metadata of one kernel; owned by its JIT. */
typedef struct attngen_compiled attngen_compiled;
/** A compiled kernel loaded in one CUDA context; owned by its JIT. */
typedef struct attngen_kernel attngen_kernel;

/* ---- Errors and versions ------------------------------------------------ */

/** This thread's last error message ("" if none). */
ATTNGEN_API const char *attngen_last_error(void);
/** "ATTNGEN_ERROR_INVALID_SPEC", ...; "ATTNGEN_UNKNOWN" otherwise. */
ATTNGEN_API const char *attngen_status_name(attngen_status status);
/** "0.1.0". */
ATTNGEN_API const char *attngen_version(void);
/** What identifies this compiler build in cache keys: version, LLVM
 *  version and the library's GNU build id. */
ATTNGEN_API const char *attngen_compiler_id(void);
/** sizeof of the structs as compiled into the library (for bindings). */
ATTNGEN_API size_t attngen_sizeof_spec(void);
ATTNGEN_API size_t attngen_sizeof_jit_stats(void);
/** The members of one of the C API's structs, in order, as this library
 *  lays them out: "attngen_spec", "attngen_jit_options",
 *  "attngen_jit_stats", and the runtime's "attnrt_forward_args" and
 *  "attnrt_kernel_info" (attnrt_struct_fields). Bindings build their
 *  structs from this instead of keeping a copy. NULL for another name. */
ATTNGEN_API const attnrt_field *attngen_struct_fields(const char *name,
                                                      size_t *count,
                                                      size_t *size);

/* ---- Specs -------------------------------------------------------------- */

/** Sets the defaults and struct_size in the first `size` bytes of `spec`
 *  (a caller's sizeof(attngen_spec)): the library never writes past the
 *  struct its caller was built with. */
ATTNGEN_API void attngen_spec_init_sized(attngen_spec *spec, size_t size);
/** The 0.1.0 entry point, kept for binaries built against that header: it
 *  writes only the 0.1.0 fields. Code built against this header calls
 *  attngen_spec_init_sized through the macro below. */
ATTNGEN_API void attngen_spec_init(attngen_spec *spec);
#define attngen_spec_init(spec) attngen_spec_init_sized((spec), sizeof(*(spec)))
ATTNGEN_API void attngen_jit_options_init(attngen_jit_options *options);

/** Checks a spec for `arch` ("sm_80" or "sm_90a") without compiling. */
ATTNGEN_API attngen_status attngen_spec_check(const attngen_spec *spec,
                                              const char *arch);

/**
 * The architecture attngen compiles for on the current CUDA device (see
 * attnrt_current_device): "sm_90a" for compute capability 9.0, "sm_80" for
 * 8.x and newer GPUs (their driver JITs sm_80 PTX). Writes at most
 * `capacity` bytes including the NUL.
 */
ATTNGEN_API attngen_status attngen_device_arch(char *arch, size_t capacity);

/* ---- JIT ---------------------------------------------------------------- */

/** Creates a JIT; `options` may be NULL (defaults). */
ATTNGEN_API attngen_status attngen_jit_create(const attngen_jit_options *options,
                                              attngen_jit **out);
/** Unloads its kernels and frees it (NULL allowed). Kernels and compiled
 *  results it returned become invalid. */
ATTNGEN_API void attngen_jit_destroy(attngen_jit *jit);

/**
 * Compiles (or finds in the caches) the kernel for `spec` on `arch`
 * ("sm_80", "sm_90a"; NULL or "auto": the current device's). Needs no GPU
 * unless arch is auto. *out stays valid until the JIT is destroyed.
 */
ATTNGEN_API attngen_status attngen_jit_compile(attngen_jit *jit,
                                               const attngen_spec *spec,
                                               const char *arch,
                                               const attngen_compiled **out);

/**
 * The kernel for `spec` on the current CUDA context's device, compiled or
 * cached, loaded once per context. *out stays valid until the JIT is
 * destroyed.
 */
ATTNGEN_API attngen_status attngen_jit_get_kernel(attngen_jit *jit,
                                                  const attngen_spec *spec,
                                                  const attngen_kernel **out);

/** Drops the JIT's memory cache (and unloads its modules); the disk cache
 *  stays. Kernels and compiled results it returned become invalid. */
ATTNGEN_API attngen_status attngen_jit_clear_memory_cache(attngen_jit *jit);

/** The folder of the disk cache ("" when disabled). */
ATTNGEN_API const char *attngen_jit_cache_dir(const attngen_jit *jit);

ATTNGEN_API attngen_status attngen_jit_get_stats(const attngen_jit *jit,
                                                 attngen_jit_stats *out);

/* ---- Compiled kernels ----------------------------------------------------- */

ATTNGEN_API const char *attngen_compiled_ptx(const attngen_compiled *c);
/** The launch metadata JSON (docs/ABI.md). */
ATTNGEN_API const char *attngen_compiled_metadata(const attngen_compiled *c);
ATTNGEN_API const char *attngen_compiled_kernel_name(const attngen_compiled *c);
ATTNGEN_API const char *attngen_compiled_arch(const attngen_compiled *c);
/** The full cache key (spec, arch, compiler id). */
ATTNGEN_API const char *attngen_compiled_cache_key(const attngen_compiled *c);
/** A split-KV kernel's combine kernel (compiled with it); NULL for any
 *  other kernel. */
ATTNGEN_API const attngen_compiled *attngen_compiled_combine(const attngen_compiled *c);

/* ---- Kernels ------------------------------------------------------------ */

ATTNGEN_API const attngen_compiled *attngen_kernel_compiled(const attngen_kernel *k);
/** Metadata plus the device facts (registers, spills) of the loaded kernel. */
ATTNGEN_API attngen_status attngen_kernel_info(const attngen_kernel *k,
                                               attnrt_kernel_info *out);
/** Launches on `stream` (a CUstream / cudaStream_t; NULL: default stream);
 *  the arguments are checked as attnrt_forward does (attnrt.h). A split-KV
 *  kernel launches its combine kernel after it when the call splits
 *  (attnrt_forward_kvcache): args->workspace must then hold
 *  attngen_kernel_plan's bytes. */
ATTNGEN_API attngen_status attngen_kernel_forward(const attngen_kernel *k,
                                                  const attnrt_forward_args *args,
                                                  void *stream);

/** The backward pass on `stream`: `dq` (a spec with backward =
 *  ATTNRT_BACKWARD_DQ) then `dkdv` (ATTNRT_BACKWARD_DKDV, the same spec
 *  otherwise), as attnrt_backward (attnrt.h): args holds the forward's
 *  tensors, dout, the delta scratch tensor and the gradients. */
ATTNGEN_API attngen_status attngen_kernel_backward(const attngen_kernel *dq,
                                                   const attngen_kernel *dkdv,
                                                   const attnrt_forward_args *args,
                                                   void *stream);

/** The one-kernel backward on `stream` (sm_90a, head dims 64 and 128;
 *  faster, dQ not deterministic): `pre`, `fused` and `post` (spec.backward
 *  = ATTNRT_BACKWARD_PRE, _FUSED, _POST, the same spec otherwise), as
 *  attnrt_backward_fused (attnrt.h): args as attngen_kernel_backward's plus
 *  dq_accum, a contiguous f32 tensor shaped as dq. */
ATTNGEN_API attngen_status attngen_kernel_backward_fused(const attngen_kernel *pre,
                                                         const attngen_kernel *fused,
                                                         const attngen_kernel *post,
                                                         const attnrt_forward_args *args,
                                                         void *stream);

/** The splits and workspace bytes a call of a KV-cache kernel needs
 *  (attnrt_kvcache_plan on the loaded kernel); either output may be NULL. */
ATTNGEN_API attngen_status attngen_kernel_plan(const attngen_kernel *k,
                                               const attnrt_forward_args *args,
                                               int64_t *num_splits,
                                               size_t *workspace_bytes);

/** attnrt_check_kvcache_values on the loaded kernel: copies cache_seqlens
 *  and the used block-table entries to the host on `stream`, waits, and
 *  fails naming the first bad value (for debugging; not under CUDA graph
 *  capture). */
ATTNGEN_API attngen_status attngen_kernel_check_kvcache_values(
    const attngen_kernel *k, const attnrt_forward_args *args, void *stream);

/** The FP8 quantize kernel on `stream`: args->src (bf16/f16 [B, N, H, D])
 *  to e4m3 in args->dst, with one scale per 128 rows written to
 *  args->descale_out or the per-(batch, head) args->descale_in
 *  (attnrt_quantize.h); `hadamard` != 0 rotates each row by the Hadamard
 *  transform with the random signs of `hadamard_seed` first (use the same
 *  for q and k). The kernel for (GPU, head dim, dtype, rotation) is
 *  compiled on first use and kept by the JIT. sm_90 GPUs only. */
ATTNGEN_API attngen_status attngen_quantize_fp8(attngen_jit *jit,
                                                const attnrt_quantize_args *args,
                                                int hadamard, uint64_t hadamard_seed,
                                                void *stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNGEN_ATTNGEN_H */
