//===- Validate.cpp - Checks of a forward call against a kernel -------------===//
//
// Everything a kernel assumes about its arguments is checked here, on the
// host and without a GPU, before any launch (docs/ABI.md "Tensors"):
//
//   dtype, head_dim   == the kernel's
//   B, Nq >= 0        (0 -> nothing to do), Nk, H, Hkv >= 1, H % Hkv == 0
//   Nq, Nk            <= INT32_MAX (passed as i32)
//   grid              the kernel's grid rule gives at most 2^31-1 CTAs
//                     along x and 65535 along y and z
//   q, k, v, o        non-NULL, 16-byte aligned; lse NULL or 16-byte aligned
//   lse               NULL for a kernel built without LSE (info.lse == 0)
//   strides           [3] == 1; [0..2] >= 0 and multiples of 8 elements
//                     (ignored for a dimension of extent 1)
//   TMA kernels       byte strides < 2^40
//   varlen kernels    cu_seqlens_q/k non-NULL, 4-byte aligned; max_seqlen_q/k
//                     >= 0 (>= 1 with queries); dense kernels: all zero.
//                     The values: checkCuSeqlens (attnrt_check_cu_seqlens)
//
//===----------------------------------------------------------------------===//

#include "Validate.h"

#include "Error.h"
#include "KvCache.h"
#include "Metadata.h"

#include <cstdint>
#include <cstring>

namespace attnrt {

/// Base pointers of Q, K, V, O: 16 bytes, the cp.async / TMA chunk.
static constexpr uint64_t kTensorAlignBytes = 16;
/// Sizes are passed to the kernel as i32.
static constexpr int64_t kMaxI32 = INT32_MAX;
/// CUDA's limits on gridDim.x and on gridDim.y and gridDim.z.
static constexpr int64_t kMaxGridX = INT32_MAX;
static constexpr int64_t kMaxGridYZ = 65535;
/// What to split, per attnrt_size, when a grid dimension is too large.
static constexpr const char *kSplitWhat[] = {"batch", "queries", "keys",
                                             "heads", "key/value heads", "queries"};
/// cu_seqlens entries are int32: 4-byte aligned.
static constexpr uint64_t kCuSeqlensAlignBytes = 4;
/// cuTensorMapEncodeTiled: every global stride is below 2^40 bytes.
static constexpr int64_t kMaxTmaStrideBytes = int64_t(1) << 40;

namespace {

/// One tensor argument seen through its logical [B, N, H, D] dims.
struct TensorArg {
  const char *name;     // "q"
  const char *display;  // "Q"
  const void *pointer;
  int64_t extents[4];
  const int64_t *strides;
  int64_t elementBytes = 2;
  /// Its rows contiguous instead of its head dim (an FP8 kernel's V).
  bool keyMajor = false;
};

/// Dimension letters used in stride names (q_stride_b, q_stride_n, ...).
constexpr const char *kDimNames[4] = {"b", "n", "h", "d"};

attnrt_status checkPointer(const TensorArg &t) {
  if (!t.pointer)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.%s is NULL: pass the device address of %s (e.g. tensor.data_ptr())", t.name,
                t.display);
  uint64_t address = reinterpret_cast<uintptr_t>(t.pointer);
  if (address % kTensorAlignBytes != 0)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.%s = %p is not 16-byte aligned: attngen kernels copy 16-byte chunks; use a "
                "tensor whose data pointer is 16-byte aligned (a view's storage offset must be a "
                "multiple of 8 elements)",
                t.name, t.pointer);
  return ATTNRT_OK;
}

attnrt_status checkStrides(const TensorArg &t, bool usesTma);

