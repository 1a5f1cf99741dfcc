//===- Quantize.cpp - load, check and launch the FP8 quantize kernel ------===//
#include "Driver.h"
#include "Error.h"

#include "attnrt/attnrt_quantize.h"

#include <cstdint>
#include <memory>
#include <string>

/// A loaded quantize kernel: its CUmodule and CUfunction in the context
/// that was current at load time.
struct attnrt_quantize_kernel {
  const attnrt::DriverApi *api = nullptr;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  std::string name;
  int headDim = 0, srcDtype = 0, numThreads = 0, smemBytes = 0;
};

namespace attnrt {
namespace {

/// Rows per CTA and per block scale (attn::kQuantizeBlockRows).
constexpr int64_t kBlockRows = 128;
/// Grid limits: gridDim.y and gridDim.z.
constexpr int64_t kMaxGridYz = 65535;

bool aligned(const void *p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

const char *dtypeName(int dtype) {
  return dtype == ATTNRT_DTYPE_F16 ? "f16" : dtype == ATTNRT_DTYPE_BF16 ? "bf16" : "unknown";
}

attnrt_status invalid(std::string message) {
  return failWith(ATTNRT_ERROR_INVALID_ARGUMENT, std::move(message));
}

attnrt_status checkArgs(int headDim, int srcDtype, const attnrt_quantize_args *a) {
  if (!a)
    return invalid("the quantize arguments are NULL");
  if (a->head_dim != headDim)
    return invalid(format("head_dim = %lld, but the quantize kernel was compiled for %d; compile one "
                          "for this head dim",
                          static_cast<long long>(a->head_dim), headDim));
  if (a->src_dtype != srcDtype)
    return invalid(format("src_dtype is %s, but the quantize kernel reads %s; compile one for it",
                          dtypeName(a->src_dtype), dtypeName(srcDtype)));
  if (a->batch < 0 || a->n < 0 || a->num_heads < 0)
    return invalid(format("negative size: batch %lld, n %lld, num_heads %lld",
                          static_cast<long long>(a->batch), static_cast<long long>(a->n),
                          static_cast<long long>(a->num_heads)));
  if (a->batch == 0 || a->n == 0 || a->num_heads == 0)
    return ATTNRT_OK;
  if (a->batch > kMaxGridYz || a->num_heads > kMaxGridYz || a->n > INT32_MAX - kBlockRows)
    return invalid(format("batch %lld, num_heads %lld or n %lld is too large: batch and heads go "
                          "up to %lld, n below 2^31; quantize in chunks",
                          static_cast<long long>(a->batch), static_cast<long long>(a->num_heads),
                          static_cast<long long>(a->n), static_cast<long long>(kMaxGridYz)));
  if (!a->src)
    return invalid("src is NULL: pass the bf16/f16 tensor to quantize");
  if (a->src_strides[3] != 1)
    return invalid(format("src's head-dim stride is %lld; it must be 1 (make the tensor's last dim "
                          "contiguous)",
                          static_cast<long long>(a->src_strides[3])));
  for (int i = 0; i < 3; ++i)
    if (a->src_strides[i] % 8 != 0)
      return invalid(format("src stride %d is %lld elements; the kernel reads 16-byte vectors, so "
                            "the batch, row and head strides must be multiples of 8 (copy the "
                            "tensor with .contiguous())",
                            i, static_cast<long long>(a->src_strides[i])));
  if (!aligned(a->src, 16))
    return invalid("src is not 16-byte aligned; pass an aligned tensor (a fresh allocation is)");
  if (a->cu_seqlens) {
    if (!aligned(a->cu_seqlens, 4))
      return invalid("cu_seqlens is not 4-byte aligned: pass the data pointer of a contiguous "
                     "int32 tensor");
    if (a->dst && a->dst_strides[3] != 1)
      return invalid("a packed (varlen) batch is quantized row-major: dst's head-dim stride must "
                     "be 1 (FP8 varlen attention reads v row-major and transposes it itself)");
  }
  bool given = a->descale_in != nullptr;
  if (given == (a->descale_out != nullptr))
    return invalid(given ? "descale_in and descale_out are both set: with descale_in the kernel "
                           "quantizes with the given scales and writes none; pass descale_out = "
                           "NULL"
                         : "descale_in and descale_out are both NULL: pass descale_out (one "
                           "scale per 128 rows, written) or descale_in (per batch and head, "
                           "read)");
  if (given && !a->dst)
    return invalid("dst is NULL with descale_in: there is nothing to compute; pass dst");
  if (!given && !aligned(a->descale_out, 4))
    return invalid("descale_out is not 4-byte aligned");
  if (given && !aligned(a->descale_in, 4))
    return invalid("descale_in is not 4-byte aligned");
  if (a->dst) {
    if (a->dst == a->src)
      return invalid("dst is src: the kernel cannot quantize in place; pass another tensor");
    if (!aligned(a->dst, 16))
      return invalid("dst is not 16-byte aligned; pass an aligned tensor");
    const int64_t *s = a->dst_strides;
    bool rowMajor = s[3] == 1, keyMajor = s[1] == 1 && s[3] != 1;
    if (!rowMajor && !keyMajor)
      return invalid(format("dst strides [%lld, %lld, %lld, %lld] are neither row-major (head-dim "
                            "stride 1) nor K-major (row stride 1, as FP8 attention's v)",
                            static_cast<long long>(s[0]), static_cast<long long>(s[1]),
                            static_cast<long long>(s[2]), static_cast<long long>(s[3])));
    int strided[3] = {0, rowMajor ? 1 : 3, 2};
    for (int i : strided)
      if (s[i] % 16 != 0)
        return invalid(format("dst stride %d is %lld bytes; the kernel stores 16-byte vectors, so "
                              "it must be a multiple of 16",
                              i, static_cast<long long>(s[i])));
    int64_t padded = (a->n + 15) / 16 * 16;
    if (keyMajor && s[3] < padded)
      return invalid(format("K-major dst has a head-dim stride of %lld bytes, fewer than n = %lld "
                            "rounded up to 16 (%lld): each (batch, head, column) needs its padded "
                            "row of keys ([B, H, D, round_up(n, 16)], as FP8 attention's v)",
                            static_cast<long long>(s[3]), static_cast<long long>(a->n),
                            static_cast<long long>(padded)));
  }
  return ATTNRT_OK;
}

attnrt_status load(const char *ptx, const char *kernel, int headDim, int srcDtype, int numThreads,
                   int smemBytes, attnrt_quantize_kernel **out) {
  if (!out)
    return invalid("out is NULL: pass the address of an attnrt_quantize_kernel pointer");
  *out = nullptr;
  if (!ptx || !kernel)
    return invalid("the PTX text or the kernel name is NULL");
  std::unique_ptr<attnrt_quantize_kernel> k(new attnrt_quantize_kernel());
  k->name = kernel;
  k->headDim = headDim;
  k->srcDtype = srcDtype;
  k->numThreads = numThreads;
  k->smemBytes = smemBytes;
  if (attnrt_status s = loadDriver(&k->api))
    return s;
  const DriverApi &api = *k->api;
  CUresult r = api.ctxGetCurrent(&k->context);
  if (r != CUDA_SUCCESS)
    return failCuda(api, r, "cuCtxGetCurrent", "the CUDA driver is in a bad state");
  if (!k->context)
    return fail(ATTNRT_ERROR_NO_DEVICE,
                "no CUDA context is current: initialize CUDA on this thread first (any CUDA "
                "call of the framework does, e.g. torch.cuda.init())");
  r = api.moduleLoadDataEx(&k->module, ptx, 0, nullptr, nullptr);
  if (r != CUDA_SUCCESS)
    return failCuda(api, r, format("cuModuleLoadDataEx of '%s'", kernel).c_str(),
                    "the quantize kernel needs an sm_90 GPU (FP8)");
  r = api.moduleGetFunction(&k->function, k->module, kernel);
  if (r == CUDA_SUCCESS)
    r = api.funcSetAttribute(k->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             smemBytes);
  if (r != CUDA_SUCCESS) {
    api.moduleUnload(k->module);
    return failCuda(api, r, "cuModuleGetFunction or cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                    "the PTX has no entry of that name, or the device refused its shared memory");
  }
  *out = k.release();
  return ATTNRT_OK;
}

attnrt_status launch(const attnrt_quantize_kernel *k, const attnrt_quantize_args *a, void *stream) {
  if (!k)
    return invalid("the quantize kernel is NULL: load one first");
  if (attnrt_status s = checkArgs(k->headDim, k->srcDtype, a))
    return s;
  if (a->batch == 0 || a->n == 0 || a->num_heads == 0)
    return ATTNRT_OK;
  const void *src = a->src;
  void *dst = a->dst;
  float *descaleOut = a->descale_out;
  const float *descaleIn = a->descale_in;
  // A packed batch's sequences start at their cu_seqlens rows: no batch
  // stride.
  const bool packed = a->cu_seqlens != nullptr;
  int64_t srcStrides[3] = {packed ? 0 : a->src_strides[0], a->src_strides[1], a->src_strides[2]};
  int64_t dstStrides[4] = {packed ? 0 : a->dst_strides[0], a->dst_strides[1], a->dst_strides[2],
                           a->dst_strides[3]};
  const int32_t *cuSeqlens = a->cu_seqlens;
  int64_t descaleStrides[2] = {a->descale_in_strides[0], a->descale_in_strides[1]};
  int32_t n = static_cast<int32_t>(a->n);
  int32_t keyMajor = a->dst && a->dst_strides[3] != 1 ? 1 : 0;
  void *params[] = {&src,           &dst,           &descaleOut,        &descaleIn,
                    &srcStrides[0], &srcStrides[1], &srcStrides[2],     &dstStrides[0],
                    &dstStrides[1], &dstStrides[2], &dstStrides[3],     &descaleStrides[0],
                    &descaleStrides[1], &n,         &keyMajor,          &cuSeqlens};
  unsigned blocks = static_cast<unsigned>((a->n + kBlockRows - 1) / kBlockRows);
  const DriverApi &api = *k->api;
  CUresult r = api.launchKernel(k->function, blocks, static_cast<unsigned>(a->num_heads),
                                static_cast<unsigned>(a->batch), k->numThreads, 1, 1,
                                k->smemBytes, static_cast<CUstream>(stream), params, nullptr);
  if (r != CUDA_SUCCESS)
    return failCuda(api, r, format("cuLaunchKernel of '%s'", k->name.c_str()).c_str(),
                    "check the stream belongs to the context the kernel was loaded in");
  return ATTNRT_OK;
}

} // namespace
} // namespace attnrt

extern "C" {

attnrt_status attnrt_quantize_load(const char *ptx, const char *kernel, int head_dim,
                                   int src_dtype, int num_threads, int smem_bytes,
                                   attnrt_quantize_kernel **out) {
  return attnrt::guardApi("attnrt_quantize_load", [&] {
    return attnrt::load(ptx, kernel, head_dim, src_dtype, num_threads, smem_bytes, out);
  });
}

attnrt_status attnrt_quantize_unload(attnrt_quantize_kernel *kernel) {
  return attnrt::guardApi("attnrt_quantize_unload", [&] {
    if (kernel && kernel->module)
      kernel->api->moduleUnload(kernel->module);
    delete kernel;
    return ATTNRT_OK;
  });
}

attnrt_status attnrt_check_quantize_args(int head_dim, int src_dtype,
                                         const attnrt_quantize_args *args) {
  return attnrt::guardApi("attnrt_check_quantize_args",
                          [&] { return attnrt::checkArgs(head_dim, src_dtype, args); });
}

attnrt_status attnrt_quantize(const attnrt_quantize_kernel *kernel,
                              const attnrt_quantize_args *args, void *stream) {
  return attnrt::guardApi("attnrt_quantize",
                          [&] { return attnrt::launch(kernel, args, stream); });
}

} // extern "C"
