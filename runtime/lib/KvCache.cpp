//===- KvCache.cpp - KV-cache and split-KV calls ----------------------------===//
//
// The split plan (how many CTAs share a sequence's keys), the workspace the
// partial results need, the checks of the KV-cache fields of a call, the
// two-kernel split-KV call and the opt-in check of the device-resident
// lengths and block table (docs/ABI.md "KV cache and split-KV").
//
//===----------------------------------------------------------------------===//

#include "KvCache.h"

#include "Error.h"
#include "Metadata.h"
#include "Module.h"
#include "Validate.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace attnrt {

namespace {

/// Tiles below this share of the GPU's CTA slots leave it idle enough to
/// split the keys (FlashAttention's flash-decoding uses the same 80%).
constexpr double kFullGpuShare = 0.8;
/// A split count is as good as the best when its wave efficiency is within
/// this factor: fewer splits mean less combine work and longer key runs.
constexpr double kEfficiencyTolerance = 0.85;
/// Without a loaded module's occupancy (a parsed info): dynamic shared
/// memory above which one CTA fills an SM (half the 227 KiB an H100/H200 SM
/// has, or two A100 CTAs).
constexpr int64_t kOneCtaPerSmBytes = 113 * 1024;
/// The block table and cache_seqlens hold int32.
constexpr uint64_t kInt32Align = 4;
/// The workspace holds f32 in 16-byte rows (vector loads and stores).
constexpr uint64_t kWorkspaceAlign = 16;
constexpr int64_t kMaxI32 = INT32_MAX;

size_t alignUp(size_t value, size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/// Rows of one packed head: query positions per tile.
int64_t positionsPerTile(const attnrt_kernel_info &info) {
  return info.block_m / (info.head_pack > 0 ? info.head_pack : 1);
}

/// The split count the runtime chooses when the call leaves it open.
int64_t chooseSplits(const attnrt_kernel_info &info, const attnrt_forward_args &a) {
  int64_t positions = positionsPerTile(info);
  int64_t tiles = (a.nq + positions - 1) / positions * (a.num_heads / info.head_pack) * a.batch;
  int64_t ctasPerSm = info.max_ctas_per_sm > 0 ? info.max_ctas_per_sm
                      : info.smem_bytes > kOneCtaPerSmBytes ? 1
                                                            : 2;
  int64_t slots = static_cast<int64_t>(info.num_sms) * ctasPerSm;
  int64_t blocks = (a.nk + info.block_n - 1) / info.block_n;
  if (tiles <= 0 || blocks <= 1 || tiles >= kFullGpuShare * slots)
    return 1;
  auto efficiency = [&](int64_t splits) {
    double waves = static_cast<double>(tiles * splits) / slots;
    return waves / std::ceil(waves);
  };
  // Only split counts that every split uses: the kernel gives each split
  // ceil(blocks / S) blocks, so S is worth trying only where that share
  // shrinks (S = ceil(blocks / share) for a share of blocks).
  std::vector<int64_t> candidates;
  for (int64_t share = blocks; share >= 1; --share) {
    int64_t splits = (blocks + share - 1) / share;
    if (splits > ATTNRT_MAX_SPLITS)
      break;
    if (candidates.empty() || candidates.back() != splits)
      candidates.push_back(splits);
  }
  double best = 0;
  for (int64_t splits : candidates)
    best = std::max(best, efficiency(splits));
  for (int64_t splits : candidates)
    if (efficiency(splits) >= kEfficiencyTolerance * best)
      return splits;
  return 1;
}

/// Non-negative count that fits the kernel's i32 parameters.
attnrt_status checkI32Count(const char *name, int64_t value, int64_t lowest, const char *why) {
  if (value < lowest || value > kMaxI32)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT, "args.%s = %lld is out of range: it must be %lld to %lld (%s)",
                name, static_cast<long long>(value), static_cast<long long>(lowest),
                static_cast<long long>(kMaxI32), why);
  return ATTNRT_OK;
}

attnrt_status checkAligned(const char *name, const void *pointer, uint64_t alignment, const char *what) {
  if (reinterpret_cast<uintptr_t>(pointer) % alignment != 0)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.%s = %p is not %llu-byte aligned: pass the data pointer of a %s", name,
                pointer, static_cast<unsigned long long>(alignment), what);
  return ATTNRT_OK;
}