/// A backward kernel's tensors: dout (copied as q), dq, dk and dv (stored
/// from registers), the forward's LSE and the delta scratch tensor, and no
/// gradient aliasing an input other CTAs still read.
attnrt_status checkBackwardArgs(const attnrt_kernel_info &info, const attnrt_forward_args &a,
                                int64_t batchExtent) {
  // dO and dV have the value head dim (head_dim_v, 0: head_dim), as O and V.
  const int64_t dv = info.head_dim_v ? info.head_dim_v : a.head_dim;
  const TensorArg grads[4] = {
      {"dout", "dO", a.dout, {batchExtent, a.nq, a.num_heads, dv}, a.dout_strides},
      {"dq", "dQ", a.dq, {batchExtent, a.nq, a.num_heads, a.head_dim}, a.dq_strides},
      {"dk", "dK", a.dk, {batchExtent, a.nk, a.num_kv_heads, a.head_dim}, a.dk_strides},
      {"dv", "dV", a.dv, {batchExtent, a.nk, a.num_kv_heads, dv}, a.dv_strides}};
  for (int i = 0; i < 4; ++i) {
    if (attnrt_status s = checkPointer(grads[i]))
      return s;
    if (attnrt_status s = checkStrides(grads[i], i == 0 && info.uses_tma != 0))
      return s;
  }
  for (const auto &[name, pointer] :
       {std::pair("lse", static_cast<const void *>(a.lse)),
        std::pair("delta", static_cast<const void *>(a.delta))})
    if (!pointer || reinterpret_cast<uintptr_t>(pointer) % kTensorAlignBytes != 0)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "args.%s = %p: a backward kernel needs a 16-byte aligned contiguous float32 "
                  "%s tensor (%s)",
                  name, pointer, info.varlen ? "[H, total_q]" : "[B, H, Nq]",
                  std::string(name) == "lse" ? "the forward's log-sum-exp"
                                             : "scratch for rowsum(dO * O)");
  bool accumulates = info.backward == ATTNRT_BACKWARD_PRE ||
                     info.backward == ATTNRT_BACKWARD_FUSED ||
                     info.backward == ATTNRT_BACKWARD_POST;
  if (accumulates &&
      (!a.dq_accum || reinterpret_cast<uintptr_t>(a.dq_accum) % kTensorAlignBytes != 0))
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.dq_accum = %p: the one-kernel backward needs a 16-byte aligned contiguous "
                "float32 %s tensor for dQ (the pre kernel zeroes it)",
                static_cast<void *>(a.dq_accum), info.varlen ? "[total_q, H, D]" : "[B, Nq, H, D]");
  const void *inputs[] = {a.q, a.k, a.v, a.o, a.dout};
  for (const TensorArg &g : {grads[1], grads[2], grads[3]})
    for (const void *input : inputs)
      if (g.pointer == input)
        return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                    "args.%s is the same address as an input (q, k, v, o or dout): other blocks "
                    "still read it while the gradient is written; pass a separate tensor",
                    g.name);
  return ATTNRT_OK;
}

attnrt_status checkStrides(const TensorArg &t, bool usesTma) {
  if (t.keyMajor && t.strides[1] != 1)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "%s_stride_n (%s_strides[1]) = %lld but an FP8 kernel reads %s K-major, its keys "
                "contiguous (stride 1): store it transposed, [B, Hkv, D, Nk] with Nk padded to a "
                "multiple of 16, and pass that view, or compile the kernel with v_row_major "
                "(--v-row-major) to pass v as it is",
                t.name, t.name, static_cast<long long>(t.strides[1]), t.display);
  if (!t.keyMajor && t.strides[3] != 1)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "%s_stride_d (%s_strides[3]) = %lld but the head dimension must be contiguous "
                "(stride 1): make %s contiguous in its last dimension (e.g. .contiguous())",
                t.name, t.name, static_cast<long long>(t.strides[3]), t.display);
  const int contiguous = t.keyMajor ? 1 : 3;
  const int64_t multiple = static_cast<int64_t>(kTensorAlignBytes) / t.elementBytes;
  for (int d = 0; d < 4; ++d) {
    if (d == contiguous || t.extents[d] <= 1)
      continue; // the stride of a dimension of extent 1 is never used
    int64_t stride = t.strides[d];
    if (stride < 0)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "%s_stride_%s (%s_strides[%d]) = %lld is negative: attngen kernels need "
                  "non-negative strides; pass a tensor without flipped dimensions (e.g. "
                  ".contiguous())",
                  t.name, kDimNames[d], t.name, d, static_cast<long long>(stride));
    if (stride % multiple != 0)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "%s_stride_%s (%s_strides[%d]) = %lld is not a multiple of %lld elements: "
                  "attngen kernels copy 16-byte chunks; pad the stride to a multiple of %lld "
                  "elements",
                  t.name, kDimNames[d], t.name, d, static_cast<long long>(stride),
                  static_cast<long long>(multiple), static_cast<long long>(multiple));
    if (usesTma && stride >= kMaxTmaStrideBytes / t.elementBytes)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "%s_stride_%s (%s_strides[%d]) = %lld elements is 2^40 bytes or more, beyond "
                  "what a TMA descriptor can address: use a smaller stride",
                  t.name, kDimNames[d], t.name, d, static_cast<long long>(stride));
  }
  // The element farthest from the base must be addressable in 64 bits.
  int64_t last = t.extents[contiguous];
  for (int d = 0; d < 4; ++d) {
    if (d == contiguous || t.extents[d] <= 1)
      continue;
    int64_t term;
    if (__builtin_mul_overflow(t.extents[d] - 1, t.strides[d], &term) ||
        __builtin_add_overflow(last, term, &last))
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "%s spans more than 2^63 elements with these sizes and strides: check "
                  "args.%s_strides",
                  t.display, t.name);
  }
  int64_t bytes;
  if (__builtin_mul_overflow(last, t.elementBytes, &bytes))
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "%s spans more than 2^63 bytes with these sizes and strides: check args.%s_strides",
                t.display, t.name);
  return ATTNRT_OK;
}

