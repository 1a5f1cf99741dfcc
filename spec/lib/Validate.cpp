//===- Validate.cpp - which specs are valid --------------------------------===//
//
// Each field's own check (the table's Check column), then the rules across
// fields. The CLI and the C API both call validateSpec, so they accept the
// same specs; every message says what is supported.
//
//===----------------------------------------------------------------------===//
#include "KvCacheSpec.h"
#include "attn/Spec/Spec.h"

#include "llvm/Support/MathExtras.h"

#include <fmt/format.h>


using namespace mlir;
using namespace mlir::attn;
using spec::FieldInfo;

/// exp2 emulation counts eighths of the score blocks.
static constexpr int64_t kExp2EmulationPeriod = 8;

namespace {

llvm::Error specError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

//===----------------------------------------------------------------------===//
// The Check column of spec_fields.def (the PROBLEM rows' are in the
// dialect's Problem.cpp, which #attn.problem's verifier shares)
//===----------------------------------------------------------------------===//

/// A tile override: 0 (the tuned choice) or positive; whether the tiles fit
/// is the tile configuration's check.
llvm::Error checkOverrideField(const FieldInfo &field, int64_t value) {
  if (value < 0)
    return specError(fmt::format("{} = {} must be 0 (tuned default) or positive",
                                 field.flag, value));
  return llvm::Error::success();
}



llvm::Error checkStagesField(const FieldInfo &, int64_t stages) {
  if (stages < 0 || stages > kMaxPipeStages)
    return specError(fmt::format("stages = {} is out of range; use 1 to {}",
                                 stages, kMaxPipeStages));
  return llvm::Error::success();
}

llvm::Error checkEighthsField(const FieldInfo &, int64_t eighths) {
  if (eighths >= 0 && eighths <= kExp2EmulationPeriod)
    return llvm::Error::success();
  return specError(fmt::format("exp2 emulation = {}/{} is out of range; use 0 "
                               "(all exponentials on MUFU) to {}/{}",
                               eighths, kExp2EmulationPeriod,
                               kExp2EmulationPeriod, kExp2EmulationPeriod));
}

llvm::Error checkOptLevelField(const FieldInfo &, int64_t level) {
  if (level >= 1 && level <= 3)
    return llvm::Error::success();
  return specError(fmt::format("llvm-opt-level = {} is not supported; "
                               "supported: 1, 2, 3",
                               level));
}

} // namespace

llvm::Error mlir::attn::checkTmaStoreFits(const TileConfig &config,
                                          int64_t headDim,
                                          int64_t elementBytes) {
  if (config.blockM != 16 * config.numWarps)
    return specError(fmt::format(
        "--tma-store needs one 64-row slice per consumer warpgroup "
        "(block-m = 16 x num-warps), got block-m = {} with {} warps",
        config.blockM, config.numWarps));
  int64_t bytes = sharedMemoryBytes(config, headDim, /*outputTile=*/true,
                                    elementBytes);
  if (bytes > maxSharedMemoryBytes(TargetKind::sm_90a))
    return specError(fmt::format(
        "--tma-store needs {} KB of shared memory for d{} ({}x{} tiles, the "
        "output tile beside Q and the K/V pipes), more than the {} KB of a "
        "CTA; leave it out (the registers store O)",
        bytes / 1024, headDim, config.blockM, config.blockN,
        maxSharedMemoryBytes(TargetKind::sm_90a) / 1024));
  return llvm::Error::success();
}

