//===- KvCache.h - KV-cache and split-KV calls ------------------*- C++ -*-===//
//
// What the runtime adds for the decoding kernels (docs/ABI.md "KV cache and
// split-KV"): the split plan and workspace layout, the checks of the
// KV-cache fields of attnrt_forward_args, and the two-kernel call.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_LIB_KVCACHE_H
#define ATTNRT_LIB_KVCACHE_H

#include "attnrt/attnrt.h"

#include <cstddef>
#include <cstdint>

namespace attnrt {

/// Where the partial results of `splits` splits lie in the workspace:
/// o_partial [S * B, Nq, H, D] f32 from byte 0, lse_partial [S * B, H, Nq]
/// f32 from `lseOffset` (16-byte aligned); `bytes` in all (0 for one split).
struct WorkspaceLayout {
  size_t lseOffset = 0;
  size_t bytes = 0;
};

/// Whether the kernel reads the KV-cache and split-KV fields of the args.
bool usesKvCacheArgs(const attnrt_kernel_info &info);

/// `args` with num_splits resolved for `info`: the given value, the
/// heuristic's choice for 0 (a split-KV kernel; needs info.num_sms), 1 for
/// a kernel that does not split. Fails (message recorded) for splits the
/// kernel cannot take.
attnrt_status resolveSplits(const attnrt_kernel_info &info, const attnrt_forward_args &args,
                            attnrt_forward_args &resolved);

/// The workspace layout of `splits` splits for the call's sizes, the
/// partial outputs `valueHeadDim` wide (O's head dim); fails when it would
/// not fit size_t.
attnrt_status workspaceLayout(const attnrt_forward_args &args, int64_t splits,
                              int64_t valueHeadDim, WorkspaceLayout &layout);

/// O's (and V's) head dim of kernel `info`: its head_dim_v, or its head dim
/// (a combine kernel's one head dim is the value head dim it merges).
inline int64_t valueHeadDimOf(const attnrt_kernel_info &info, const attnrt_forward_args &) {
  return info.head_dim_v ? info.head_dim_v : info.head_dim;
}

/// Checks the KV-cache fields of resolved args against a KV-cache or
/// combine kernel: page size, block table and its sizes, cache_seqlens,
/// head packing, splits and workspace.
attnrt_status checkKvCacheArgs(const attnrt_kernel_info &info, const attnrt_forward_args &args);

/// The paged K/V of a varlen kernel (info.varlen with a page_size): the
/// page size, block table and extents as a paged KV-cache kernel takes
/// them (nk = max_blocks * page_size), and no cache_seqlens (the key
/// lengths come from cu_seqlens_k).
attnrt_status checkPagedVarlenArgs(const attnrt_kernel_info &info, const attnrt_forward_args &args);

} // namespace attnrt

#endif // ATTNRT_LIB_KVCACHE_H