/// Non-negative count check: "args.<name> = -1 is negative".
attnrt_status checkNonNegative(const char *name, int64_t value) {
  if (value < 0)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT, "args.%s = %lld is negative: it must be >= 0", name,
                static_cast<long long>(value));
  return ATTNRT_OK;
}

/// Positive count check: "args.<name> = 0 must be >= 1".
attnrt_status checkPositive(const char *name, int64_t value, const char *why) {
  if (value < 1)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT, "args.%s = %lld is invalid: it must be >= 1 (%s)",
                name, static_cast<long long>(value), why);
  return ATTNRT_OK;
}

} // namespace

bool isEmptyForward(const attnrt_forward_args &a) { return a.batch == 0 || a.nq == 0; }

int64_t sizeValue(const attnrt_forward_args &a, int size) {
  switch (size) {
  case ATTNRT_SIZE_BATCH:
    return a.batch;
  case ATTNRT_SIZE_NQ:
    return a.nq;
  case ATTNRT_SIZE_NK:
    return a.nk;
  case ATTNRT_SIZE_NUM_HEADS:
    return a.num_heads;
  case ATTNRT_SIZE_NUM_KV_HEADS:
    return a.num_kv_heads;
  case ATTNRT_SIZE_MAX_SEQLEN_Q:
    return a.max_seqlen_q;
  case ATTNRT_SIZE_MAX_SEQLEN_K:
    return a.max_seqlen_k;
  case ATTNRT_SIZE_NUM_SPLITS:
    return a.num_splits > 0 ? a.num_splits : 1;
  case ATTNRT_SIZE_MAX_BLOCKS:
    return a.max_blocks;
  case ATTNRT_SIZE_NUM_BLOCKS:
    return a.num_blocks;
  default:
    return 0;
  }
}

int64_t gridTiles(const attnrt_kernel_info &info, const attnrt_forward_args &a, int d) {
  int64_t size = sizeValue(a, info.grid_size[d]);
  int64_t tiles = (size + info.grid_tile[d] - 1) / info.grid_tile[d];
  // A split-KV kernel folds its splits into a dimension (grid "times").
  if (info.grid_times[d] >= 0 && __builtin_mul_overflow(tiles, sizeValue(a, info.grid_times[d]), &tiles))
    return INT64_MAX;
  return tiles;
}

