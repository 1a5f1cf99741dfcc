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
#define ATTNRT_ABI_VERSION 2

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
  ATTNRT_DTYPE_BF16 = 2  /**< bfloat16, metadata "dtype": "bf16" */
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
#define ATTNRT_SPEC_CTYPE_Arch int
#define ATTNRT_SPEC_CTYPE_Real double

/** Where the diagonal of a causal mask or a window sits when nq != nk
 *  (metadata "causal_align"; attngen_spec::causal_align). */
typedef enum attnrt_causal_align {
  ATTNRT_CAUSAL_ALIGN_TOP_LEFT = 0,    /**< row i's diagonal is key i */
  ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT = 1 /**< row i's is key i + nk - nq */
} attnrt_causal_align;

/** The causal mask of a kernel (attnrt_kernel_info::causal; metadata
 *  "causal" and "causal_align"). Non-zero means causal, whichever way it is
 *  aligned. */
typedef enum attnrt_causal {
  ATTNRT_CAUSAL_NONE = 0,        /**< no mask ("causal_align": "none") */
  ATTNRT_CAUSAL_TOP_LEFT = 1,    /**< row i sees cols j <= i ("top_left") */
  ATTNRT_CAUSAL_BOTTOM_RIGHT = 2 /**< j <= i + nk - nq ("bottom_right") */
} attnrt_causal;

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
  ATTNRT_SIZE_NUM_BLOCKS = 8   /**< "num_blocks": args.num_blocks */
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
 */
