//===- Validate.cpp - Checks of a forward call against a kernel -------------===//
//
// Everything a kernel assumes about its arguments is checked here, on the
// host and without a GPU, before any launch (docs/ABI.md "Tensors"):
//
//   dtype, head_dim   == the kernel's
//   B, Nq >= 0        (0 -> nothing to do), Nk, H, Hkv >= 1, H % Hkv == 0
//   Nq, Nk            <= INT32_MAX (passed as i32)
//   H <= 65535, B <= 65535 (gridDim.y, gridDim.z)
//   q, k, v, o        non-NULL, 16-byte aligned; lse NULL or 16-byte aligned
//   lse               NULL for a kernel built without LSE (info.lse == 0)
//   strides           [3] == 1; [0..2] >= 0 and multiples of 8 elements
//                     (ignored for a dimension of extent 1)
//   TMA kernels       byte strides < 2^40
//
//===----------------------------------------------------------------------===//

#include "Validate.h"

#include "Error.h"
#include "Metadata.h"

#include <cstdint>
#include <cstring>

namespace attnrt {

/// Base pointers of Q, K, V, O: 16 bytes, the cp.async / TMA chunk.
static constexpr uint64_t kTensorAlignBytes = 16;
/// Strides must keep 16-byte chunks aligned: 8 elements of 2 bytes.
static constexpr int64_t kStrideMultiple = 8;
/// Sizes are passed to the kernel as i32.
static constexpr int64_t kMaxI32 = INT32_MAX;
/// CUDA's limit on gridDim.y and gridDim.z.
static constexpr int64_t kMaxGridYZ = 65535;
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

attnrt_status checkStrides(const TensorArg &t, bool usesTma) {
  if (t.strides[3] != 1)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "%s_stride_d (%s_strides[3]) = %lld but the head dimension must be contiguous "
                "(stride 1): make %s contiguous in its last dimension (e.g. .contiguous())",
                t.name, t.name, static_cast<long long>(t.strides[3]), t.display);
  for (int d = 0; d < 3; ++d) {
    if (t.extents[d] <= 1)
      continue; // the stride of a dimension of extent 1 is never used
    int64_t stride = t.strides[d];
    if (stride < 0)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "%s_stride_%s (%s_strides[%d]) = %lld is negative: attngen kernels need "
                  "non-negative strides; pass a tensor without flipped dimensions (e.g. "
                  ".contiguous())",
                  t.name, kDimNames[d], t.name, d, static_cast<long long>(stride));
    if (stride % kStrideMultiple != 0)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "%s_stride_%s (%s_strides[%d]) = %lld is not a multiple of 8 elements: attngen "
                  "kernels copy 16-byte chunks; pad the stride to a multiple of 8 elements",
                  t.name, kDimNames[d], t.name, d, static_cast<long long>(stride));
    if (usesTma && stride >= kMaxTmaStrideBytes / kElementBytes)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "%s_stride_%s (%s_strides[%d]) = %lld elements is 2^40 bytes or more, beyond "
                  "what a TMA descriptor can address: use a smaller stride",
                  t.name, kDimNames[d], t.name, d, static_cast<long long>(stride));
  }
  // The element farthest from the base must be addressable in 64 bits.
  int64_t last = t.extents[3];
  for (int d = 0; d < 3; ++d) {
    if (t.extents[d] <= 1)
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
  if (__builtin_mul_overflow(last, static_cast<int64_t>(kElementBytes), &bytes))
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

attnrt_status checkForwardArgs(const attnrt_kernel_info &info, const attnrt_forward_args &a) {
  // Kernel specialization: dtype and head dim are compiled in.
  if (a.dtype != ATTNRT_DTYPE_F16 && a.dtype != ATTNRT_DTYPE_BF16)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.dtype = %d is not a dtype: use ATTNRT_DTYPE_F16 (1) or ATTNRT_DTYPE_BF16 (2)",
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
  if (attnrt_status s = checkPositive("nk", a.nk, "attention over zero keys is undefined"))
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
                "args.nk = %lld exceeds the kernel's 32-bit limit of %lld rows: split the keys into "
                "chunks and combine the partial results with the LSE",
                static_cast<long long>(a.nk), static_cast<long long>(kMaxI32));
  if (a.num_heads > kMaxGridYZ)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.num_heads = %lld exceeds the CUDA grid limit gridDim.y <= 65535: split the "
                "heads into several calls",
                static_cast<long long>(a.num_heads));
  if (a.batch > kMaxGridYZ)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.batch = %lld exceeds the CUDA grid limit gridDim.z <= 65535: split the batch "
                "into several calls",
                static_cast<long long>(a.batch));

  // Nothing to launch: the tensors may be empty (NULL data pointers).
  if (isEmptyForward(a))
    return ATTNRT_OK;

  const TensorArg tensors[4] = {
      {"q", "Q", a.q, {a.batch, a.nq, a.num_heads, a.head_dim}, a.q_strides},
      {"k", "K", a.k, {a.batch, a.nk, a.num_kv_heads, a.head_dim}, a.k_strides},
      {"v", "V", a.v, {a.batch, a.nk, a.num_kv_heads, a.head_dim}, a.v_strides},
      {"o", "O", a.o, {a.batch, a.nq, a.num_heads, a.head_dim}, a.o_strides}};
  for (const TensorArg &t : tensors)
    if (attnrt_status s = checkPointer(t))
      return s;
  // ABI.md: every base pointer is 16-byte aligned, LSE's included.
  if (a.lse && reinterpret_cast<uintptr_t>(a.lse) % kTensorAlignBytes != 0)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.lse = %p is not 16-byte aligned: pass a contiguous float32 tensor of shape "
                "[B, H, Nq] whose data pointer is 16-byte aligned, or NULL",
                static_cast<void *>(a.lse));
  for (const TensorArg &t : tensors)
    if (attnrt_status s = checkStrides(t, info.uses_tma != 0))
      return s;

  // O must not alias K or V: other CTAs still read them while O is written.
  if (a.o == a.k || a.o == a.v)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.o is the same address as args.%s: the kernel would overwrite keys/values other "
                "blocks still read; pass a separate output tensor",
                a.o == a.k ? "k" : "v");
  return ATTNRT_OK;
}

void launchDims(const attnrt_kernel_info &info, const attnrt_forward_args &a, unsigned grid[3],
                unsigned block[3], unsigned &smemBytes) {
  if (isEmptyForward(a)) {
    grid[0] = grid[1] = grid[2] = 0;
  } else {
    grid[0] = static_cast<unsigned>((a.nq + info.block_m - 1) / info.block_m);
    grid[1] = static_cast<unsigned>(a.num_heads);
    grid[2] = static_cast<unsigned>(a.batch);
  }
  block[0] = static_cast<unsigned>(info.num_threads);
  block[1] = block[2] = 1;
  smemBytes = static_cast<unsigned>(info.smem_bytes);
}

} // namespace attnrt

extern "C" {

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
    return attnrt::checkForwardArgs(*info, *args);
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
    attnrt::launchDims(*info, *args, grid, block, *smem_bytes);
    return ATTNRT_OK;
  });
}

} // extern "C"