/// The paged cache's fields: a block table the kernel's pages fit.
attnrt_status checkPagedArgs(const attnrt_kernel_info &info, const attnrt_forward_args &a) {
  if (!a.block_table)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.block_table is NULL but kernel '%s' reads a paged KV cache: pass the "
                "[batch, max_blocks] int32 block table (flash_attn's block_table)",
                info.kernel);
  if (attnrt_status s = checkAligned("block_table", a.block_table, kInt32Align, "contiguous int32 tensor"))
    return s;
  if (attnrt_status s = checkI32Count("max_blocks", a.max_blocks, 1, "the block table's columns"))
    return s;
  if (attnrt_status s = checkI32Count("num_blocks", a.num_blocks, 1, "the pages of k_cache and v_cache"))
    return s;
  if (a.batch > 1 && (a.block_table_stride < a.max_blocks || a.block_table_stride > kMaxI32))
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.block_table_stride = %lld is invalid for %lld columns: rows of the block "
                "table must not overlap (stride >= max_blocks, in int32 elements, below 2^31)",
                static_cast<long long>(a.block_table_stride), static_cast<long long>(a.max_blocks));
  if (a.nk != a.max_blocks * a.page_size)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.nk = %lld but a paged cache of max_blocks = %lld pages of %lld rows holds "
                "%lld keys per sequence: set nk = max_blocks * page_size",
                static_cast<long long>(a.nk), static_cast<long long>(a.max_blocks),
                static_cast<long long>(a.page_size),
                static_cast<long long>(a.max_blocks * a.page_size));
  return ATTNRT_OK;
}

/// The splits and the workspace they need.
attnrt_status checkSplitArgs(const attnrt_kernel_info &info, const attnrt_forward_args &a) {
  bool combine = info.kind == ATTNRT_KERNEL_COMBINE;
  if (a.num_splits < 1 || a.num_splits > ATTNRT_MAX_SPLITS)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.num_splits = %lld is out of range: use 0 (the runtime chooses), 1 (no split) "
                "or up to %d splits",
                static_cast<long long>(a.num_splits), ATTNRT_MAX_SPLITS);
  if (a.num_splits > 1 && !info.split_kv && !combine)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.num_splits = %lld but kernel '%s' does not split the keys (metadata "
                "\"split_kv\": false): pass 0 or 1, or use a split-KV kernel (attngen --split-kv)",
                static_cast<long long>(a.num_splits), info.kernel);
  if (a.num_splits == 1 && !combine)
    return ATTNRT_OK;
  WorkspaceLayout layout;
  if (attnrt_status s = workspaceLayout(a, a.num_splits, valueHeadDimOf(info, a), layout))
    return s;
  if (!a.workspace)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.workspace is NULL but %lld splits need %zu bytes for their partial results: "
                "allocate that much device memory (attnrt_kvcache_plan says how much) and pass it "
                "with workspace_bytes",
                static_cast<long long>(a.num_splits), layout.bytes);
  if (attnrt_status s = checkAligned("workspace", a.workspace, kWorkspaceAlign, "device allocation"))
    return s;
  if (a.workspace_bytes < layout.bytes)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.workspace_bytes = %zu is too small: %lld splits of batch %lld, nq %lld, "
                "%lld heads and value head dim %lld need %zu bytes (attnrt_kvcache_plan)",
                a.workspace_bytes, static_cast<long long>(a.num_splits),
                static_cast<long long>(a.batch), static_cast<long long>(a.nq),
                static_cast<long long>(a.num_heads),
                static_cast<long long>(valueHeadDimOf(info, a)), layout.bytes);
  return ATTNRT_OK;
}

} // namespace

