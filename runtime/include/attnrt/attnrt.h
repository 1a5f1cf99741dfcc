/*===- attnrt.h - attngen runtime C API --------------------------*- C -*-===*
 *
 * The attngen runtime loads a kernel produced by attngen (a PTX file plus the
 * metadata JSON beside it, see docs/ABI.md), checks every launch request
 * against the kernel's assumptions and launches it through the CUDA driver
 * API.
 *
 * - Pure C, no dependency besides the C library: usable from C, C++ and
 *   Python ctypes.
 * - The CUDA driver (libcuda.so.1) is loaded at run time with dlopen; the
 *   library itself links no CUDA library. Set ATTNRT_CUDA_DRIVER to the path
 *   of another libcuda.so.1 to override the default search.
 * - Every function returns an attnrt_status; on failure,
 *   attnrt_last_error() holds one full sentence saying what is wrong and how
 *   to fix it.
 * - Thread safety: all functions may be called from any thread. A module may
 *   be used by several threads at once for attnrt_forward, but must not be
 *   unloaded while another thread uses it.
 *
 * Typical use:
 *
 *   attnrt_module *m;
 *   if (attnrt_module_load_files("k.ptx", "k.json", &m) != ATTNRT_OK)
 *     fprintf(stderr, "%s\n", attnrt_last_error());
 *   attnrt_forward_args a = {...};
 *   if (attnrt_forward(m, &a, stream) != ATTNRT_OK) ...
 *   attnrt_module_unload(m);
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTNRT_ATTNRT_H
#define ATTNRT_ATTNRT_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define ATTNRT_API __attribute__((visibility("default")))
#else
#define ATTNRT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Version of the kernel ABI (docs/ABI.md) this runtime implements. */
#define ATTNRT_ABI_VERSION 3

/** The "format" value of the metadata JSON this runtime reads. */
#define ATTNRT_METADATA_FORMAT "attngen-kernel-v2"

/** Result of every runtime call. New values are only ever appended. */
typedef enum attnrt_status {
  ATTNRT_OK = 0,
  /** A caller-provided value is wrong (NULL pointer, shape, stride, ...). */
  ATTNRT_ERROR_INVALID_ARGUMENT = 1,
  /** The metadata JSON is malformed, misses a key or breaks the ABI. */
  ATTNRT_ERROR_INVALID_METADATA = 2,
  /** libcuda.so.1 could not be loaded, is the toolkit stub or is too old. */
  ATTNRT_ERROR_NO_DRIVER = 3,
  /** The driver sees no CUDA device. */
  ATTNRT_ERROR_NO_DEVICE = 4,
  /** The device cannot run this kernel (compute capability, shared
   *  memory, registers). */
  ATTNRT_ERROR_UNSUPPORTED_DEVICE = 5,
  /** A CUDA driver call failed; the message names the call and CUresult. */
  ATTNRT_ERROR_CUDA = 6,
  /** The PTX text disagrees with the metadata (target, entry name,
   *  parameter list). */
  ATTNRT_ERROR_INVALID_PTX = 7,
  /** A file given to attnrt_module_load_files could not be read. */
  ATTNRT_ERROR_IO = 8,
  /** An unexpected internal failure (out of host memory, ...). */
  ATTNRT_ERROR_INTERNAL = 9
} attnrt_status;

/** Element type of Q, K, V and O (LSE is always float32). */
typedef enum attnrt_dtype {
  ATTNRT_DTYPE_F16 = 1,  /**< IEEE half, metadata "dtype": "f16" */
  ATTNRT_DTYPE_BF16 = 2, /**< bfloat16, metadata "dtype": "bf16" */
  ATTNRT_DTYPE_E4M3 = 3  /**< FP8 e4m3 (float8_e4m3fn) Q, K and V with f32
                              descales; O is bfloat16 (metadata "e4m3") */
} attnrt_dtype;

/** The C type of each kind of spec field (attnrt/spec_fields.def lists the
 *  fields: attngen_spec and attnrt_kernel_info are expanded from it). */