/// The scalar part of a varlen call (a dense one has none of it): cu_seqlens
/// given exactly for a varlen kernel, 4-byte aligned; max_seqlen_q/k in
/// range and consistent with the totals; at least one key row when there
/// are queries. The values of cu_seqlens are attnrt_check_cu_seqlens's.
static attnrt_status checkVarlenArgs(const attnrt_kernel_info &info, const attnrt_forward_args &a) {
  if (!info.varlen) {
    if (a.cu_seqlens_q || a.cu_seqlens_k || a.max_seqlen_q || a.max_seqlen_k)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "args.%s is set but kernel '%s' takes a dense [B, N, H, D] batch: leave the "
                  "varlen fields (cu_seqlens_q/k, max_seqlen_q/k) zero, or load a varlen kernel "
                  "(attngen --varlen, attngen_spec.varlen = 1) for packed sequences",
                  a.cu_seqlens_q   ? "cu_seqlens_q"
                  : a.cu_seqlens_k ? "cu_seqlens_k"
                  : a.max_seqlen_q ? "max_seqlen_q"
                                   : "max_seqlen_k",
                  info.kernel);
    return ATTNRT_OK;
  }
  const struct {
    const char *name;
    const int32_t *pointer;
  } vectors[] = {{"cu_seqlens_q", a.cu_seqlens_q}, {"cu_seqlens_k", a.cu_seqlens_k}};
  // With nothing to launch the vectors are not read.
  for (const auto &v : vectors) {
    if (isEmptyForward(a))
      break;
    if (!v.pointer)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "args.%s is NULL but kernel '%s' is a varlen kernel: pass the device address of "
                  "the int32 [batch + 1] vector of sequence starts (flash_attn's %s)",
                  v.name, info.kernel, v.name);
    if (reinterpret_cast<uintptr_t>(v.pointer) % kCuSeqlensAlignBytes != 0)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "args.%s = %p is not 4-byte aligned: pass an int32 tensor's data pointer",
                  v.name, static_cast<const void *>(v.pointer));
  }
  if (attnrt_status s = checkNonNegative("max_seqlen_q", a.max_seqlen_q))
    return s;
  if (attnrt_status s = checkNonNegative("max_seqlen_k", a.max_seqlen_k))
    return s;
  if (a.max_seqlen_q > kMaxI32 || a.max_seqlen_k > kMaxI32)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.max_seqlen_%s = %lld exceeds the kernel's 32-bit limit of %lld rows",
                a.max_seqlen_q > kMaxI32 ? "q" : "k",
                static_cast<long long>(a.max_seqlen_q > kMaxI32 ? a.max_seqlen_q : a.max_seqlen_k),
                static_cast<long long>(kMaxI32));
  if (a.batch > 0 && a.nq > 0 && a.max_seqlen_q == 0)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.max_seqlen_q = 0 but Q has args.nq = %lld rows: pass the longest query "
                "sequence's length (the grid covers max_seqlen_q rows of every sequence)",
                static_cast<long long>(a.nq));
  return ATTNRT_OK;
}

/// ALiBi's slopes: given exactly for an ALiBi kernel, f32-aligned, one per
/// head (stride 0) or per (batch, head) rows of at least num_heads.
static attnrt_status checkAlibiArgs(const attnrt_kernel_info &info,
                                    const attnrt_forward_args &a) {
  if (!info.alibi) {
    if (a.alibi_slopes)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "args.alibi_slopes is not NULL but kernel '%s' was compiled without ALiBi and "
                  "would ignore it: pass NULL, or use a kernel compiled with ALiBi (attngen "
                  "--alibi, attngen_spec.alibi = 1)",
                  info.kernel);
    return ATTNRT_OK;
  }
  if (!a.alibi_slopes)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.alibi_slopes is NULL but kernel '%s' adds ALiBi's bias: pass the device "
                "address of the float32 slopes, (H,) or (B, H)",
                info.kernel);
  if (reinterpret_cast<uintptr_t>(a.alibi_slopes) % sizeof(float) != 0)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.alibi_slopes = %p is not 4-byte aligned: pass a float32 tensor",
                static_cast<const void *>(a.alibi_slopes));
  int64_t stride = a.alibi_slopes_stride;
  if (a.batch > 1 && stride != 0 && (stride < a.num_heads || stride > kMaxI32))
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.alibi_slopes_stride = %lld is invalid for %lld heads: use 0 for one slope "
                "per head (shape (H,)), or the row stride of a (B, H) tensor (at least H, at most "
                "2^31 - 1)",
                static_cast<long long>(stride), static_cast<long long>(a.num_heads));
  if (stride < 0)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.alibi_slopes_stride = %lld is negative: use 0 or the row stride of a (B, H) "
                "tensor",
                static_cast<long long>(stride));
  return ATTNRT_OK;
}

