//===- Defaults.cpp - what a spec's choices are when it does not say ------===//
#include "attn/Spec/Spec.h"

#include "llvm/Support/Error.h"

using namespace mlir;
using namespace mlir::attn;

/// usesPersistentGrid's choice when a valid spec does not ask (in one, the
/// decoding fields imply kvCache): where the GPU measured it faster than one
/// CTA per tile (docs/PERF.md, "persistent grid"): unmasked d64 and d128,
/// and causal masks without a window up to d128 and at d256, whose CTAs
/// take the tiles in units of equal length (attn-persistent). Causal d160
/// and d192 spill in the persistent loop; windows and the other unmasked
/// head dims gain nothing.
bool mlir::attn::persistentByDefault(const AttentionSpec &spec) {
  // Varlen CTAs take the live tiles, numbered sequence by sequence
  // (attn-persistent's VarlenTiles), wherever the dense kernel of the same
  // mask is persistent.
  if (!usesFa3Schedule(spec) || spec.kvCache)
    return false;
  if (!hasDiagonal(spec))
    return spec.headDim == 64 || spec.headDim == 128;
  return spec.causal && spec.windowLeft < 0 &&
         (spec.headDim <= 128 || spec.headDim == 256);
}

bool mlir::attn::overridesTiles(const AttentionSpec &spec) {
  if (!spec.blockM && !spec.blockN && !spec.numWarps)
    return false;
  AttentionSpec tuned = spec;
  tuned.blockM = tuned.blockN = tuned.numWarps = 0;
  TileConfig asked = tileConfigOf(spec), byDefault = tileConfigOf(tuned);
  return asked.blockM != byDefault.blockM || asked.blockN != byDefault.blockN ||
         asked.numWarps != byDefault.numWarps;
}

bool mlir::attn::usesPersistentGrid(const AttentionSpec &spec) {
  return spec.persistent.value_or(persistentByDefault(spec));
}

/// usesTmaStore's choice when a spec does not ask: wherever attn-tma-store
/// applies, i.e. every dense warp-specialized sm_90a kernel whose output
/// tile fits beside Q and the K/V pipes (up to d176); docs/PERF.md, "the
/// epilogue through the TMA", has what it gains.
bool mlir::attn::tmaStoreByDefault(const AttentionSpec &spec) {
  // A packed (varlen) kernel stores its sequences' full tiles with it, the
  // partial last tile of each from registers (attn-tma-store).
  if (!usesFa3Schedule(spec) || spec.kvCache)
    return false;
  return !llvm::errorToBool(
      checkTmaStoreFits(tileConfigOf(spec), spec.tileHeadDim(),
                        elementBytesOf(spec.dtype)));
}

bool mlir::attn::usesTmaStore(const AttentionSpec &spec) {
  // A decoding kernel's few query rows per tile gain nothing from it.
  return !spec.kvCache && spec.tmaStore.value_or(tmaStoreByDefault(spec));
}

AttentionSpec mlir::attn::canonicalSpec(const AttentionSpec &spec) {
  AttentionSpec canonical = spec;
  // window_size = (L, 0) is a causal window: FlashAttention's own spelling.
  if (!canonical.causal && canonical.windowRight == 0)
    canonical.causal = true;
  // Causal forces the right side to 0 (flash_attn's rule), which causal
  // already is.
  if (canonical.causal)
    canonical.windowRight = -1;
  if (!placesDiagonal(canonical))
    canonical.causalAlign = CausalAlign::top_left;
  // An FP8 KV cache's values are row-major like its keys (the kernel
  // transposes each tile).
  if (canonical.kvCache && !canonical.combine &&
      canonical.dtype == DType::e4m3)
    canonical.vRowMajor = true;
  // V as wide as Q is the plain kernel.
  if (canonical.headDimV == canonical.headDim)
    canonical.headDimV = 0;
  return canonical;
}