#define ATTNRT_SPEC_CTYPE_Bool int
#define ATTNRT_SPEC_CTYPE_NoBool int
#define ATTNRT_SPEC_CTYPE_Combine int
#define ATTNRT_SPEC_CTYPE_Int int
#define ATTNRT_SPEC_CTYPE_Window int
#define ATTNRT_SPEC_CTYPE_Eighths int
#define ATTNRT_SPEC_CTYPE_Tri int
#define ATTNRT_SPEC_CTYPE_Element int
#define ATTNRT_SPEC_CTYPE_Align int
#define ATTNRT_SPEC_CTYPE_Backward int
#define ATTNRT_SPEC_CTYPE_Arch int
#define ATTNRT_SPEC_CTYPE_Real double

/** Which kernel of the backward pass a kernel is (metadata "backward";
 *  attngen_spec::backward). */
typedef enum attnrt_backward_part {
  ATTNRT_BACKWARD_NONE = 0, /**< a forward kernel */
  ATTNRT_BACKWARD_DQ = 1,   /**< the deterministic backward's first kernel:
                                 delta and dQ */
  ATTNRT_BACKWARD_DKDV = 2, /**< its second kernel: dK and dV */
  ATTNRT_BACKWARD_PRE = 3,  /**< the one-kernel backward's first kernel:
                                 delta, and the f32 dQ accumulator zeroed */
  ATTNRT_BACKWARD_FUSED = 4, /**< its main kernel: dK, dV, and dQ added into
                                  the accumulator by TMA reductions (sm_90a) */
  ATTNRT_BACKWARD_POST = 5  /**< its last kernel: dQ from the accumulator */
} attnrt_backward_part;

/** Where the diagonal of a causal mask or a window sits when nq != nk
 *  (metadata "causal_align"; attngen_spec::causal_align). */
typedef enum attnrt_causal_align {
  ATTNRT_CAUSAL_ALIGN_TOP_LEFT = 0,    /**< row i's diagonal is key i */
  ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT = 1 /**< row i's is key i + nk - nq */
} attnrt_causal_align;


/** A problem size of a forward call, as the metadata's "grid" and "size"
 *  parameters name it. */
typedef enum attnrt_size {
  ATTNRT_SIZE_BATCH = 0,       /**< "batch": args.batch */
  ATTNRT_SIZE_NQ = 1,          /**< "nq": args.nq */
  ATTNRT_SIZE_NK = 2,          /**< "nk": args.nk */
  ATTNRT_SIZE_NUM_HEADS = 3,   /**< "num_heads": args.num_heads */
  ATTNRT_SIZE_NUM_KV_HEADS = 4, /**< "num_kv_heads": args.num_kv_heads */
  ATTNRT_SIZE_MAX_SEQLEN_Q = 5, /**< "max_seqlen_q": args.max_seqlen_q
                                     (varlen kernels) */
  /* KV cache and split-KV kernels. */
  ATTNRT_SIZE_NUM_SPLITS = 6,  /**< "num_splits": the splits of the call
                                    (args.num_splits, or the runtime's choice
                                    when it is 0) */
  ATTNRT_SIZE_MAX_BLOCKS = 7,  /**< "max_blocks": args.max_blocks */
  ATTNRT_SIZE_NUM_BLOCKS = 8,  /**< "num_blocks": args.num_blocks */
  ATTNRT_SIZE_MAX_SEQLEN_K = 9 /**< "max_seqlen_k": args.max_seqlen_k
                                    (the varlen backward's dkdv kernel) */
} attnrt_size;

/** What a kernel computes (attnrt_kernel_info::kind; metadata "kind"). */
typedef enum attnrt_kernel_kind {
  ATTNRT_KERNEL_FORWARD = 0, /**< "forward": attention (dense or KV cache) */
  ATTNRT_KERNEL_COMBINE = 1  /**< "combine": merges a split-KV kernel's
                                  partial results into O and LSE */
} attnrt_kernel_kind;

/** Capacity of attnrt_kernel_info::kernel, terminating NUL included. */
#define ATTNRT_MAX_KERNEL_NAME 256

/**
 * What a kernel's metadata says, plus what the driver reports once the
 * module is loaded. Filled by attnrt_metadata_parse (device fields -1) and
 * attnrt_module_info.
 *
 * The launch facts of kernel_info.def, then the kernel's problem: every
 * PROBLEM row of spec_fields.def under its metadata key (the row's json
 * column), as the C struct holds it (int for flags and enums, double for
 * reals), with the row's meaning. Two differ from attngen_spec's: `lse`
 * says whether the kernel was built to write the LSE (args.lse must then
 * be NULL when it is 0), and `kind` is an attnrt_kernel_kind.
 */