typedef struct attnrt_kernel_info {
  char kernel[ATTNRT_MAX_KERNEL_NAME]; /**< PTX .entry name */
  char arch[16];      /**< "sm_80" or "sm_90a" */
  int dtype;          /**< an attnrt_dtype */
  int head_dim;       /**< D */
  int causal;         /**< an attnrt_causal: 0 none, 1 top-left, 2 bottom-right */
  int block_m;        /**< query rows per tile */
  int block_n;        /**< key rows per inner iteration (informative) */
  int num_threads;    /**< blockDim.x */
  int smem_bytes;     /**< dynamic shared memory per CTA */
  int uses_tma;       /**< 1: the kernel takes TMA descriptors (sm_90a) */
  int tma_box_cols;   /**< TMA box inner extent (elements); 0 without TMA */
  int tma_box_rows_q; /**< TMA box rows for Q (0: no descriptor) */
  int tma_box_rows_k; /**< TMA box rows for K (0: no descriptor) */
  int tma_box_rows_v; /**< TMA box rows for V (0: no descriptor) */
  double scale;       /**< softmax scale baked into the kernel */
  /* Filled once loaded on a device; -1 from attnrt_metadata_parse. */
  int device;            /**< CUDA device ordinal */
  int cc_major;          /**< device compute capability */
  int cc_minor;
  int num_regs;          /**< registers per thread (CU_FUNC_ATTRIBUTE_NUM_REGS) */
  int local_bytes;       /**< local memory per thread: > 0 means spills */
  int static_smem_bytes; /**< static shared memory per CTA */
  int max_threads_per_block; /**< limit given the kernel's registers */
  /* Appended to keep the offsets above (it fits the old tail padding). */
  int lse;            /**< 1: the kernel writes LSE when args.lse is not NULL;
                           0: built without LSE (metadata "lse": false, a
                           _nolse name), args.lse must be NULL */
  /* ABI v2: the grid rule (metadata "grid"). The tile space has grid_dims
   * dimensions; dimension i has ceil(size(grid_size[i]) / grid_tile[i])
   * tiles. With ctas_per_sm == 0 the launch grid is the tile space; with
   * ctas_per_sm > 0 the kernel is persistent: gridDim.x =
   * min(ctas_per_sm * num_sms, number of tiles), each CTA loops over tiles. */
  int grid_dims;      /**< 1 to 3 */
  int grid_size[3];   /**< an attnrt_size per dimension */
  int grid_tile[3];   /**< >= 1 */
  int ctas_per_sm;    /**< 0: one CTA per tile; > 0: persistent */
  int num_sms;        /**< multiprocessors of the device; -1 from
                           attnrt_metadata_parse */
  /* ---- Variable-length batches (appended) ---- */
  int varlen;         /**< 1: the kernel takes packed [total, H, D] tensors
                           and cu_seqlens (metadata "varlen": true; see
                           attnrt_forward_args); 0: [B, N, H, D] */
  /* KV cache and split-KV (docs/ABI.md "KV cache and split-KV"; metadata
   * "kind", "kv_cache", "page_size", "head_pack", "split_kv" and the grid
   * tiles' "times"). */
  int kind;           /**< an attnrt_kernel_kind */
  int kv_cache;       /**< 1: reads K/V as a KV cache (the KV-cache fields of
                           attnrt_forward_args) */
  int page_size;      /**< > 0: a paged cache of pages of this many rows */
  int head_pack;      /**< query heads per tile (GQA packing); 1: none */
  int split_kv;       /**< 1: splits each sequence's keys over num_splits
                           CTAs (with a combine kernel when > 1) */
  int grid_times[3];  /**< an attnrt_size multiplying dimension i's tiles,
                           or -1 */
  /* ---- The output through the TMA (appended) ---- */
  int tma_box_rows_o; /**< TMA box rows for O (0: the kernel stores O from
                           registers, no descriptor) */
} attnrt_kernel_info;

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
  const void *q;
  const void *k;
  const void *v;
  void *o;
  float *lse;           /**< may be NULL */
  int64_t batch;        /**< B */
  int64_t nq;           /**< query rows per (batch, head) */
  int64_t nk;           /**< key/value rows per (batch, kv head) */
  int64_t num_heads;    /**< H */
  int64_t num_kv_heads; /**< Hkv */
  int64_t head_dim;     /**< D; must equal the kernel's head_dim */
  int64_t q_strides[4]; /**< element strides of dims [B, N, H, D] */
  int64_t k_strides[4];
  int64_t v_strides[4];
  int64_t o_strides[4];
  int dtype;            /**< an attnrt_dtype; must equal the kernel's */

  /* ---- Variable-length (packed) batches, appended ----------------------
   * For a varlen kernel (attnrt_kernel_info::varlen, flash_attn_varlen_func's
   * layout); all zero (NULL) for a dense one. The sequences of the batch
   * are packed along the rows: Q and O are [total_q, H, D], K and V
   * [total_k, Hkv, D], LSE is [H, total_q]; nq and nk hold total_q and
   * total_k, and strides[0] (the batch stride) is unused. Sequence b is
   * query rows cu_seqlens_q[b] .. cu_seqlens_q[b+1] - 1 and key rows
   * cu_seqlens_k[b] .. cu_seqlens_k[b+1] - 1: each vector has batch + 1
   * int32 entries in device memory, starts at 0, never decreases and ends
   * at total_q (total_k). A sequence may be empty; one without keys gets
   * O = 0 and LSE = -inf. max_seqlen_q / max_seqlen_k are at least the
   * longest query / key length: the grid covers max_seqlen_q rows per
   * sequence (a larger value only adds CTAs that exit at once).
   * The kernel never reads or writes outside its tensors whatever
   * cu_seqlens holds; its values are checked by attnrt_check_cu_seqlens,
   * which attnrt_forward runs on a copy once attnrt_set_seqlen_checks(1)
   * (or ATTNRT_CHECK_SEQLENS=1) asks for it. */
  const int32_t *cu_seqlens_q; /**< [batch + 1] int32, device memory */
  const int32_t *cu_seqlens_k; /**< [batch + 1] int32, device memory */
  int64_t max_seqlen_q;        /**< >= every query length; the grid's rows */
  int64_t max_seqlen_k;        /**< >= every key length */
  /* ---- KV cache and split-KV, appended after the varlen block. Read only
   * by kernels whose
   * metadata says "kv_cache": true and by their combine kernels; zeroed,
   * they mean: every sequence holds nk keys, no block table, the runtime
   * chooses the splits, no workspace. (docs/ABI.md "KV cache and
   * split-KV".)
   *
   * Contiguous cache: k and v are [batch, nk, Hkv, D] (nk: a sequence's
   * capacity). Paged cache: k and v are [num_blocks, page_size, Hkv, D]
   * (k_strides/v_strides over those dims), key n of sequence b is row
   * n % page_size of page block_table[b * block_table_stride +
   * n / page_size], and nk must be max_blocks * page_size. */
  const int32_t *cache_seqlens; /**< [batch] int32 device array: sequence b
                                     attends to its first cache_seqlens[b]
                                     keys (clamped to [0, nk] in the kernel);
                                     NULL: all nk */
  const int32_t *block_table;   /**< [batch, max_blocks] int32 device array
                                     (paged kernels only, else NULL) */
  int64_t block_table_stride;   /**< elements between rows of block_table */
  int64_t max_blocks;           /**< block_table columns */
  int64_t num_blocks;           /**< pages in k and v (their dim 0) */
  int64_t page_size;            /**< rows per page: the kernel's page_size
                                     (0 for a contiguous cache) */
  int64_t num_splits;           /**< split-KV kernels: 0 lets the runtime
                                     choose (attnrt_kvcache_plan), 1 none,
                                     2..ATTNRT_MAX_SPLITS splits */
  void *workspace;              /**< device memory for the partial results
                                     of num_splits > 1 (16-byte aligned);
                                     NULL otherwise */
  size_t workspace_bytes;       /**< its size: at least what
                                     attnrt_kvcache_plan returns */
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
 *  into the library; bindings (ctypes) compare them with their own. */
ATTNRT_API size_t attnrt_sizeof_forward_args(void);
ATTNRT_API size_t attnrt_sizeof_kernel_info(void);

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
 * the device's SMs and the key blocks of a sequence (nk): none when the
 * tiles already fill the GPU, else the fewest that fill its waves well (at
 * most ATTNRT_MAX_SPLITS, at most one per key block). Needs a loaded
 * module's info for that (num_sms); a given num_splits is checked and
 * returned. *workspace_bytes is 0 for one split; else the bytes of the
 * partial outputs [S * B, Nq, H, D] f32 and log-sum-exps [S * B, H, Nq]
 * f32 (16-byte aligned, in that order). Deterministic: the same info and
 * args give the same plan, which attnrt_forward uses. Either output may be
 * NULL.
 */
ATTNRT_API attnrt_status attnrt_kvcache_plan(const attnrt_kernel_info *info,
                                             const attnrt_forward_args *args,
                                             int64_t *num_splits,
                                             size_t *workspace_bytes);

/**
 * A whole split-KV call on `stream`: the KV-cache kernel, then (when the
 * plan has more than one split) the combine kernel, both reading the same
 * args (args->workspace must then hold attnrt_kvcache_plan's bytes; the
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
