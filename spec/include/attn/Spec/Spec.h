//===- Spec.h - a kernel spec: checks, defaults, name, pipeline -*- C++ -*-===//
//
// What a user asks for (AttentionSpec) and the policy around it: which specs
// are valid, what the defaults resolve to, the kernel's name, the problem
// module and the pass pipeline that compiles it. The CLI and the JIT share
// all of it; codegen/ is the lowering only.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_SPEC_SPEC_H
#define ATTN_SPEC_SPEC_H

#include "attn/Dialect/AttnDialect.h"
#include "attn/Dialect/Problem.h"
#include "attn/Passes/BoundedSoftmax.h"
#include "attn/Passes/TileConfig.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <cmath>
#include <optional>
#include <string>

namespace mlir::attn {

/// What a user asks for: one attention kernel variant. Its fields are the
/// rows of attnrt/spec_fields.def, each of its kind's type (SpecKinds.h),
/// its default the table's: the problem's (AttentionProblem) and the
/// target, tiling, schedule and backend rows.
struct AttentionSpec : AttentionProblem {
#define SPEC_FIELD(G, InC, Member, name, json, Kind, Default, ...)            \
  ATTN_SPEC_MEMBER_##G(Member, Kind, Default)
#define ATTN_SPEC_MEMBER_PROBLEM(...)
#define ATTN_SPEC_MEMBER_OTHER(Member, Kind, Default)                          \
  spec::Kind::Type Member = spec::Kind::fromDefault(Default);
#define ATTN_SPEC_MEMBER_TARGET ATTN_SPEC_MEMBER_OTHER
#define ATTN_SPEC_MEMBER_TILING ATTN_SPEC_MEMBER_OTHER
#define ATTN_SPEC_MEMBER_SCHEDULE ATTN_SPEC_MEMBER_OTHER
#define ATTN_SPEC_MEMBER_BACKEND ATTN_SPEC_MEMBER_OTHER
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTN_SPEC_MEMBER_PROBLEM
#undef ATTN_SPEC_MEMBER_OTHER
#undef ATTN_SPEC_MEMBER_TARGET
#undef ATTN_SPEC_MEMBER_TILING
#undef ATTN_SPEC_MEMBER_SCHEDULE
#undef ATTN_SPEC_MEMBER_BACKEND
};

/// The spec's fields that form the JIT's cache key, as `name=value` words
/// in table order (with the default scale spelled out, so that 0 and an
/// explicit 1/sqrt(head_dim) share a kernel).
std::string specKey(const AttentionSpec &spec);

/// Checks a spec (head dim, scale, window, tile overrides, LLVM optimisation
/// level) and returns an error that says what is supported. The CLI and the
/// C API both call it, so they accept the same specs.
llvm::Error validateSpec(const AttentionSpec &spec);

/// The one spelling of a valid spec's mask, so that equal masks share a
/// kernel (name, cache key): a window whose right side is 0 is causal, a
/// causal mask keeps no window_right, a mask without a diagonal is top-left.
AttentionSpec canonicalSpec(const AttentionSpec &spec);

/// Whether a spec's mask has a diagonal (causal or a window side).
inline bool hasDiagonal(const AttentionSpec &spec) {
  return spec.causal || spec.windowLeft >= 0 || spec.windowRight >= 0;
}

/// Whether a spec's kernel runs FlashAttention-3's schedule: sm_90a with
/// warp specialization (producer and consumer warpgroups).
inline bool usesFa3Schedule(const AttentionSpec &spec) {
  return spec.target == TargetKind::sm_90a && spec.warpSpecialize;
}

/// Whether a spec's soft cap is one attn-bounded-softmax fixes (a cap of at
/// most 50 on bf16; BoundedSoftmax.h says why). Its tiles follow it either
/// way; with the pass switched off the kernel is named _runmax.
inline bool boundedSoftmaxApplies(const AttentionSpec &spec) {
  return isFixedMaxSoftcap(spec.softcap, spec.dtype == DType::bf16);
}

/// A dense spec's tile configuration: its target's tuned tiles for its head
/// dim and mask, with the spec's overrides (`window`: a sliding window,
/// which decides whether d256 peels its masked blocks).
inline TileConfig tileConfigOf(const AttentionSpec &spec, bool window = false) {
  return resolveTileConfig(spec.target, spec.headDim, hasDiagonal(spec),
                           spec.blockM, spec.blockN, spec.numWarps,
                           usesFa3Schedule(spec), spec.stages, window,
                           boundedSoftmaxApplies(spec));
}
/// Whether a dense spec's tile overrides (block-m, block-n, warps) give
/// tiles other than its default's: such a kernel's name says its tiles, and
/// only such overrides get attngen's register warning.
bool overridesTiles(const AttentionSpec &spec);

/// The softmax scale a spec's kernel applies: `scale`, or 1/sqrt(head_dim)
/// when it is 0 (the default).
inline double softmaxScaleOf(const AttentionSpec &spec) {
  return spec.scale > 0 ? spec.scale : 1.0 / std::sqrt(double(spec.headDim));
}

/// Whether a valid spec's kernel loops over tiles (attn-persistent): as
/// asked, else persistentByDefault. Its CTAs then hide the next tile's Q
/// and first K loads under the current tile's last blocks and epilogue.
bool usesPersistentGrid(const AttentionSpec &spec);

/// Whether the kernel is persistent when the spec does not say: the sm_90a
/// FlashAttention-3 schedule of an unmasked dense kernel of head dim 64 or
/// 128, and of a causal one (no window) up to d128 and at d256
/// (docs/PERF.md has the measurements behind the choice).
bool persistentByDefault(const AttentionSpec &spec);

/// Whether a valid spec's kernel stores its output through shared memory
/// and the TMA (attn-tma-store; dense sm_90a FlashAttention-3 kernels
/// only): as asked, else tmaStoreByDefault.
bool usesTmaStore(const AttentionSpec &spec);

/// Whether the output goes through the TMA when the spec does not say:
/// wherever the output tile fits beside Q and the K/V pipes, every head dim
/// up to d176 (d184 and up have no room).
bool tmaStoreByDefault(const AttentionSpec &spec);

/// Whether attn-tma-store can apply to a tile configuration: one 64-row
/// slice per consumer warpgroup, and room for the output tile beside Q and
/// the K/V pipes (what the pass checks on the IR).
llvm::Error checkTmaStoreFits(const TileConfig &config, int64_t headDim);

/// The spec of the combine kernel that merges the partial results of the
/// split-KV spec `split` (same target, dtype, head dim, LSE, head packing
/// and tile rows; no mask, scale or page size of its own).
AttentionSpec combineSpecOf(const AttentionSpec &split);

/// Builds `module { func.func @<name>(q, k, v, o, lse) { attn.attention } }`.
OwningOpRef<ModuleOp> buildSpecModule(MLIRContext &ctx,
                                      const AttentionSpec &spec);

/// The kernel name for a spec, e.g. attn_fwd_sm90a_bf16_d128_causal
/// (`_causal_br` for a bottom-right aligned causal mask,
/// `_window_l256_r0_br` for a bottom-right causal window of 256 keys).
std::string kernelName(const AttentionSpec &spec);

/// Adds the FlashAttention passes (tile, causal block skipping, online
/// softmax) to `pm`.
void buildTilePipeline(OpPassManager &pm, const AttentionSpec &spec);

} // namespace mlir::attn

#endif // ATTN_SPEC_SPEC_H