#define ATTNRT_INFO_PROBLEM(json, Kind) ATTNRT_SPEC_CTYPE_##Kind json;
#define ATTNRT_INFO_TARGET(json, Kind)
#define ATTNRT_INFO_TILING(json, Kind)
#define ATTNRT_INFO_SCHEDULE(json, Kind)
#define ATTNRT_INFO_BACKEND(json, Kind)
#define SPEC_FIELD(Group, InC, Member, name, json, Kind, ...)                  \
  ATTNRT_INFO_##Group(json, Kind)
typedef struct attnrt_kernel_info {
#define ATTNRT_FIELD(type, name) type name;
#define ATTNRT_ARRAY(type, name, n) type name[n];
#include "attnrt/kernel_info.def"
#undef ATTNRT_FIELD
#undef ATTNRT_ARRAY
#include "attnrt/spec_fields.def"
} attnrt_kernel_info;
#undef SPEC_FIELD
#undef ATTNRT_INFO_PROBLEM
#undef ATTNRT_INFO_TARGET
#undef ATTNRT_INFO_TILING
#undef ATTNRT_INFO_SCHEDULE
#undef ATTNRT_INFO_BACKEND

/**
 * One attention forward call: O = softmax(scale * Q K^T [+ causal mask]) V.
 *
 * Layout (docs/ABI.md): every tensor is addressed by element strides over
 * its logical dims [B, N, H, D], so element (b, n, h, d) of Q is at
 *   q + b*q_strides[0] + n*q_strides[1] + h*q_strides[2] + d*q_strides[3]
 * (in elements of dtype).
 *
 *   tensor | logical shape        | dtype
 *   Q      | [B, nq, H,   D]      | dtype
 *   K      | [B, nk, Hkv, D]      | dtype
 *   V      | [B, nk, Hkv, D]      | dtype
 *   O      | [B, nq, H,   D]      | dtype (written)
 *   LSE    | [B, H, nq]           | float32, contiguous, optional (written)
 *
 * Rules, all checked by attnrt_check_forward_args:
 * - strides[3] == 1 (D contiguous); strides[0..2] are >= 0 multiples of 8
 *   elements (16 bytes) -- a dimension of extent 1 may have any stride;
 * - q, k, v, o and lse 16-byte aligned; lse may be NULL (then the kernel
 *   does not write it) and must be NULL for a kernel built without LSE
 *   (attnrt_kernel_info::lse == 0);
 * - num_heads % num_kv_heads == 0: query head h reads K/V head
 *   h / (num_heads / num_kv_heads);
 * - nq, nk <= INT32_MAX, nk >= 1, num_heads <= 65535 (gridDim.y),
 *   batch <= 65535 (gridDim.z); batch == 0 or nq == 0 launches nothing.
 * - LSE is the natural-log log-sum-exp of the scaled (masked) scores.
 */
typedef struct attnrt_forward_args {
#define ATTNRT_FIELD(type, name) type name;
#define ATTNRT_ARRAY(type, name, n) type name[n];
#include "attnrt/forward_args.def"
#undef ATTNRT_FIELD
#undef ATTNRT_ARRAY
} attnrt_forward_args;

/** Most splits a split-KV call may use. */
#define ATTNRT_MAX_SPLITS 256

/** Opaque loaded kernel: a CUmodule, its CUfunction and its metadata. */
typedef struct attnrt_module attnrt_module;

/* ---- Errors and versions ------------------------------------------------ */

/** Message of this thread's last failure ("" if none). The pointer stays
 *  valid until the next failing runtime call on this thread. Successful
 *  calls leave it unchanged. */
ATTNRT_API const char *attnrt_last_error(void);

/** Stable name of a status ("ATTNRT_ERROR_CUDA"), or "ATTNRT_UNKNOWN". */
ATTNRT_API const char *attnrt_status_name(attnrt_status status);

