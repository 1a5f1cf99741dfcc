//===- Launch.cpp - Parameter building and kernel launch --------------------===//
//
// attnrt_forward: check the arguments, check the pointers with the driver,
// then bind each kernel parameter the metadata lists (docs/ABI.md "Kernel
// parameters") by its kind and tensor, never by position:
//
//   tensor_map  128-byte CUtensorMap of q, k or v, by value (sm_90a; rank 3
//               over a varlen kernel's packed tensors)
//   pointer     u64 device address of q, k, v, o, lse (lse may be 0),
//               cu_seqlens_q or cu_seqlens_k
//   stride      i64 element stride b, n or h of q, k, v or o
//   size        i32 batch, nq, nk, num_heads, num_kv_heads or max_seqlen_q
//
// and cuLaunchKernel with the grid of the kernel's grid rule.
//
//===----------------------------------------------------------------------===//

#include "Error.h"
#include "KvCache.h"
#include "Metadata.h"
#include "Module.h"
#include "Validate.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <vector>
#include <cinttypes>
#include <cstdint>
#include <string>

namespace attnrt {

/// Whether attnrt_forward checks each pointer with cuPointerGetAttributes.
static std::atomic<bool> pointerChecks{true};

/// Whether attnrt_forward reads back and checks a varlen call's cu_seqlens
/// (default: ATTNRT_CHECK_SEQLENS=1 in the environment).
static std::atomic<bool> &seqlenChecks() {
  static std::atomic<bool> enabled{[] {
    const char *env = std::getenv("ATTNRT_CHECK_SEQLENS");
    return env && std::strcmp(env, "1") == 0;
  }()};
  return enabled;
}

namespace {

/// Rank of a TMA descriptor: {D, N, H, B}, or {D, total, H} for a packed
/// (varlen) tensor.
constexpr unsigned kTmaRank = 4;
constexpr unsigned kPackedTmaRank = 3;

/// Checks that `pointer` is device memory on the module's device.
attnrt_status checkDevicePointer(const attnrt_module &m, const char *name, const void *pointer) {
  const DriverApi &api = *m.api;
  unsigned memoryType = 0;
  int deviceOrdinal = -1;
  unsigned isManaged = 0;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                      CU_POINTER_ATTRIBUTE_IS_MANAGED};
  void *values[] = {&memoryType, &deviceOrdinal, &isManaged};
  CUresult r = api.pointerGetAttributes(3, attributes, values,
                                        static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pointer)));
  if (r != CUDA_SUCCESS)
    return failCuda(api, r, format("cuPointerGetAttributes(args.%s)", name).c_str(),
                    "pass a device pointer (tensor.data_ptr() of a CUDA tensor)");
  if (memoryType == CU_MEMORYTYPE_HOST)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.%s = %p is (pinned) host memory: attngen kernels read and write device memory; "
                "move the tensor to the GPU (e.g. tensor.cuda())",
                name, pointer);
  if (memoryType != CU_MEMORYTYPE_DEVICE && memoryType != CU_MEMORYTYPE_UNIFIED)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.%s = %p is not memory CUDA knows (a host pointer?): pass the device address of "
                "a CUDA tensor (e.g. tensor.cuda().data_ptr())",
                name, pointer);
  if (!isManaged && memoryType == CU_MEMORYTYPE_DEVICE && deviceOrdinal != m.info.device)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.%s = %p lives on device %d but kernel '%s' was loaded on device %d: move the "
                "tensor, or load the module with device %d's context current",
                name, pointer, deviceOrdinal, m.info.kernel, m.info.device, deviceOrdinal);
  return ATTNRT_OK;
}