bool usesKvCacheArgs(const attnrt_kernel_info &info) {
  return info.kv_cache || info.kind == ATTNRT_KERNEL_COMBINE;
}

attnrt_status resolveSplits(const attnrt_kernel_info &info, const attnrt_forward_args &a,
                            attnrt_forward_args &resolved) {
  resolved = a;
  if (!usesKvCacheArgs(info))
    return ATTNRT_OK;
  if (a.num_splits != 0)
    return ATTNRT_OK;
  if (info.kind == ATTNRT_KERNEL_COMBINE)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.num_splits = 0 for combine kernel '%s': pass the split count the split-KV "
                "kernel ran with (attnrt_kvcache_plan on its info), or use attnrt_forward_kvcache",
                info.kernel);
  if (!info.split_kv) {
    resolved.num_splits = 1;
    return ATTNRT_OK;
  }
  if (info.num_sms < 1)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "kernel '%s' chooses its splits from the device's SM count, but this "
                "attnrt_kernel_info has no device: pass the info of a loaded module "
                "(attnrt_module_info) or set args.num_splits",
                info.kernel);
  resolved.num_splits = isEmptyForward(a) ? 1 : chooseSplits(info, a);
  return ATTNRT_OK;
}

attnrt_status workspaceLayout(const attnrt_forward_args &a, int64_t splits, int64_t valueHeadDim,
                              WorkspaceLayout &layout) {
  layout = WorkspaceLayout();
  if (splits <= 1 || isEmptyForward(a))
    return ATTNRT_OK;
  // [S * B, Nq, H, Dv] f32 outputs, then [S * B, H, Nq] f32 log-sum-exps.
  int64_t rows, outputs, lses;
  if (__builtin_mul_overflow(splits, a.batch, &rows) ||
      __builtin_mul_overflow(rows, a.nq, &rows) || __builtin_mul_overflow(rows, a.num_heads, &rows) ||
      __builtin_mul_overflow(rows, valueHeadDim * 4, &outputs) ||
      __builtin_mul_overflow(rows, 4, &lses))
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "the split-KV workspace of %lld splits overflows 64 bits with these sizes: use "
                "fewer splits",
                static_cast<long long>(splits));
  layout.lseOffset = alignUp(static_cast<size_t>(outputs), kWorkspaceAlign);
  layout.bytes = layout.lseOffset + alignUp(static_cast<size_t>(lses), kWorkspaceAlign);
  return ATTNRT_OK;
}

attnrt_status checkKvCacheArgs(const attnrt_kernel_info &info, const attnrt_forward_args &a) {
  if (info.kv_cache) {
    if (a.page_size != info.page_size)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "args.page_size = %lld but kernel '%s' %s: %s",
                  static_cast<long long>(a.page_size), info.kernel,
                  info.page_size ? "reads pages of a different size" : "reads a contiguous cache",
                  info.page_size ? "pass its page size or compile a kernel for yours (attngen "
                                   "--paged-kv=N)"
                                 : "pass page_size = 0, or use a paged kernel (attngen --paged-kv=N)");
    if (info.page_size > 0) {
      if (attnrt_status s = checkPagedArgs(info, a))
        return s;
    } else if (a.block_table) {
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "args.block_table is not NULL but kernel '%s' reads a contiguous cache and would "
                  "ignore it: pass NULL, or use a paged kernel (attngen --paged-kv=N)",
                  info.kernel);
    }
    if (a.cache_seqlens)
      if (attnrt_status s = checkAligned("cache_seqlens", a.cache_seqlens, kInt32Align,
                                         "contiguous int32 tensor"))
        return s;
  }
  if (info.head_pack > 1) {
    int64_t group = info.kind == ATTNRT_KERNEL_COMBINE ? a.num_heads : a.num_heads / a.num_kv_heads;
    if (group % info.head_pack != 0)
      return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                  "kernel '%s' packs %d query heads per tile, which must divide the %lld query "
                  "heads %s: use a kernel with a head pack that divides it (1 always does)",
                  info.kernel, info.head_pack, static_cast<long long>(group),
                  info.kind == ATTNRT_KERNEL_COMBINE ? "of the call" : "sharing a key/value head");
  }
  return checkSplitArgs(info, a);
}