/// FP8's descales: given exactly for an e4m3 kernel, 4-byte aligned, with
/// non-negative strides.
static attnrt_status checkDescaleArgs(const attnrt_kernel_info &info,
                                      const attnrt_forward_args &a) {
  struct Descale {
    const char *name;
    const float *pointer;
    const int64_t *strides;
  } descales[] = {{"q_descale", a.q_descale, a.q_descale_strides},
                  {"k_descale", a.k_descale, a.k_descale_strides},
                  {"v_descale", a.v_descale, a.v_descale_strides}};
  const bool fp8 = info.dtype == ATTNRT_DTYPE_E4M3;
  for (const Descale &d : descales) {
    if (!fp8 && d.pointer)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "args.%s is set but kernel '%s' is not FP8 (dtype %s): descales are for e4m3 "
                  "kernels; leave it NULL",
                  d.name, info.kernel, dtypeName(info.dtype));
    if (!fp8)
      continue;
    if (!d.pointer || reinterpret_cast<uintptr_t>(d.pointer) % alignof(float) != 0)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "args.%s = %p: an FP8 kernel reads a 4-byte aligned float32 descale per (batch, "
                  "key/value head), or per 128-row block with block scales, from device memory "
                  "(strides {0, 0} for one per tensor; a tensor of ones for none)",
                  d.name, static_cast<const void *>(d.pointer));
    if (d.strides[0] < 0 || d.strides[1] < 0)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "args.%s_strides = {%lld, %lld}: strides must be >= 0 (0 repeats a descale)",
                  d.name, static_cast<long long>(d.strides[0]),
                  static_cast<long long>(d.strides[1]));
  }
  return ATTNRT_OK;
}