/// Encodes the TMA descriptor of one input per docs/ABI.md:
/// globalDim = {D, N, H, B}, globalStrides = {stride_n, stride_h, stride_b}
/// in bytes, box = {cols, rows, 1, 1}, the swizzle of a box row (cols * 2
/// bytes: 32, 64 or 128), OOB rows and columns -> 0.
///
///   global tensor (innermost first)        box in shared memory
///   d: 0..D-1  (contiguous)                 box columns (one swizzle panel;
///                                           columns >= D read as 0)
///   n: 0..N-1  (stride_n)                   rows (swizzled)
///   h: 0..H-1  (stride_h)                   1
///   b: 0..B-1  (stride_b)                   1
///
/// A packed (varlen) tensor drops the batch: rank 3, {D, total, H} (a
/// varlen kernel's paged K and V keep it: {D, page_size, Hkv, num_blocks}).
attnrt_status encodeTensorMap(const attnrt_module &m, const char *name, CUtensorMap &map,
                              const void *pointer, int64_t cols, int64_t rows, int64_t heads,
                              int64_t batch, const int64_t strides[4], int boxCols, int boxRows,
                              CUtensorMapDataType dataType, int elementBytes, bool packedRows) {
  const unsigned rank = packedRows ? kPackedTmaRank : kTmaRank;
  const int64_t dims[kTmaRank] = {cols, rows, heads, packedRows ? 1 : batch};
  cuuint64_t globalDim[kTmaRank];
  for (unsigned i = 0; i < kTmaRank; ++i)
    globalDim[i] = static_cast<cuuint64_t>(dims[i]);
  // Byte strides of dims 1..3 (n, h, b). A dimension of extent 1 is never
  // stepped over, so its stride is free: use the packed one, which the
  // driver always accepts, instead of whatever the caller's view had.
  const int64_t callerStrides[3] = {strides[1], strides[2], strides[0]};
  cuuint64_t globalStrides[kTmaRank - 1];
  int64_t packed = cols * elementBytes;
  for (unsigned i = 0; i < kTmaRank - 1; ++i) {
    int64_t extent = dims[i + 1];
    int64_t bytes = callerStrides[i] * elementBytes;
    globalStrides[i] = static_cast<cuuint64_t>(extent > 1 ? bytes : packed);
    packed *= extent;
  }
  const cuuint32_t boxDim[kTmaRank] = {static_cast<cuuint32_t>(boxCols),
                                       static_cast<cuuint32_t>(boxRows), 1, 1};
  const cuuint32_t elementStrides[kTmaRank] = {1, 1, 1, 1};
  // parseMetadata admits only box rows of one swizzle span.
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  if (tmaSwizzleSpanOf(boxCols, elementBytes) == 64)
    swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
  else if (tmaSwizzleSpanOf(boxCols, elementBytes) == 32)
    swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
  CUresult r = m.api->tensorMapEncodeTiled(
      &map, dataType, rank, const_cast<void *>(pointer), globalDim, globalStrides, boxDim,
      elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return fail(ATTNRT_ERROR_CUDA,
                "cuTensorMapEncodeTiled for %s failed with %s: address %p, globalDim = {%" PRIu64
                ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 "}, globalStrides = {%" PRIu64 ", %" PRIu64
                ", %" PRIu64 "} bytes, boxDim = {%u, %u, 1, 1}; strides must be multiples of 16 "
                "bytes below 2^40 and the address 16-byte aligned",
                name, describe(*m.api, r).c_str(), pointer, static_cast<uint64_t>(globalDim[0]),
                static_cast<uint64_t>(globalDim[1]), static_cast<uint64_t>(globalDim[2]),
                static_cast<uint64_t>(globalDim[3]), static_cast<uint64_t>(globalStrides[0]),
                static_cast<uint64_t>(globalStrides[1]), static_cast<uint64_t>(globalStrides[2]),
                boxDim[0], boxDim[1]);
  return ATTNRT_OK;
}

/// The descriptor of an FP8 kernel's K-major V ([B, N, Hkv, D] with the N
/// stride 1): dims {N, D, Hkv, B}, byte strides of D, Hkv and B, a box of
/// one 128-byte panel of keys by the D head-dim rows.
attnrt_status encodeKeyMajorTensorMap(const attnrt_module &m, CUtensorMap &map,
                                      const void *pointer, int64_t keys, int64_t headDim,
                                      int64_t heads, int64_t batch, const int64_t strides[4],
                                      int boxCols, int boxRows) {
  const cuuint64_t globalDim[kTmaRank] = {
      static_cast<cuuint64_t>(keys), static_cast<cuuint64_t>(headDim),
      static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(batch)};
  // Dims of extent 1 are never stepped over: any stride the driver takes.
  const int64_t callerStrides[3] = {strides[3], strides[2], strides[0]};
  auto align16 = [](int64_t bytes) { return (bytes + 15) / 16 * 16; };
  cuuint64_t globalStrides[kTmaRank - 1];
  int64_t packed = align16(keys);
  for (unsigned i = 0; i < kTmaRank - 1; ++i) {
    int64_t extent = static_cast<int64_t>(globalDim[i + 1]);
    globalStrides[i] = static_cast<cuuint64_t>(extent > 1 ? callerStrides[i] : packed);
    packed *= extent;
  }
  const cuuint32_t boxDim[kTmaRank] = {static_cast<cuuint32_t>(boxCols),
                                       static_cast<cuuint32_t>(boxRows), 1, 1};
  const cuuint32_t elementStrides[kTmaRank] = {1, 1, 1, 1};
  CUtensorMapSwizzle swizzle = tmaSwizzleSpanOf(boxCols, 1) == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                               : tmaSwizzleSpanOf(boxCols, 1) == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                                                    : CU_TENSOR_MAP_SWIZZLE_32B;
  CUresult r = m.api->tensorMapEncodeTiled(
      &map, CU_TENSOR_MAP_DATA_TYPE_UINT8, kTmaRank, const_cast<void *>(pointer), globalDim,
      globalStrides, boxDim, elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return fail(ATTNRT_ERROR_CUDA,
                "cuTensorMapEncodeTiled for the K-major V failed with %s: address %p, globalDim = "
                "{%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 "}, globalStrides = {%" PRIu64
                ", %" PRIu64 ", %" PRIu64 "} bytes; v's head-dim stride must be a multiple of 16 "
                "bytes (pad Nk to a multiple of 16) and its address 16-byte aligned",
                describe(*m.api, r).c_str(), pointer, static_cast<uint64_t>(globalDim[0]),
                static_cast<uint64_t>(globalDim[1]), static_cast<uint64_t>(globalDim[2]),
                static_cast<uint64_t>(globalDim[3]), static_cast<uint64_t>(globalStrides[0]),
                static_cast<uint64_t>(globalStrides[1]), static_cast<uint64_t>(globalStrides[2]));
  return ATTNRT_OK;
}

/// With seqlen checks on, copies a varlen call's cu_seqlens to the host in
/// stream order and checks them (attnrt_check_cu_seqlens). A capturing
/// stream cannot be read back: its launches are not checked.
attnrt_status checkDeviceCuSeqlens(const attnrt_module &m, const attnrt_forward_args &a,
                                   CUstream stream) {
  const DriverApi &api = *m.api;
  if (!api.memcpyDtoHAsync || !api.streamSynchronize || !api.streamIsCapturing)
    return fail(ATTNRT_ERROR_NO_DRIVER,
                "the CUDA driver %s lacks cuMemcpyDtoHAsync, cuStreamSynchronize or "
                "cuStreamIsCapturing, which the cu_seqlens checks need: update the driver or turn "
                "the checks off (attnrt_set_seqlen_checks(0))",
                api.path.c_str());
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (CUresult r = api.streamIsCapturing(stream, &capture); r != CUDA_SUCCESS)
    return failCuda(api, r, "cuStreamIsCapturing", "pass a stream of the module's context");
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE)
    return ATTNRT_OK;
  std::vector<int32_t> cuQ(static_cast<size_t>(a.batch) + 1), cuK(cuQ.size());
  size_t bytes = cuQ.size() * sizeof(int32_t);
  for (auto [host, device, name] :
       {std::tuple(cuQ.data(), a.cu_seqlens_q, "cu_seqlens_q"),
        std::tuple(cuK.data(), a.cu_seqlens_k, "cu_seqlens_k")})
    if (CUresult r = api.memcpyDtoHAsync(host,
                                         static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(device)),
                                         bytes, stream);
        r != CUDA_SUCCESS)
      return failCuda(api, r, format("copying args.%s (%zu bytes) to the host", name, bytes).c_str(),
                      "pass a device vector of batch + 1 int32 values");
  if (CUresult r = api.streamSynchronize(stream); r != CUDA_SUCCESS)
    return failCuda(api, r, "cuStreamSynchronize after copying cu_seqlens",
                    "an earlier kernel on the stream failed");
  return checkCuSeqlens(a, cuQ.data(), cuK.data());
}

