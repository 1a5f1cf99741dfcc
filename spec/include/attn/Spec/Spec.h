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
#include "attn/Passes/BoundedSoftmax.h"
#include "attn/Passes/TileConfig.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <cmath>
#include <optional>
#include <string>

namespace mlir::attn {

/// What a user asks for: one forward-attention kernel variant.
struct AttentionSpec {
  TargetKind target = TargetKind::sm_90a;
  int64_t headDim = 128;
  bool bf16 = true; ///< false: f16
  bool causal = false;
  /// Where the diagonal of a causal mask or a window sits when Nq != Nk.
  CausalAlign causalAlign = CausalAlign::top_left;
  /// Sliding window (FlashAttention's window_size): query i sees keys j with
  /// i + off - windowLeft <= j <= i + off + windowRight around its diagonal
  /// i + off; -1: that side is unbounded. causal is windowRight = 0.
  int64_t windowLeft = -1, windowRight = -1;
  double scale = 0; ///< 0: 1/sqrt(head_dim)
  /// Soft cap c of the scores, c * tanh(scale * s / c); 0: none.
  double softcap = 0;
  bool withLse = true;
  // Tile overrides (0: chosen by attn-tile).
  int64_t blockM = 0, blockN = 0, numWarps = 0;
  bool skipMaskedBlocks = true; ///< run attn-causal-blocks
  int llvmOptLevel = 3;         ///< LLVM optimisation level: 1, 2 or 3
  // The FlashAttention-3 schedule (sm_90a; each switch is one pass).
  bool warpSpecialize = true; ///< attn-warp-specialize
  int64_t stages = 0;         ///< attn-multibuffer stages (0: default, 2)
  bool intraWgOverlap = true; ///< attn-intra-wg-overlap
  bool pingpong = true;       ///< attn-pingpong
  /// attn-tma-store: the output through shared memory and the TMA. Unset:
  /// usesTmaStore's default (wherever the tile fits: up to d176); true
  /// asks for it (refused where it cannot apply), false never.
  std::optional<bool> tmaStore;
  /// attn-persistent: CTAs loop over tiles. Unset: usesPersistentGrid's
  /// default (on for the unmasked d64 and d128 kernels of the FA3 schedule
  /// and for causal masks up to d128 and at d256, where the H200 measured
  /// it faster; docs/PERF.md).
  std::optional<bool> persistent;
  /// Flush f32 denormals to zero in the kernel (ex2.approx.ftz: one MUFU op
  /// per exponential); false is the IEEE ablation.
  bool flushDenormals = true;
  /// Variable-length batch: packed [total, H, D] tensors with cu_seqlens
  /// (flash_attn_varlen_func's layout), one sequence per batch entry.
  bool varlen = false;
  /// Eighths of the score exponentials computed in software on the FMA pipe
  /// (attn-online-softmax's exp2-emulate, 0 to 8); 0: all on MUFU.EX2.
  int64_t exp2EmulatedEighths = 0;
  /// attn-bounded-softmax: a soft cap's bf16 kernels run the softmax with a
  /// fixed max (no row max, no rescale); false keeps the running max.
  bool boundedSoftmax = true;

  // ---- Decoding with a KV cache (attn.attention_kvcache), docs/DESIGN.md
  // "Decoding". A KV-cache kernel reads cache_seqlens; causal means
  // bottom-right to each sequence's keys.
  bool kvCache = false;  ///< an attn.attention_kvcache kernel
  int64_t pageSize = 0;  ///< > 0: paged K/V, pages of this many rows
  bool splitKv = false;  ///< split the keys over CTAs (needs the combine)
  int64_t headPack = 1;  ///< query heads packed per tile (GQA decoding)
  /// The split-KV combine kernel (attn.combine_splits) of this spec rather
  /// than the split kernel itself.
  bool combine = false;
};

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
  return isFixedMaxSoftcap(spec.softcap, spec.bf16);
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
/// asked, else by default for the sm_90a FlashAttention-3 schedule of an
/// unmasked dense kernel of head dim 64 or 128, and of a causal one (no
/// window) up to d128 and at d256, whose tiles go out in units of equal
/// length. Its CTAs then hide the next tile's Q and first K loads under
/// the current tile's last blocks and epilogue: d128 N=1k 593 against 570
/// TFLOPS, causal 458 against 422 (docs/PERF.md). Causal d160/d192 (they
/// spill), windows and the other head dims stay one CTA per tile.
bool usesPersistentGrid(const AttentionSpec &spec);

/// Whether a valid spec's kernel stores its output through shared memory
/// and the TMA (attn-tma-store; dense sm_90a FlashAttention-3 kernels
/// only): as asked, else wherever the output tile fits beside Q and the
/// K/V pipes, every head dim up to d176 (d184 and up have no room). On the
/// H200 it gives +5-15% at N = 1k and -2% to +4% at 8k (docs/PERF.md).
bool usesTmaStore(const AttentionSpec &spec);

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
