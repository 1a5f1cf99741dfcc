/*===- attnrt_quantize.h - the FP8 quantize kernel's launcher ----*- C -*-===*
 *
 * The quantize kernel (attngen --quantize-fp8, attngen_quantize_fp8) turns
 * a bf16/f16 [B, N, H, D] tensor into e4m3 for the FP8 attention kernels,
 * one CTA per 128 rows of a head: with one scale per 128-row block (written
 * to descale_out, amax / 448) or with the caller's per-(batch, head)
 * descales, optionally after a Hadamard rotation of each row (compiled
 * in). docs/ABI.md "Quantize kernel" has the kernel's parameters.
 *
 *===--------------------------------------------------------------------===*/
#ifndef ATTNRT_ATTNRT_QUANTIZE_H
#define ATTNRT_ATTNRT_QUANTIZE_H

#include "attnrt/attnrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The arguments of one quantize call (quantize_args.def). */
typedef struct attnrt_quantize_args {
#define ATTNRT_FIELD(type, name) type name;
#define ATTNRT_ARRAY(type, name, n) type name[n];
#include "attnrt/quantize_args.def"
#undef ATTNRT_FIELD
#undef ATTNRT_ARRAY
} attnrt_quantize_args;

/** Opaque loaded quantize kernel. */
typedef struct attnrt_quantize_kernel attnrt_quantize_kernel;

/** Loads the PTX of a quantize kernel (entry `kernel`, compiled for
 *  `head_dim` and source `src_dtype`, launched with `num_threads` threads
 *  and `smem_bytes` of dynamic shared memory) in the calling thread's
 *  current CUDA context. */
ATTNRT_API attnrt_status attnrt_quantize_load(const char *ptx, const char *kernel,
                                              int head_dim, int src_dtype,
                                              int num_threads, int smem_bytes,
                                              attnrt_quantize_kernel **out);
ATTNRT_API attnrt_status attnrt_quantize_unload(attnrt_quantize_kernel *kernel);

/** Checks `args` against the kernel without touching the GPU: sizes, NULL
 *  pointers, layouts, alignment and the scale mode. */
ATTNRT_API attnrt_status attnrt_check_quantize_args(int head_dim, int src_dtype,
                                                    const attnrt_quantize_args *args);

/** Launches on `stream` (NULL: the default stream) after
 *  attnrt_check_quantize_args. */
ATTNRT_API attnrt_status attnrt_quantize(const attnrt_quantize_kernel *kernel,
                                         const attnrt_quantize_args *args, void *stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNRT_ATTNRT_QUANTIZE_H */