attnrt_status forward(attnrt_module *m, const attnrt_forward_args *given, void *stream) {
  if (!m)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "attnrt_forward got module = NULL: load a kernel with attnrt_module_load first");
  if (!given)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "attnrt_forward got args = NULL: pass the address of a filled attnrt_forward_args");
  // A split-KV kernel's num_splits = 0 is the runtime's choice, made here
  // exactly as attnrt_kvcache_plan makes it.
  attnrt_forward_args resolved;
  if (attnrt_status s = resolveSplits(m->info, *given, resolved))
    return s;
  const attnrt_forward_args *a = &resolved;
  if (attnrt_status s = checkForwardArgs(m->info, *a))
    return s;
  if (isEmptyForward(*a))
    return ATTNRT_OK;

  const DriverApi &api = *m->api;
  ScopedContext scope(api, m->context);
  if (attnrt_status s = scope.status())
    return s;

  if (pointerChecks.load(std::memory_order_relaxed)) {
    const struct {
      const char *name;
      const void *pointer;
    } pointers[] = {{"q", a->q},
                    {"k", a->k},
                    {"v", a->v},
                    {"o", a->o},
                    {"lse", a->lse},
                    {"cu_seqlens_q", a->cu_seqlens_q},
                    {"cu_seqlens_k", a->cu_seqlens_k},
                    {"cache_seqlens", a->cache_seqlens},
                    {"block_table", a->block_table},
                    {"workspace", a->workspace},
                    {"dout", a->dout},
                    {"delta", a->delta},
                    {"dq", a->dq},
                    {"dk", a->dk},
                    {"dv", a->dv},
                    {"dq_accum", a->dq_accum}};
    for (const auto &p : pointers)
      if (p.pointer)
        if (attnrt_status s = checkDevicePointer(*m, p.name, p.pointer))
          return s;
  }
  if (m->info.varlen && seqlenChecks().load(std::memory_order_relaxed))
    if (attnrt_status s = checkDeviceCuSeqlens(*m, *a, static_cast<CUstream>(stream)))
      return s;

  // The split-KV workspace: partial outputs, then partial log-sum-exps
  // (docs/ABI.md "KV cache and split-KV"), addressed as contiguous
  // [S * B, Nq, H, D] and [S * B, H, Nq] f32 tensors.
  WorkspaceLayout workspace;
  const int64_t dv = valueHeadDimOf(m->info, *a);
  if (attnrt_status s = workspaceLayout(*a, a->num_splits, dv, workspace))
    return s;
  void *oPartial = workspace.bytes ? a->workspace : nullptr;
  void *lsePartial =
      workspace.bytes ? static_cast<char *>(a->workspace) + workspace.lseOffset : nullptr;
  const int64_t oPartialStrides[4] = {a->nq * a->num_heads * dv, a->num_heads * dv, dv, 1};
  const int64_t blockTableStrides[4] = {a->block_table_stride, 0, 0, 0};
  const int64_t alibiStrides[4] = {a->alibi_slopes_stride, 0, 0, 0};
  // FP8's descales, [B, Hkv]: a batch and a head stride (dims b and h).
  const int64_t qDescaleStrides[4] = {a->q_descale_strides[0], 0, a->q_descale_strides[1], 0};
  const int64_t kDescaleStrides[4] = {a->k_descale_strides[0], 0, a->k_descale_strides[1], 0};
  const int64_t vDescaleStrides[4] = {a->v_descale_strides[0], 0, a->v_descale_strides[1], 0};
  // The dQ accumulator is contiguous, shaped as dq: [B, Nq, H, D] (packed:
  // [total_q, H, D], whose row stride is the same).
  const int64_t dqAccumStrides[4] = {a->nq * a->num_heads * a->head_dim,
                                     a->num_heads * a->head_dim, a->head_dim, 1};

  // Parameter values, one slot per parameter; `params` points at each.
  const std::vector<KernelParam> &list = m->abi.params;
  std::vector<CUtensorMap> maps(list.size());
  std::vector<uint64_t> words(list.size());
  std::vector<void *> params(list.size());
  // An FP8 kernel's Q, K and V are bytes to the TMA; its O is bf16.
  const bool fp8 = m->info.dtype == ATTNRT_DTYPE_E4M3;
  CUtensorMapDataType dataType = m->info.dtype == ATTNRT_DTYPE_F16
                                     ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                     : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const void *pointers[kNumTensorRoles] = {a->q,           a->k,           a->v,
                                           a->o,           a->lse,         a->cu_seqlens_q,
                                           a->cu_seqlens_k, a->cache_seqlens, a->block_table,
                                           oPartial,       lsePartial,     a->dout,
                                           a->delta,       a->dq,          a->dk,
                                           a->dv,          a->alibi_slopes,
                                           a->dq_accum,    a->q_descale,   a->k_descale,
                                           a->v_descale};
  const int64_t *strides[kNumTensorRoles] = {a->q_strides, a->k_strides, a->v_strides,
                                             a->o_strides, nullptr,      nullptr,
                                             nullptr,      nullptr,      blockTableStrides,
                                             oPartialStrides, nullptr,   a->dout_strides,
                                             nullptr,      a->dq_strides, a->dk_strides,
                                             a->dv_strides, alibiStrides,
                                             dqAccumStrides, qDescaleStrides,
                                             kDescaleStrides, vDescaleStrides};
  // A paged cache's K and V are [num_blocks, page_size, Hkv, D].
  bool paged = m->info.page_size > 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const KernelParam &p = list[i];
    int t = static_cast<int>(p.tensor);
    switch (p.kind) {
    case ParamKind::TensorMap: {
      bool query = p.tensor == TensorRole::Q || p.tensor == TensorRole::O ||
                   p.tensor == TensorRole::Dout;
      const char *names[kNumTensorRoles] = {"Q", "K", "V", "O"};
      names[static_cast<int>(TensorRole::Dout)] = "dO";
      names[static_cast<int>(TensorRole::DqAccum)] = "dQ's accumulator";
      // The dQ accumulator: f32, shaped as q (the one-kernel backward
      // reduces into it with the TMA).
      bool accum = p.tensor == TensorRole::DqAccum;
      query = query || accum;
      int64_t rows = query ? a->nq : paged ? a->page_size : a->nk;
      int64_t batch = query || !paged ? a->batch : a->num_blocks;
      // V, O and dO have the kernel's value head dim (head_dim_v, 0:
      // head_dim).
      bool value = p.tensor == TensorRole::V || p.tensor == TensorRole::O ||
                   p.tensor == TensorRole::Dout;
      int64_t cols = value && m->info.head_dim_v ? m->info.head_dim_v : a->head_dim;
      bool byteInput = fp8 && p.tensor != TensorRole::O;
      CUtensorMapDataType type = accum       ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                 : byteInput ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                             : dataType;
      // An FP8 kernel's V is K-major: its descriptor runs along the keys
      // first, then the head dim (the kernel copies it in transposed).
      // Stored row-major (v_row_major), it is loaded as K is and
      // transposed in shared memory.
      if (fp8 && p.tensor == TensorRole::V && !m->info.v_row_major) {
        if (attnrt_status s = encodeKeyMajorTensorMap(
                *m, maps[i], pointers[t], rows, cols, a->num_kv_heads, batch, strides[t],
                p.boxCols, p.boxRows))
          return s;
        params[i] = &maps[i];
        continue;
      }
      bool packed = m->info.varlen && (query || !paged);
      if (attnrt_status s = encodeTensorMap(
              *m, names[t], maps[i], pointers[t], cols, rows,
              query ? a->num_heads : a->num_kv_heads,
              batch, strides[t], p.boxCols, p.boxRows, type,
              tmaElementBytes(p.tensor, m->info.dtype), packed))
        return s;
      params[i] = &maps[i];
      continue;
    }
    case ParamKind::Pointer:
      words[i] = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(pointers[t]));
      break;
    case ParamKind::Stride:
      words[i] = static_cast<uint64_t>(strides[t][p.dim]);
      break;
    case ParamKind::Size: {
      // An i32 in the low half of its slot (little-endian).
      uint32_t value = static_cast<uint32_t>(sizeValue(*a, p.size));
      std::memcpy(&words[i], &value, sizeof(value));
      break;
    }
    }
    params[i] = &words[i];
  }

  unsigned grid[3], block[3], smemBytes;
  if (attnrt_status s = launchDims(m->info, *a, grid, block, smemBytes))
    return s;
  CUresult r = api.launchKernel(m->function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                smemBytes, static_cast<CUstream>(stream), params.data(), nullptr);
  if (r != CUDA_SUCCESS) {
    std::string what = format("cuLaunchKernel of '%s' (grid %u x %u x %u, block %u, %u bytes of "
                              "shared memory)",
                              m->info.kernel, grid[0], grid[1], grid[2], block[0], smemBytes);
    const char *hint = "check the stream belongs to the module's context";
    if (r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED ||
        r == CUDA_ERROR_ILLEGAL_INSTRUCTION || r == CUDA_ERROR_MISALIGNED_ADDRESS)
      hint = "an earlier kernel faulted and the CUDA context is unusable; restart the process and "
             "run the faulting call alone (compute-sanitizer helps)";
    else if (r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
      hint = "the kernel needs more registers or shared memory than the device has per block";
    return failCuda(api, r, what.c_str(), hint);
  }
  return ATTNRT_OK;
}

} // namespace

} // namespace attnrt

extern "C" {

attnrt_status attnrt_forward(attnrt_module *module, const attnrt_forward_args *args, void *stream) {
  return attnrt::guardApi("attnrt_forward", [&] { return attnrt::forward(module, args, stream); });
}

void attnrt_set_pointer_checks(int enabled) {
  attnrt::pointerChecks.store(enabled != 0, std::memory_order_relaxed);
}

void attnrt_set_seqlen_checks(int enabled) {
  attnrt::seqlenChecks().store(enabled != 0, std::memory_order_relaxed);
}

} // extern "C"