attnrt_status checkForwardArgs(const attnrt_kernel_info &info, const attnrt_forward_args &a) {
  // Kernel specialization: dtype and head dim are compiled in.
  if (a.dtype != ATTNRT_DTYPE_F16 && a.dtype != ATTNRT_DTYPE_BF16 &&
      a.dtype != ATTNRT_DTYPE_E4M3)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.dtype = %d is not a dtype: use ATTNRT_DTYPE_F16 (1), ATTNRT_DTYPE_BF16 (2) "
                "or ATTNRT_DTYPE_E4M3 (3)",
                a.dtype);
  if (a.dtype != info.dtype)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.dtype is %s but kernel '%s' was compiled for %s: convert the tensors to %s or "
                "load a kernel compiled for %s",
                dtypeName(a.dtype), info.kernel, dtypeName(info.dtype), dtypeName(info.dtype),
                dtypeName(a.dtype));
  if (a.head_dim != info.head_dim)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.head_dim = %lld but kernel '%s' was compiled for head_dim = %d: load a kernel "
                "compiled for head_dim %lld",
                static_cast<long long>(a.head_dim), info.kernel, info.head_dim,
                static_cast<long long>(a.head_dim));
  if (a.lse && !info.lse)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.lse is not NULL but kernel '%s' was compiled without LSE (metadata \"lse\": "
                "false) and would leave it unwritten: pass lse = NULL, or use a kernel compiled with "
                "LSE (attngen without --no-lse, attngen_spec.with_lse = 1)",
                info.kernel);

  // Sizes.
  if (attnrt_status s = checkNonNegative("batch", a.batch))
    return s;
  if (attnrt_status s = checkNonNegative("nq", a.nq))
    return s;
  if (attnrt_status s = checkVarlenArgs(info, a))
    return s;
  // A varlen batch may hold sequences without keys, but its K must have a
  // row for the kernel to read (and mask); with none at all every output is
  // 0 and every LSE -inf, which the caller can write without a kernel.
  if (attnrt_status s = checkPositive("nk", a.nk,
                                      info.varlen ? "K and V need at least one row (total_k >= "
                                                    "1); if every sequence has no keys, O is 0 "
                                                    "and LSE -inf without a launch"
                                                  : "attention over zero keys is undefined"))
    return s;
  if (attnrt_status s = checkPositive("num_heads", a.num_heads, "the number of query heads"))
    return s;
  if (attnrt_status s = checkPositive("num_kv_heads", a.num_kv_heads, "the number of key/value heads"))
    return s;
  if (a.num_heads % a.num_kv_heads != 0)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "num_heads = %lld is not a multiple of num_kv_heads = %lld: grouped-query attention "
                "needs H %% Hkv == 0 (query head h reads key/value head h / (H / Hkv))",
                static_cast<long long>(a.num_heads), static_cast<long long>(a.num_kv_heads));
  if (a.nq > kMaxI32)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.nq = %lld exceeds the kernel's 32-bit limit of %lld rows: split the queries "
                "into several calls",
                static_cast<long long>(a.nq), static_cast<long long>(kMaxI32));
  if (a.nk > kMaxI32)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.nk = %lld exceeds the kernel's 32-bit limit of %lld rows: %s",
                static_cast<long long>(a.nk), static_cast<long long>(kMaxI32),
                info.page_size > 0 ? "a paged kernel's nk is max_blocks * page_size; give the "
                                     "block table fewer columns (the pages the longest sequence "
                                     "uses)"
                                   : "split the keys into chunks and combine the partial results "
                                     "with the LSE");
  // The grid the kernel's rule gives must fit CUDA's limits.
  if (!isEmptyForward(a) && info.ctas_per_sm == 0)
    for (int d = 0; d < info.grid_dims; ++d) {
      int64_t tiles = gridTiles(info, a, d);
      int64_t limit = d == 0 ? kMaxGridX : kMaxGridYZ;
      if (tiles > limit)
        return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                    "args.%s = %lld exceeds the CUDA grid limit gridDim.%c <= %lld: split the %s into "
                    "several calls",
                    sizeName(info.grid_size[d]), static_cast<long long>(sizeValue(a, info.grid_size[d])),
                    "xyz"[d], static_cast<long long>(limit), kSplitWhat[info.grid_size[d]]);
    }

  // KV cache and split-KV: the page size, block table, splits, workspace.
  if (usesKvCacheArgs(info)) {
    if (attnrt_status s = checkKvCacheArgs(info, a))
      return s;
  } else if (info.varlen && info.page_size > 0) {
    if (attnrt_status s = checkPagedVarlenArgs(info, a))
      return s;
  } else if (a.block_table || a.page_size) {
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.block_table = %p and args.page_size = %lld but kernel '%s' reads no pages and "
                "would ignore them: pass NULL and 0, or use a paged kernel (attngen --varlen "
                "--paged-kv=N, or --kv-cache --paged-kv=N)",
                a.block_table, static_cast<long long>(a.page_size), info.kernel);
  }

  // Nothing to launch: the tensors may be empty (NULL data pointers).
  if (isEmptyForward(a))
    return ATTNRT_OK;

  // A packed batch's tensors are [total, H, D]: the batch dimension has
  // extent 1 (its stride is never used). A paged cache's K and V are
  // [num_blocks, page_size, Hkv, D].
  const int64_t batchExtent = info.varlen ? 1 : a.batch;
  bool paged = info.page_size > 0;
  int64_t kvBatch = paged ? a.num_blocks : batchExtent;
  int64_t kvRows = paged ? a.page_size : a.nk;
  // V and O have the kernel's value head dim (head_dim_v, 0: head_dim).
  const int64_t dv = info.head_dim_v ? info.head_dim_v : a.head_dim;
  // FP8: one-byte Q, K and V, V K-major; O stays 16-bit.
  const bool fp8 = info.dtype == ATTNRT_DTYPE_E4M3;
  const int64_t inputBytes = fp8 ? 1 : 2;
  const TensorArg all[4] = {
      {"q", "Q", a.q, {batchExtent, a.nq, a.num_heads, a.head_dim}, a.q_strides, inputBytes},
      {"k", "K", a.k, {kvBatch, kvRows, a.num_kv_heads, a.head_dim}, a.k_strides, inputBytes},
      {"v", "V", a.v, {kvBatch, kvRows, a.num_kv_heads, dv}, a.v_strides, inputBytes,
       fp8 && !info.v_row_major},
      {"o", "O", a.o, {batchExtent, a.nq, a.num_heads, dv}, a.o_strides}};
  if (attnrt_status s = checkAlibiArgs(info, a))
    return s;
  if (attnrt_status s = checkDescaleArgs(info, a))
    return s;

  // A combine kernel reads the workspace, not q, k and v.
  bool combine = info.kind == ATTNRT_KERNEL_COMBINE;
  const TensorArg *tensors = combine ? all + 3 : all;
  const int numTensors = combine ? 1 : 4;
  for (int i = 0; i < numTensors; ++i)
    if (attnrt_status s = checkPointer(tensors[i]))
      return s;
  // ABI.md: every base pointer is 16-byte aligned, LSE's included.
  if (a.lse && reinterpret_cast<uintptr_t>(a.lse) % kTensorAlignBytes != 0)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.lse = %p is not 16-byte aligned: pass a contiguous float32 tensor of shape "
                "%s whose data pointer is 16-byte aligned, or NULL",
                static_cast<void *>(a.lse), info.varlen ? "[H, total_q]" : "[B, H, Nq]");
  for (int i = 0; i < numTensors; ++i)
    if (attnrt_status s = checkStrides(tensors[i], info.uses_tma != 0))
      return s;

  if (info.backward != ATTNRT_BACKWARD_NONE)
    if (attnrt_status s = checkBackwardArgs(info, a, batchExtent))
      return s;

  // O must not alias K or V: other CTAs still read them while O is written.
  if (info.backward == ATTNRT_BACKWARD_NONE && !combine && (a.o == a.k || a.o == a.v))
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.o is the same address as args.%s: the kernel would overwrite keys/values other "
                "blocks still read; pass a separate output tensor",
                a.o == a.k ? "k" : "v");
  return ATTNRT_OK;
}