/** ATTNRT_ABI_VERSION of the library (compare with the header's). */
ATTNRT_API int attnrt_abi_version(void);

/** sizeof(attnrt_forward_args) / sizeof(attnrt_kernel_info) as compiled
 *  into the library. */
ATTNRT_API size_t attnrt_sizeof_forward_args(void);
ATTNRT_API size_t attnrt_sizeof_kernel_info(void);

/** The C type of a struct member (attnrt_field::type). */
typedef enum attnrt_field_type {
  ATTNRT_FIELD_INT = 0,     /**< int */
  ATTNRT_FIELD_INT64 = 1,   /**< int64_t */
  ATTNRT_FIELD_UINT64 = 2,  /**< uint64_t, size_t */
  ATTNRT_FIELD_DOUBLE = 3,  /**< double */
  ATTNRT_FIELD_POINTER = 4, /**< a data pointer */
  ATTNRT_FIELD_STRING = 5,  /**< const char *, a NUL-terminated string */
  ATTNRT_FIELD_CHAR = 6     /**< char (an array of them: a fixed-size string) */
} attnrt_field_type;

/** One member of a struct of the C API, as the library was compiled. */
typedef struct attnrt_field {
#define ATTNRT_FIELD(type, name) type name;
#include "attnrt/field.def"
#undef ATTNRT_FIELD
} attnrt_field;

/**
 * The members of the runtime's struct `name` ("attnrt_forward_args",
 * "attnrt_kernel_info", or "attnrt_field" itself), in order, as this library lays them out: a binding
 * (the Python package, gpu/'s scripts) builds its struct from them instead
 * of keeping a copy. `count` gets the number of members and `size` the
 * struct's sizeof; either may be NULL. NULL for any other name.
 */
ATTNRT_API const attnrt_field *attnrt_struct_fields(const char *name,
                                                    size_t *count,
                                                    size_t *size);

/* ---- Metadata and argument checks (no GPU needed) ----------------------- */

/**
 * Parses and validates a metadata JSON text (docs/ABI.md) into *out.
 * Device fields of *out are set to -1. Returns
 * ATTNRT_ERROR_INVALID_METADATA naming the offending key on failure.
 */
ATTNRT_API attnrt_status attnrt_metadata_parse(const char *metadata_json,
                                               attnrt_kernel_info *out);

/**
 * Checks a forward call against a kernel without touching the GPU: dtype,
 * head_dim, sizes, grid limits, NULL pointers, alignment and strides.
 * Returns ATTNRT_OK if attnrt_forward would launch (or, for batch == 0 or
 * nq == 0, do nothing), ATTNRT_ERROR_INVALID_ARGUMENT otherwise.
 */
ATTNRT_API attnrt_status
attnrt_check_forward_args(const attnrt_kernel_info *info,
                          const attnrt_forward_args *args);

/**
 * Checks the values of a varlen call's cu_seqlens on the host: given host
 * copies of args->cu_seqlens_q and args->cu_seqlens_k (args->batch + 1
 * entries each), each must start at 0, never decrease and end at args->nq
 * (total_q) / args->nk (total_k), and no sequence may be longer than
 * args->max_seqlen_q / args->max_seqlen_k. Needs no GPU. Returns
 * ATTNRT_ERROR_INVALID_ARGUMENT naming the first bad entry and the fix.
 */
ATTNRT_API attnrt_status attnrt_check_cu_seqlens(const attnrt_forward_args *args,
                                                 const int32_t *cu_seqlens_q,
                                                 const int32_t *cu_seqlens_k);

/**
 * The launch configuration attnrt_forward would use (docs/ABI.md "Launch"):
 * the grid follows the kernel's grid rule (grid_size, grid_tile,
 * ctas_per_sm; for the forward kernels (ceil(nq / block_m), H, B)), block =
 * (num_threads, 1, 1), dynamic shared memory = smem_bytes. Runs
 * attnrt_check_forward_args first. For batch == 0 or nq == 0 the grid is
 * all zeros. A persistent kernel's grid needs the device's SM count:
 * pass the info of a loaded module (attnrt_module_info).
 */
ATTNRT_API attnrt_status attnrt_launch_dims(const attnrt_kernel_info *info,
                                            const attnrt_forward_args *args,
                                            unsigned grid[3],
                                            unsigned block[3],
                                            unsigned *smem_bytes);

