//===- KernelName.cpp - a kernel's name from its spec ---------------------===//
//
// A kernel's name is the parts of its fields (the NameRule column of
// spec_fields.def) in the order of their NameRank: a prefix for the kind of
// kernel, the target, dtype and head dim, the problem's features, then a
// suffix for every schedule choice that is not the default, so that an
// ablation's kernel never shares a name (or a cache entry) with the
// default's:
//
//   attn_fwd_sm90a_bf16_d128_causal            causal, bottom-right
//   attn_fwd_sm90a_bf16_d64_window_l256_r0_tl  a causal window, top-left
//   attn_kvcache_sm90a_bf16_d128_pack4_page16_split
//   attn_fwd_sm90a_bf16_d128_nopp_m64n128w4    an ablation with its tiles
//
//===----------------------------------------------------------------------===//
#include "KvCacheSpec.h"
#include "attn/Spec/Spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

using namespace mlir;
using namespace mlir::attn;

/// exp2 emulation counts eighths of the score blocks.
static constexpr int64_t kExp2EmulationPeriod = 8;

namespace {

/// What a name rule reads: the kernel's target, problem and configuration,
/// and what configure() would choose with one choice left to its default.
struct NameContext {
  TargetKind target;
  const AttentionProblem &problem;
  const KernelConfig &config;