attnrt_status launchDims(const attnrt_kernel_info &info, const attnrt_forward_args &a,
                         unsigned grid[3], unsigned block[3], unsigned &smemBytes) {
  grid[0] = grid[1] = grid[2] = isEmptyForward(a) ? 0 : 1;
  if (!isEmptyForward(a)) {
    if (info.ctas_per_sm == 0) {
      for (int d = 0; d < info.grid_dims; ++d)
        grid[d] = static_cast<unsigned>(gridTiles(info, a, d));
    } else {
      // Persistent: at most ctas_per_sm CTAs per SM, each looping over the
      // tiles; never more CTAs than tiles.
      if (info.num_sms < 1)
        return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                    "kernel '%s' is persistent (its grid is a multiple of the device's SM count) "
                    "but this attnrt_kernel_info has no device: pass the info of a loaded module "
                    "(attnrt_module_info), not of attnrt_metadata_parse",
                    info.kernel);
      int64_t tiles = 1;
      for (int d = 0; d < info.grid_dims; ++d)
        if (__builtin_mul_overflow(tiles, gridTiles(info, a, d), &tiles))
          tiles = INT64_MAX;
      int64_t ctas = static_cast<int64_t>(info.ctas_per_sm) * info.num_sms;
      grid[0] = static_cast<unsigned>(tiles < ctas ? tiles : ctas);
    }
  }
  block[0] = static_cast<unsigned>(info.num_threads);
  block[1] = block[2] = 1;
  smemBytes = static_cast<unsigned>(info.smem_bytes);
  return ATTNRT_OK;
}