/* ---- Modules ------------------------------------------------------------ */

/**
 * Loads a kernel. `ptx` and `metadata_json` are NUL-terminated texts.
 * Steps: parse + validate the metadata; check the PTX's .target and the
 * entry's parameter list against it; load the driver; use the calling
 * thread's current CUDA context, or else retain device 0's primary context
 * and make it current; check the compute capability against "arch" (sm_80:
 * >= 8.0, sm_90a: exactly 9.0); JIT the PTX (a ptxas error log is put into
 * the message); set the kernel's dynamic shared memory limit to smem_bytes.
 * On success *out owns the module; free it with attnrt_module_unload.
 */
ATTNRT_API attnrt_status attnrt_module_load(const char *ptx,
                                            const char *metadata_json,
                                            attnrt_module **out);

/** attnrt_module_load on the contents of two files (NAME.ptx, NAME.json). */
ATTNRT_API attnrt_status attnrt_module_load_files(const char *ptx_path,
                                                  const char *metadata_path,
                                                  attnrt_module **out);

/** Unloads the module and releases the primary context if it retained one.
 *  NULL is allowed (no-op). */
ATTNRT_API attnrt_status attnrt_module_unload(attnrt_module *module);

/** Copies the module's metadata and device facts into *out. */
ATTNRT_API attnrt_status attnrt_module_info(const attnrt_module *module,
                                            attnrt_kernel_info *out);

/**
 * The CUDA context a module loaded now on this thread would use, its device
 * ordinal and the device's compute capability (any output may be NULL).
 * If no context is current, device 0's primary context is retained (for the
 * rest of the process) and made current first, as attnrt_module_load would
 * do; a JIT uses this to pick the target architecture and to key its
 * loaded modules by context.
 */
ATTNRT_API attnrt_status attnrt_current_device(void **context, int *device,
                                               int *cc_major, int *cc_minor);

/**
 * The dynamic shared memory one CTA may opt into on the current device
 * (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN; the same context
 * rule as attnrt_current_device): 232448 on an H100/H200, 166912 on an
 * A100, 101376 on sm_86/sm_89 GPUs. A JIT fits its tiles to it.
 */
ATTNRT_API attnrt_status attnrt_current_device_max_smem(int *bytes);

/* ---- Launch ------------------------------------------------------------- */

/**
 * Runs the kernel asynchronously on `stream` (a CUstream; NULL is the
 * legacy default stream of the module's context). Checks the arguments with
 * attnrt_check_forward_args, checks that q, k, v, o (and lse) are device
 * memory of the module's device (see attnrt_set_pointer_checks), builds the
 * parameters of docs/ABI.md (TMA descriptors for sm_90a kernels) and calls
 * cuLaunchKernel. batch == 0 or nq == 0 returns ATTNRT_OK without a launch.
 * Errors raised later by the kernel itself show up at the next
 * synchronization, as for any CUDA launch.
 */
ATTNRT_API attnrt_status attnrt_forward(attnrt_module *module,
                                        const attnrt_forward_args *args,
                                        void *stream);

/* ---- KV cache and split-KV (flash-decoding) -------------------------- */

/**
 * The splits and the workspace a call of a KV-cache kernel needs. With
 * args->num_splits == 0 the runtime chooses the splits from the tile count
 * (ceil(nq / (block_m / head_pack)) x num_heads / head_pack x batch) against
 * the CTA slots of the device's SMs (num_sms x max_ctas_per_sm, the
 * kernel's occupancy once loaded; from its shared memory before) and the
 * key blocks of a sequence (nk): none when the tiles already fill the GPU, else the fewest that fill its waves well (at
 * most ATTNRT_MAX_SPLITS, at most one per key block). Needs a loaded
 * module's info for that (num_sms); a given num_splits is checked and
 * returned. *workspace_bytes is 0 for one split; else the bytes of the
 * partial outputs [S * B, Nq, H, Dv] f32 (Dv: O's head dim) and log-sum-exps [S * B, H, Nq]
 * f32 (16-byte aligned, in that order). Deterministic: the same info and
 * args give the same plan, which attnrt_forward uses. Either output may be
 * NULL.
 */