  /// The configuration this kernel would have with `reset` applied to the
  /// spec its configuration spells out (one choice back to its default).
  KernelConfig byDefault(llvm::function_ref<void(AttentionSpec &)> reset) const {
    AttentionSpec spec = specOfConfig(target, problem, config);
    reset(spec);
    return configure(spec);
  }
  const AttentionSchedule &schedule() const { return config.schedule; }
  bool decoding() const { return problem.kvCache || problem.combine; }
};

//===----------------------------------------------------------------------===//
// The NameRule column of spec_fields.def: the problem's parts, then one
// suffix per choice that is not the default's.
//===----------------------------------------------------------------------===//

std::string nameNone(const NameContext &) { return ""; }

/// attn_fwd, attn_kvcache, attn_combine, attn_bwd_dq or attn_bwd_dkdv.
std::string namePrefix(const NameContext &c) {
  if (c.problem.backward != BackwardPart::none)
    return "attn_bwd_" + spec::Backward::key(c.problem.backward);
  return c.problem.combine   ? "attn_combine"
         : c.problem.kvCache ? "attn_kvcache"
                             : "attn_fwd";
}

std::string nameArch(const NameContext &c) {
  return c.target == TargetKind::sm_90a ? "_sm90a" : "_sm80";
}

std::string nameDtype(const NameContext &c) {
  return "_" + spec::Element::text(c.problem.dtype);
}

/// FP8 block quantization's per-block descales: _blockscale.
std::string nameBlockScales(const NameContext &c) {
  return c.problem.blockScales ? "_blockscale" : "";
}

/// FP8's V read row-major and transposed in the kernel: _vrow.
std::string nameVRowMajor(const NameContext &c) {
  return c.problem.vRowMajor ? "_vrow" : "";
}

std::string nameHeadDim(const NameContext &c) {
  return fmt::format("_d{}", c.problem.headDim);
}

/// V's own head dim right after Q's: _d192v128.
std::string nameHeadDimV(const NameContext &c) {
  const AttentionProblem &p = c.problem;
  if (p.headDimV == 0 || p.headDimV == p.headDim)
    return "";
  return fmt::format("v{}", p.headDimV);
}

std::string nameVarlen(const NameContext &c) {
  return c.problem.varlen ? "_varlen" : "";
}

/// _causal is bottom-right (FlashAttention's, the default), _causal_tl
/// top-left (PyTorch's is_causal). A window: _window_l<left>_r<right>, inf
/// for an unbounded side and r0 for causal, _tl when top-left aligned:
/// _window_l256_r0_tl.
std::string nameMask(const NameContext &c) {
  const AttentionProblem &p = c.problem;
  // Bottom-right is the default alignment: only top-left is spelled.
  const char *align = p.causalAlign == CausalAlign::top_left ? "_tl" : "";
  if (p.windowLeft >= 0 || p.windowRight >= 0) {
    // Both sides, an unbounded one as inf, and causal's right side as the
    // 0 it forces: _window_l128_r0, _window_l0_rinf.
    auto side = [](int64_t keys) {
      return keys < 0 ? std::string("inf") : fmt::format("{}", keys);
    };
    return fmt::format("_window_l{}_r{}{}", side(p.windowLeft),
                       p.causal ? "0" : side(p.windowRight), align);
  }
  if (p.causal)
    return fmt::format("_causal{}", align);
  return "";
}

/// A real number as an identifier, in its shortest round-trip spelling
/// ('.' -> 'p', '-' -> 'm', '+' dropped): 30, 50p5, 1em05.
template <class Real> std::string identifierOf(Real value) {
  std::string text;
  for (char ch : fmt::format("{}", value))
    if (ch == '.')
      text += 'p';
    else if (ch == '-')
      text += 'm';
    else if (ch != '+')
      text += ch;
  return text;
}

/// ALiBi's per-head slopes are a tensor the kernel reads: _alibi, and
/// _alibi_tl when its distances are top-left without a mask to say so.
std::string nameAlibi(const NameContext &c) {
  const AttentionProblem &p = c.problem;
  if (!p.alibi)
    return "";
  bool topLeft = p.causalAlign == CausalAlign::top_left && !p.hasDiagonal();
  return topLeft ? "_alibi_tl" : "_alibi";
}

/// A problem field away from its default as _<name><value> (_softcap30):
/// a new numeric field gets its name part from the table alone.
struct NameByValue {
  template <class T>
  std::string operator()(const char *name, T value, T byDefault) const {
    if (value == byDefault)
      return "";
    return "_" + std::string(name) + identifierOf(value);
  }
};
constexpr NameByValue nameByValue;

/// A scale other than 1/sqrt(head_dim) (as the kernel's f32 holds it):
/// _scale0p1.
std::string nameScale(const NameContext &c) {
  const AttentionProblem &p = c.problem;
  float byDefault = static_cast<float>(1.0 / std::sqrt(double(p.headDim)));
  if (p.combine || static_cast<float>(p.scale) == byDefault)
    return "";
  return "_scale" + identifierOf(static_cast<float>(p.scale));
}

std::string nameLse(const NameContext &c) {
  return c.problem.withLse ? "" : "_nolse";
}

std::string nameHeadPack(const NameContext &c) {
  return c.decoding() && c.problem.headPack > 1
             ? fmt::format("_pack{}", c.problem.headPack)
             : "";
}

std::string namePageSize(const NameContext &c) {
  return c.problem.pageSize > 0 ? fmt::format("_page{}", c.problem.pageSize)
                                : "";
}

std::string nameSplitKv(const NameContext &c) {
  return c.problem.splitKv ? "_split" : "";
}

std::string nameStages(const NameContext &c) {
  int64_t stages = c.config.tiling.stages;
  int64_t byDefault =
      c.byDefault([](AttentionSpec &s) { s.stages = 0; }).tiling.stages;
  return stages != byDefault ? fmt::format("_s{}", stages) : "";
}

/// A switch that is off where its default is on: `suffix`.
std::string nameOff(const NameContext &c, bool AttentionSchedule::*on,
                    bool AttentionSpec::*asked, const char *suffix) {
  if (c.schedule().*on)
    return "";
  bool byDefault =
      c.byDefault([&](AttentionSpec &s) { s.*asked = true; }).schedule.*on;
  return byDefault ? suffix : "";
}

std::string nameWarpSpecialize(const NameContext &c) {
  return nameOff(c, &AttentionSchedule::warpSpecialize,
                 &AttentionSpec::warpSpecialize, "_nows");
}

std::string nameIntraWgOverlap(const NameContext &c) {
  return nameOff(c, &AttentionSchedule::intraWgOverlap,
                 &AttentionSpec::intraWgOverlap, "_noovl");
}

std::string namePingpong(const NameContext &c) {
  return nameOff(c, &AttentionSchedule::pingpong, &AttentionSpec::pingpong,
                 "_nopp");
}

std::string nameBlockSkip(const NameContext &c) {
  return nameOff(c, &AttentionSchedule::skipMaskedBlocks,
                 &AttentionSpec::skipMaskedBlocks, "_noskip");
}

std::string nameFtz(const NameContext &c) {
  return nameOff(c, &AttentionSchedule::flushDenormals,
                 &AttentionSpec::flushDenormals, "_noftz");
}

/// The soft cap's running max kept where attn-bounded-softmax would fix it.
std::string nameBoundedSoftmax(const NameContext &c) {
  return nameOff(c, &AttentionSchedule::boundedSoftmax,
                 &AttentionSpec::boundedSoftmax, "_runmax");
}

std::string nameLongestFirst(const NameContext &c) {
  return nameOff(c, &AttentionSchedule::longestFirst,
                 &AttentionSpec::longestFirst, "_nolpt");
}

std::string namePrefetchQ(const NameContext &c) {
  return nameOff(c, &AttentionSchedule::prefetchQ, &AttentionSpec::prefetchQ,
                 "_noqpf");
}

/// A switch that is not its default's either way: `on` or `off`.
std::string nameEither(const NameContext &c, bool AttentionSchedule::*choice,
                       std::optional<bool> AttentionSpec::*asked,
                       const char *on, const char *off) {
  bool byDefault =
      c.byDefault([&](AttentionSpec &s) { s.*asked = std::nullopt; })
          .schedule.*choice;
  if (c.schedule().*choice == byDefault)
    return "";
  return c.schedule().*choice ? on : off;
}

std::string nameTmaStore(const NameContext &c) {
  return nameEither(c, &AttentionSchedule::tmaStore, &AttentionSpec::tmaStore,
                    "_tma", "_notma");
}

std::string namePersistent(const NameContext &c) {
  return nameEither(c, &AttentionSchedule::persistent,
                    &AttentionSpec::persistent, "_pers", "_nopers");
}

/// Tiles that are not the default's (given the rest of the schedule):
/// _m<M>n<N>w<W>. A decoding kernel's name leaves its tiles out.
std::string nameTiles(const NameContext &c) {
  if (c.decoding())
    return "";
  const TileConfig &t = c.config.tiling;
  TileConfig byDefault = c.byDefault([](AttentionSpec &s) {
                           s.blockM = s.blockN = s.numWarps = 0;
                         }).tiling;
  if (t.blockM == byDefault.blockM && t.blockN == byDefault.blockN &&
      t.numWarps == byDefault.numWarps)
    return "";
  return fmt::format("_m{}n{}w{}", t.blockM, t.blockN, t.numWarps);
}

/// Software exp2 for k eighths of the scores: _exp2emu<k>o8.
std::string nameExp2Emulate(const NameContext &c) {
  int64_t eighths = c.schedule().exp2EmulatedEighths;
  return eighths > 0 ? fmt::format("_exp2emu{}o{}", eighths,
                                   kExp2EmulationPeriod)
                     : "";
}

/// A rule's part: most rules read the whole context; a value rule
/// (nameByValue) gets its PROBLEM field's name, value and default.
template <spec::Group G, class Rule, class Get, class ByDefault>
std::string applyRule(const Rule &rule, const NameContext &c, const char *name,
                      Get get, ByDefault byDefault) {
  if constexpr (std::is_invocable_v<const Rule &, const NameContext &>) {
    return rule(c);
  } else {
    static_assert(G == spec::Group::PROBLEM,
                  "a value rule names a PROBLEM field");
    return rule(name, get(c.problem), byDefault());
  }
}

} // namespace