attnrt_status checkPagedVarlenArgs(const attnrt_kernel_info &info, const attnrt_forward_args &a) {
  if (a.page_size != info.page_size)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.page_size = %lld but varlen kernel '%s' reads pages of %d rows: pass its "
                "page size or compile a kernel for yours (attngen --varlen --paged-kv=N)",
                static_cast<long long>(a.page_size), info.kernel, info.page_size);
  if (a.cache_seqlens)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "args.cache_seqlens is not NULL but varlen kernel '%s' takes each sequence's key "
                "count from cu_seqlens_k and would ignore it: pass NULL",
                info.kernel);
  return checkPagedArgs(info, a);
}

} // namespace attnrt

extern "C" {

attnrt_status attnrt_kvcache_plan(const attnrt_kernel_info *info, const attnrt_forward_args *args,
                                  int64_t *num_splits, size_t *workspace_bytes) {
  return attnrt::guardApi("attnrt_kvcache_plan", [&] {
    if (!info || !args)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "attnrt_kvcache_plan needs the kernel's info and the call's args");
    attnrt_forward_args resolved;
    if (attnrt_status s = attnrt::resolveSplits(*info, *args, resolved))
      return s;
    attnrt::WorkspaceLayout layout;
    if (attnrt_status s = attnrt::workspaceLayout(resolved, resolved.num_splits,
                                                  attnrt::valueHeadDimOf(*info, resolved), layout))
      return s;
    if (num_splits)
      *num_splits = resolved.num_splits;
    if (workspace_bytes)
      *workspace_bytes = layout.bytes;
    return ATTNRT_OK;
  });
}

/// The dtype of a kernel's output: bf16 for FP8 inputs.
static int outputDtypeOf(const attnrt_kernel_info &info) {
  return info.dtype == ATTNRT_DTYPE_E4M3 ? ATTNRT_DTYPE_BF16 : info.dtype;
}

attnrt_status attnrt_forward_kvcache(attnrt_module *kernel, attnrt_module *combine,
                                     const attnrt_forward_args *args, void *stream) {
  return attnrt::guardApi("attnrt_forward_kvcache", [&] {
    if (!kernel || !args)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "attnrt_forward_kvcache needs a loaded KV-cache kernel and the call's args");
    if (!kernel->info.kv_cache)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "kernel '%s' is not a KV-cache kernel (metadata \"kv_cache\": false): use "
                          "attnrt_forward",
                          kernel->info.kernel);
    attnrt_forward_args resolved;
    if (attnrt_status s = attnrt::resolveSplits(kernel->info, *args, resolved))
      return s;
    if (resolved.num_splits > 1) {
      if (!combine || combine->info.kind != ATTNRT_KERNEL_COMBINE)
        return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                            "the call splits the keys %lld ways, which needs the combine kernel "
                            "(attngen --split-kv --combine) as `combine`; or pass num_splits = 1",
                            static_cast<long long>(resolved.num_splits));
      // The combine kernel merges O's: its one head dim is V's, its dtype
      // O's (bf16 for an FP8 kernel).
      if (combine->info.head_pack != kernel->info.head_pack ||
          combine->info.head_dim != attnrt::valueHeadDimOf(kernel->info, resolved) ||
          combine->info.dtype != outputDtypeOf(kernel->info) ||
          combine->info.lse != kernel->info.lse)
        return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                            "combine kernel '%s' does not match split kernel '%s' (head dim, dtype, "
                            "LSE and head pack must agree; the combine kernel's head dim is the "
                            "split kernel's value head dim): compile both from one spec",
                            combine->info.kernel, kernel->info.kernel);
    }
    // Both kernels are checked before either runs. The combine kernel
    // merges the splits' outputs: it reads no ALiBi slopes or descales.
    attnrt_forward_args merged = resolved;
    merged.alibi_slopes = nullptr;
    merged.alibi_slopes_stride = 0;
    merged.q_descale = merged.k_descale = merged.v_descale = nullptr;
    merged.dtype = outputDtypeOf(kernel->info);
    merged.head_dim = attnrt::valueHeadDimOf(kernel->info, resolved);
    if (attnrt_status s = attnrt::checkForwardArgs(kernel->info, resolved))
      return s;
    if (resolved.num_splits > 1)
      if (attnrt_status s = attnrt::checkForwardArgs(combine->info, merged))
        return s;
    if (attnrt_status s = attnrt_forward(kernel, &resolved, stream))
      return s;
    if (resolved.num_splits > 1)
      return attnrt_forward(combine, &merged, stream);
    return ATTNRT_OK;
  });
}