ATTNRT_API attnrt_status attnrt_kvcache_plan(const attnrt_kernel_info *info,
                                             const attnrt_forward_args *args,
                                             int64_t *num_splits,
                                             size_t *workspace_bytes);

/**
 * The backward pass on `stream`: `dq` (attngen --backward=dq) writes
 * args->delta = rowsum(dO * O) and dQ, then `dkdv` (--backward=dkdv) reads
 * delta and writes dK and dV (docs/ABI.md "Backward"). args holds the
 * forward's q, k, v, o and lse (which may be a merged global LSE), dout,
 * the delta scratch tensor ([B, H, Nq] f32) and the three gradients. Both
 * kernels are compiled from one spec and checked before either runs. The
 * result is deterministic: every gradient row is summed in registers in a
 * fixed order.
 */
ATTNRT_API attnrt_status attnrt_backward(attnrt_module *dq, attnrt_module *dkdv,
                                         const attnrt_forward_args *args, void *stream);

/**
 * The one-kernel backward on `stream` (FlashAttention-2/3's; sm_90a, head
 * dims 64 and 128; about as fast as attnrt_backward, not deterministic): `pre`
 * (attngen --backward=pre) writes args->delta and zeroes args->dq_accum,
 * `fused` (--backward=fused) writes dK and dV and adds dQ into dq_accum
 * by TMA reductions (S and dP are computed once), `post` (--backward=post)
 * converts dq_accum into dQ. args is attnrt_backward's plus dq_accum, a
 * contiguous f32 tensor shaped as dq. All three kernels are compiled from
 * one spec and checked before any runs. dQ's sums are in an order that
 * varies from run to run; dK and dV are deterministic.
 */
ATTNRT_API attnrt_status attnrt_backward_fused(attnrt_module *pre, attnrt_module *fused,
                                               attnrt_module *post,
                                               const attnrt_forward_args *args, void *stream);

/**
 * A whole split-KV call on `stream`: the KV-cache kernel, then (when the
 * plan has more than one split) the combine kernel, both reading the same
 * args but for head_dim, which the combine kernel takes as O's (the split
 * kernel's head_dim_v when it has one) (args->workspace must then hold
 * attnrt_kvcache_plan's bytes; the
 * runtime never allocates, so the call can be captured in a CUDA graph).
 * `combine` may be NULL for a kernel that does not split.
 */
ATTNRT_API attnrt_status attnrt_forward_kvcache(attnrt_module *kernel,
                                                attnrt_module *combine,
                                                const attnrt_forward_args *args,
                                                void *stream);

/**
 * Checks the device-resident KV-cache arguments a kernel would read:
 * every cache_seqlens[b] in [0, nk] and every block-table entry a sequence
 * uses (the first ceil(cache_seqlens[b] / page_size) of row b) in
 * [0, num_blocks). Copies them to the host on `stream` and waits for it:
 * for debugging and tests, not for every call (nor inside a CUDA graph
 * capture). The kernels never read outside the cache whatever the values
 * (lengths are clamped; a page outside the cache reads zeros), but their
 * results are meaningless for bad ones.
 */
ATTNRT_API attnrt_status attnrt_check_kvcache_values(const attnrt_module *module,
                                                     const attnrt_forward_args *args,
                                                     void *stream);

/**
 * Enables (default) or disables, process-wide, the per-launch
 * cuPointerGetAttributes check that each tensor pointer is device memory of
 * the module's device. Disable it only to shave host overhead once a caller
 * is known to be correct.
 */
ATTNRT_API void attnrt_set_pointer_checks(int enabled);

/**
 * Enables or disables (default, unless the environment variable
 * ATTNRT_CHECK_SEQLENS is 1 when the library loads), process-wide, the check
 * of a varlen call's cu_seqlens values in attnrt_forward: it copies both
 * vectors to the host in stream order (which waits for the stream's earlier
 * work) and runs attnrt_check_cu_seqlens before the launch. A stream that
 * is capturing a CUDA graph is not checked (it cannot be read back then).
 * Off by default because the copy costs a stream synchronization per call.
 */
ATTNRT_API void attnrt_set_seqlen_checks(int enabled);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNRT_ATTNRT_H */