attnrt_status checkCuSeqlens(const attnrt_forward_args &a, const int32_t *cuQ, const int32_t *cuK) {
  const struct {
    const char *name;
    const char *what;
    const int32_t *values;
    int64_t total;
    const char *totalName;
    int64_t longest;
    const char *longestName;
  } vectors[] = {{"cu_seqlens_q", "query", cuQ, a.nq, "nq", a.max_seqlen_q, "max_seqlen_q"},
                 {"cu_seqlens_k", "key", cuK, a.nk, "nk", a.max_seqlen_k, "max_seqlen_k"}};
  for (const auto &v : vectors) {
    if (!v.values)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "the host copy of %s is NULL: pass args.batch + 1 = %lld int32 values", v.name,
                  static_cast<long long>(a.batch + 1));
    if (v.values[0] != 0)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "%s[0] = %d but the first sequence starts at row 0: %s holds the running sum "
                  "of the %s lengths, starting with 0",
                  v.name, v.values[0], v.name, v.what);
    for (int64_t b = 0; b < a.batch; ++b) {
      int64_t length = int64_t(v.values[b + 1]) - v.values[b];
      if (length < 0)
        return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                    "%s is not monotone: %s[%lld] = %d < %s[%lld] = %d (sequence %lld would have "
                    "%lld %s rows); it must never decrease",
                    v.name, v.name, static_cast<long long>(b + 1), v.values[b + 1], v.name,
                    static_cast<long long>(b), v.values[b], static_cast<long long>(b),
                    static_cast<long long>(length), v.what);
      if (length > v.longest)
        return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                    "sequence %lld has %lld %s rows, more than args.%s = %lld: pass the longest "
                    "%s length (rows past it would not be computed)",
                    static_cast<long long>(b), static_cast<long long>(length), v.what,
                    v.longestName, static_cast<long long>(v.longest), v.what);
    }
    // A paged K/V has no packed key tensor: each sequence's keys must fit
    // what its row of the block table addresses (nk = max_blocks *
    // page_size), and the total is not a tensor's.
    bool pagedKeys = cuK == v.values && a.block_table && a.page_size > 0;
    if (pagedKeys) {
      for (int64_t b = 0; b < a.batch; ++b)
        if (int64_t length = int64_t(v.values[b + 1]) - v.values[b]; length > a.nk)
          return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                      "sequence %lld has %lld keys but its row of block_table addresses %lld "
                      "(max_blocks = %lld pages of %lld rows): give the block_table more pages",
                      static_cast<long long>(b), static_cast<long long>(length),
                      static_cast<long long>(a.nk), static_cast<long long>(a.max_blocks),
                      static_cast<long long>(a.page_size));
      continue;
    }
    if (v.values[a.batch] != v.total)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "%s[%lld] = %d ends the last sequence, but the packed tensor has args.%s = %lld "
                  "rows: the last entry must be the total number of %s rows",
                  v.name, static_cast<long long>(a.batch), v.values[a.batch], v.totalName,
                  static_cast<long long>(v.total), v.what);
  }
  return ATTNRT_OK;
}

} // namespace attnrt

extern "C" {

attnrt_status attnrt_check_cu_seqlens(const attnrt_forward_args *args, const int32_t *cu_seqlens_q,
                                      const int32_t *cu_seqlens_k) {
  return attnrt::guardApi("attnrt_check_cu_seqlens", [&] {
    if (!args)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "args is NULL: pass the attnrt_forward_args of the varlen call");
    if (args->batch < 0 || args->batch >= INT32_MAX)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "args.batch = %lld is out of range for a varlen call: it must be 0 to "
                          "2^31 - 2 (cu_seqlens has batch + 1 int32 entries)",
                          static_cast<long long>(args->batch));
    return attnrt::checkCuSeqlens(*args, cu_seqlens_q, cu_seqlens_k);
  });
}

attnrt_status attnrt_check_forward_args(const attnrt_kernel_info *info,
                                        const attnrt_forward_args *args) {
  return attnrt::guardApi("attnrt_check_forward_args", [&] {
    if (!info)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "the kernel info is NULL: pass the attnrt_kernel_info of the kernel (from "
                          "attnrt_module_info or attnrt_metadata_parse)");
    if (!args)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "args is NULL: pass the address of a filled attnrt_forward_args");
    attnrt_forward_args resolved;
    if (attnrt_status s = attnrt::resolveSplits(*info, *args, resolved))
      return s;
    return attnrt::checkForwardArgs(*info, resolved);
  });
}

attnrt_status attnrt_launch_dims(const attnrt_kernel_info *info, const attnrt_forward_args *args,
                                 unsigned grid[3], unsigned block[3], unsigned *smem_bytes) {
  return attnrt::guardApi("attnrt_launch_dims", [&] {
    if (!grid || !block || !smem_bytes)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "attnrt_launch_dims needs non-NULL grid, block and smem_bytes outputs");
    if (attnrt_status s = attnrt_check_forward_args(info, args))
      return s;
    attnrt_forward_args resolved;
    if (attnrt_status s = attnrt::resolveSplits(*info, *args, resolved))
      return s;
    return attnrt::launchDims(*info, resolved, grid, block, *smem_bytes);
  });
}

} // extern "C"
