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
#include "mlir/Pass/Pass.h"
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

/// Whether the spec's causal_align places anything: a mask's diagonal, or
/// ALiBi's distances.
inline bool placesDiagonal(const AttentionSpec &spec) {
  return hasDiagonal(spec) || spec.alibi;
}

/// Whether a spec is one of the backward pass's kernels.
inline bool isBackward(const AttentionSpec &spec) {
  return spec.backward != BackwardPart::none;
}

/// Whether a spec's kernel runs FlashAttention-3's schedule: sm_90a with
/// warp specialization (producer and consumer warpgroups). The backward
/// kernels run the single-role schedule for now.
inline bool usesFa3Schedule(const AttentionSpec &spec) {
  return spec.target == TargetKind::sm_90a && spec.warpSpecialize &&
         !isBackward(spec);
}

/// The tiles of a backward kernel (its rows: queries for dq, keys for dkdv;
/// its loop's blocks: the other side), with the spec's overrides.
TileConfig backwardTileConfig(const AttentionSpec &spec);

/// Dynamic shared memory (bytes) of a dq, dkdv or fused kernel with tiles
/// `config`: its resident pair (Q and dO, or K and V: block_m rows), the
/// streamed pair (block_n rows, `stages` deep on sm_90a, one on sm_80) and
/// the fused kernel's dS^T tile (and its f32 dQ stage on sm_90a).
int64_t backwardSharedMemoryBytes(const AttentionSpec &spec,
                                  const TileConfig &config);

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
  if (spec.dtype == DType::e4m3)
    return withOverrides(chooseFp8TileConfig(spec.tileHeadDim()), spec.blockM,
                         spec.blockN, spec.numWarps, spec.stages);
  TileConfig config = resolveTileConfig(
      spec.target, spec.tileHeadDim(), hasDiagonal(spec), spec.blockM,
      spec.blockN,
      spec.numWarps, usesFa3Schedule(spec), spec.stages, window,
      boundedSoftmaxApplies(spec));
  // A GPU with less shared memory than the target's: the tiles the spec
  // leaves to the default give back until they fit.
  config = fitSharedMemory(config, spec.tileHeadDim(), spec.maxSmem,
                           /*keepStages=*/spec.stages > 0,
                           /*keepBlockM=*/spec.blockM > 0 || spec.numWarps > 0,
                           /*keepBlockN=*/spec.blockN > 0);
  // A varlen kernel over a paged K/V: a key block lies in one page or
  // covers whole pages (one TMA box or cp.async walk per page); an
  // override that does not fit is refused by validateSpec.
  if (spec.blockN == 0)
    config.blockN = fitToPages(config.blockN, spec.pageSize);
  return config;
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
llvm::Error checkTmaStoreFits(const TileConfig &config, int64_t headDim,
                              int64_t elementBytes = 2);

/// The spec of the combine kernel that merges the partial results of the
/// split-KV spec `split` (same target, dtype, head dim, LSE, head packing
/// and tile rows; no mask, scale or page size of its own).
AttentionSpec combineSpecOf(const AttentionSpec &split);

//===----------------------------------------------------------------------===//
// A kernel's configuration: chosen once, carried in the IR
//===----------------------------------------------------------------------===//

/// Everything chosen for a kernel beyond its problem: its tiles
/// (#attn.tiling) and which techniques its schedule applies
/// (#attn.schedule).
struct KernelConfig {
  TileConfig tiling;
  AttentionSchedule schedule;
};

/// Chooses a valid, canonical spec's configuration, the one place the
/// defaults are decided: the target's tuned tiles for its problem with the
/// spec's overrides, and each technique where it applies, as asked or by
/// default. attn-configure and the driver both call it.
KernelConfig configure(const AttentionSpec &spec);

/// The spec whose configuration is `config` with every choice spelled out
/// (configure(specOfConfig(...)) == config): what a configured kernel's IR
/// says, as a request.
AttentionSpec specOfConfig(TargetKind target, const AttentionProblem &problem,
                           const KernelConfig &config);

/// The request spec of a kernel's problem: the problem's fields, and for a
/// combine kernel (whose problem reads no cache) the KV-cache fields its
/// request has.
AttentionSpec specOfProblem(TargetKind target, const AttentionProblem &problem);

/// The name of a configured kernel, read off its target, problem and
/// configuration: a prefix for its kind, target, dtype and head dim, its
/// problem's features, then a suffix for every choice that differs from
/// what configure() would choose for it with that choice left to its
/// default (so an ablation's kernel never shares a name or a cache entry
/// with the default's, and an ablation equal to the default is the
/// default): attn_fwd_sm90a_bf16_d128_causal, attn_fwd_sm90a_bf16_d64_
/// window_l256_r0_br, attn_kvcache_sm90a_bf16_d128_pack4_page16_split,
/// attn_fwd_sm90a_bf16_d128_nopp_m64n128w4.
std::string kernelName(TargetKind target, const AttentionProblem &problem,
                       const KernelConfig &config);

/// The name of a valid spec's kernel (its configuration's).
std::string kernelName(const AttentionSpec &spec);

//===----------------------------------------------------------------------===//
// The driver: the CLI and the JIT compile a spec the same way
//===----------------------------------------------------------------------===//

/// Builds the problem module of a valid spec (canonicalized here):
/// `module attributes {attn.target} { func.func @<name>(...) attributes
/// {attn.tiling, attn.schedule} { attn.attention ... } }`, configured by
/// configure() and named by kernelName().
OwningOpRef<ModuleOp> buildKernelModule(MLIRContext &ctx,
                                        const AttentionSpec &spec);

/// Records configure(spec) on the function that holds a problem op
/// (attn.tiling, attn.schedule), leaving a function already configured as
/// it is; with `name`, the function takes its kernel name.
void configureKernel(Operation *func, const AttentionSpec &spec, bool name);

/// The tile passes from a problem module to tile programs, every technique
/// in its place: attn-configure (with `tuning`'s overrides and switches,
/// for functions not yet configured), attn-tile, attn-causal-blocks,
/// attn-bounded-softmax, attn-online-softmax, then attn-persistent,
/// attn-multibuffer, attn-warp-specialize, attn-intra-wg-overlap,
/// attn-pingpong and attn-tma-store, each applied where the kernel's
/// #attn.schedule turns it on. Registered as attn-tile-pipeline.
void buildAttnTilePipeline(OpPassManager &pm,
                           const AttentionSpec &tuning = AttentionSpec());

/// The tile passes and the lowering to the LLVM dialect: what attngen runs
/// from a problem module to the module it emits PTX from. Registered as
/// attn-pipeline.
void buildAttnPipeline(OpPassManager &pm,
                       const AttentionSpec &tuning = AttentionSpec());

/// Registers attn-tile-pipeline, attn-lowering-pipeline and attn-pipeline
/// (attngen-opt --attn-pipeline replays attngen) and attn-configure.
void registerSpecPasses();

/// An attn-configure pass whose overrides and switches are `tuning`'s.
std::unique_ptr<Pass> createAttnConfigure(const AttentionSpec &tuning);

} // namespace mlir::attn

#endif // ATTN_SPEC_SPEC_H