llvm::Error mlir::attn::validateSpec(const AttentionSpec &spec) {
  // The problem's checks, then each other field's own, in table order. A
  // request follows flash_attn: causal forces the window's right side to 0
  // (canonicalSpec then drops it), where a kernel's problem must say so.
  // The alignment (bottom-right by default) only places a diagonal: without
  // a causal mask or a window there is none to place.
  AttentionProblem problem = spec;
  if (problem.causal && problem.windowRight > 0)
    problem.windowRight = 0;
  if (!problem.placesDiagonal())
    problem.causalAlign = CausalAlign::top_left;
  if (llvm::Error error = verifyProblem(problem))
    return error;
  if (spec.dtype == DType::e4m3 &&
      (spec.target != TargetKind::sm_90a || !spec.warpSpecialize))
    return specError(
        spec.target != TargetKind::sm_90a
            ? "dtype e4m3 (FP8) needs sm_90a (H100/H200): sm_80's tensor "
              "cores have no FP8 MMA; use bf16 or f16 there"
            : "dtype e4m3 (FP8) needs the warp-specialized schedule; drop "
              "--no-warp-specialize");
  if (spec.blockScales && spec.blockN != 0 && spec.blockN != 128)
    return specError(fmt::format(
        "block-n = {}: block scales are per 128 keys, so FP8 block "
        "quantization runs 128-key blocks; drop --block-n or use 128",
        spec.blockN));
#define SPEC_FIELD(G, InC, Member, name, json, Kind, Default, Flag, Help, Key, \
                   Rank, Rule, Check)                                          \
  if (spec::Group::G != spec::Group::PROBLEM)                                  \
    if (llvm::Error error = Check(spec::fieldInfo_##Member, spec.Member))      \
      return error;
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD

  // The rules across fields.
  if (usesFa3Schedule(spec) && spec.intraWgOverlap && spec.stages == 1)
    return specError("intra-warpgroup overlap needs 2 or more stages; use "
                     "--stages=2 or --no-intra-wg-overlap");
  // A varlen kernel's paged K/V is not a decoding kernel.
  bool decoding = spec.kvCache || (spec.pageSize != 0 && !spec.varlen) ||
                  spec.splitKv ||
                  spec.headPack != 1 || spec.combine;
  bool tmaStoreAsked = spec.tmaStore.value_or(false);
  if (tmaStoreAsked && decoding)
    return specError(
        "--tma-store is for prefill kernels: a decoding kernel stores "
        "its few query rows from registers; leave it out");
  if (tmaStoreAsked && !usesFa3Schedule(spec))
    return specError(
        "--tma-store needs the sm_90a warp-specialized schedule, "
        "whose consumer warpgroups each store their rows; leave it "
        "out or drop --no-warp-specialize");
  // Asked for where it cannot apply: refused, never dropped silently.
  if (spec.persistent.value_or(false) && !decoding && !usesFa3Schedule(spec))
    return specError(
        spec.target == TargetKind::sm_90a
            ? "--persistent needs the warp-specialized schedule, whose "
              "producer warpgroup feeds each CTA's next tile; leave it out "
              "or drop --no-warp-specialize"
            : "--persistent is for sm_90a's warp-specialized schedule; an "
              "sm_80 kernel runs one CTA per tile: leave it out");
  if (isBackward(spec)) {
    if (decoding)
      return specError("--backward is for dense attention: a KV-cache or "
                       "split-KV kernel has no backward kernel");
    if (tmaStoreAsked || spec.persistent.value_or(false))
      return specError("--tma-store and --persistent are forward schedules; "
                       "leave them out of a --backward kernel");
    if (spec.backward == BackwardPart::fused) {
      // Its dQ GEMM splits the head dim into blocks (a wgmma of 64 rows per
      // consumer warpgroup on sm_90a; mma.sync's 16-row slices of every
      // warp on sm_80); a packed batch's key tails would need masking.
      const char *instead = "; use the deterministic pair --backward=dq "
                            "and --backward=dkdv instead";
      if (spec.target == TargetKind::sm_90a && !spec.warpSpecialize)
        return specError(std::string("--backward=fused on sm_90a needs the "
                                     "warp-specialized schedule (its dQ "
                                     "drain is a TMA reduction): drop "
                                     "--no-warp-specialize") +
                         instead);
      // sm_90a's TMA loads the next sequence's keys past a sequence's end,
      // and their dS^T would reach dQ; sm_80's copies zero-fill them.
      if (spec.varlen && spec.target == TargetKind::sm_90a)
        return specError(std::string("--backward=fused on sm_90a does not "
                                     "support variable-length batches yet") +
                         instead);
      if (spec.headDim != 64 && spec.headDim != 128)
        return specError(fmt::format("--backward=fused supports head dims "
                                     "64 and 128; got {}{}",
                                     spec.headDim, instead));
    }
    TileConfig config = backwardTileConfig(spec);
    if (llvm::Error error =
            checkTileConfig(config, spec.target, spec.headDim))
      return error;
    // sm_80's dQ GEMM gives each warp 16-row slices of the head dim.
    if (spec.backward == BackwardPart::fused &&
        spec.target == TargetKind::sm_80 &&
        (!llvm::isPowerOf2_64(config.numWarps) || config.numWarps > 8 ||
         spec.headDim % (16 * config.numWarps) != 0))
      return specError(fmt::format(
          "--backward=fused on sm_80 splits the head dim ({}) into 16-row "
          "slices of its warps, a power of two that divides {}; got {} "
          "warps: use --num-warps=4 --block-m=64 (the default)",
          spec.headDim, spec.headDim / 16, config.numWarps));
    int64_t bytes = backwardSharedMemoryBytes(spec, config);
    // pre and post hold no tile.
    bool tiles = spec.backward == BackwardPart::dq ||
                 spec.backward == BackwardPart::dkdv ||
                 spec.backward == BackwardPart::fused;
    if (tiles && spec.maxSmem > 0 && bytes > spec.maxSmem)
      return specError(fmt::format(
          "the backward's tiles need {} bytes of shared memory, more than "
          "--max-smem={}; use a smaller block-n (or block-m)",
          bytes, spec.maxSmem));
    return llvm::Error::success();
  }
  // Decoding kernels have tiles of their own (KvCacheSpec.cpp).
  if (decoding)
    return validateKvCacheSpec(spec);
  if (llvm::Error error = validateKvCacheSpec(spec))
    return error;
  TileConfig config = tileConfigOf(spec);
  if (llvm::Error error =
          checkTileConfig(config, spec.target, spec.tileHeadDim(),
                          spec.maxSmem, elementBytesOf(spec.dtype)))
    return error;
  if (!fitsPages(config.blockN, spec.pageSize)) {
    // FP8's key blocks are whole 128-key panels of the transposed V.
    if (spec.dtype == DType::e4m3)
      return specError(fmt::format(
          "pages of {} rows do not fit FP8's {}-key blocks: a block must lie "
          "in one page or cover whole pages; use pages of 16, 32, 64, 128 or "
          "a multiple of 128 rows",
          spec.pageSize, config.blockN));
    return specError(fmt::format(
        "block-n = {} does not fit pages of {} rows: a key block must lie "
        "in one page or cover whole pages; use a divisor or a multiple of "
        "{}, or leave block-n to the default",
        config.blockN, spec.pageSize, spec.pageSize));
  }
  if (tmaStoreAsked)
    return checkTmaStoreFits(config, spec.tileHeadDim(),
                             elementBytesOf(spec.dtype));
  return llvm::Error::success();
}