attnrt_status attnrt_check_kvcache_values(const attnrt_module *module, const attnrt_forward_args *args,
                                          void *stream) {
  return attnrt::guardApi("attnrt_check_kvcache_values", [&] {
    if (!module || !args)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "attnrt_check_kvcache_values needs a loaded module and the call's args");
    const attnrt_kernel_info &info = module->info;
    if (!info.kv_cache || attnrt::isEmptyForward(*args) || !args->cache_seqlens)
      return ATTNRT_OK;
    const attnrt::DriverApi &api = *module->api;
    if (!api.memcpyDtoHAsync || !api.streamSynchronize)
      return attnrt::fail(ATTNRT_ERROR_NO_DRIVER,
                          "the CUDA driver has no cuMemcpyDtoHAsync / cuStreamSynchronize");
    attnrt::ScopedContext scope(api, module->context);
    if (attnrt_status s = scope.status())
      return s;
    CUstream cuStream = static_cast<CUstream>(stream);
    auto copy = [&](void *dst, const void *src, size_t bytes, const char *what) {
      CUresult r = api.memcpyDtoHAsync(dst, static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(src)),
                                       bytes, cuStream);
      if (r == CUDA_SUCCESS)
        r = api.streamSynchronize(cuStream);
      if (r != CUDA_SUCCESS)
        return attnrt::failCuda(api, r, attnrt::format("copying args.%s to the host", what).c_str(),
                                "pass device pointers of the module's context");
      return ATTNRT_OK;
    };
    std::vector<int32_t> lengths(static_cast<size_t>(args->batch));
    if (attnrt_status s = copy(lengths.data(), args->cache_seqlens, lengths.size() * sizeof(int32_t),
                               "cache_seqlens"))
      return s;
    for (size_t b = 0; b < lengths.size(); ++b)
      if (lengths[b] < 0 || lengths[b] > args->nk)
        return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                            "cache_seqlens[%zu] = %d is outside [0, %lld]: a sequence holds at most "
                            "nk keys (the cache's capacity)",
                            b, lengths[b], static_cast<long long>(args->nk));
    if (info.page_size == 0 || !args->block_table)
      return ATTNRT_OK;
    int64_t stride = args->batch > 1 ? args->block_table_stride : args->max_blocks;
    std::vector<int32_t> table(static_cast<size_t>((args->batch - 1) * stride + args->max_blocks));
    if (attnrt_status s = copy(table.data(), args->block_table, table.size() * sizeof(int32_t),
                               "block_table"))
      return s;
    for (size_t b = 0; b < lengths.size(); ++b) {
      int64_t used = (lengths[b] + info.page_size - 1) / info.page_size;
      for (int64_t j = 0; j < used; ++j) {
        int32_t page = table[b * stride + j];
        if (page < 0 || page >= args->num_blocks)
          return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                              "block_table[%zu][%lld] = %d is outside [0, %lld): sequence %zu uses "
                              "its first %lld pages (cache_seqlens %d, page size %d), and each must "
                              "name a page of k_cache/v_cache",
                              b, static_cast<long long>(j), page,
                              static_cast<long long>(args->num_blocks), b,
                              static_cast<long long>(used), lengths[b], info.page_size);
      }
    }
    return ATTNRT_OK;
  });
}

} // extern "C"