std::string mlir::attn::kernelName(TargetKind target,
                                   const AttentionProblem &problem,
                                   const KernelConfig &config) {
  NameContext context{target, problem, config};
  std::vector<std::pair<int, std::string>> parts;
#define SPEC_FIELD(G, InC, Member, name, json, Kind, Default, Flag, Help, Key, \
                   Rank, Rule, Check)                                          \
  parts.emplace_back(                                                          \
      Rank, applyRule<spec::Group::G>(                                         \
                Rule, context, #name,                                          \
                [](const auto &problem) { return problem.Member; },            \
                [] { return spec::Kind::fromDefault(Default); }));
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  std::string name;
  for (auto &[rank, part] : parts)
    name += part;
  return name;
}

std::string mlir::attn::kernelName(const AttentionSpec &asked) {
  AttentionSpec spec = canonicalSpec(asked);
  AttentionProblem problem = spec;
  // The kernel's problem: a combine kernel's reads no cache (its op's
  // problem), and its scale is 1.
  if (spec.combine) {
    problem = AttentionProblem();
    problem.dtype = spec.dtype;
    problem.headDim = spec.headDim;
    problem.withLse = spec.withLse;
    problem.headPack = spec.headPack;
    problem.scale = 1.0;
    problem.combine = true;
  } else {
    problem.scale = static_cast<float>(softmaxScaleOf(spec));
  }
  return kernelName(spec.target, problem, configure(spec));
}
