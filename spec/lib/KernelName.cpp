//===- KernelName.cpp - a kernel's name from its spec ---------------------===//
//
// A kernel's name is the parts of its fields (the NameRule column of
// spec_fields.def) in the order of their NameRank: a prefix for the kind of
// kernel, the target, dtype and head dim, the problem's features, then a
// suffix for every schedule choice that is not the default, so that an
// ablation's kernel never shares a name (or a cache entry) with the
// default's:
//
//   attn_fwd_sm90a_bf16_d128_causal            causal, top-left
//   attn_fwd_sm90a_bf16_d64_window_l256_r0_br  a causal window, bottom-right
//   attn_kvcache_sm90a_bf16_d128_pack4_page16_split
//   attn_fwd_sm90a_bf16_d128_nopp_m64n128w4    an ablation with its tiles
//
//===----------------------------------------------------------------------===//
#include "KvCacheSpec.h"
#include "attn/Spec/Spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

using namespace mlir;
using namespace mlir::attn;

/// exp2 emulation counts eighths of the score blocks.
static constexpr int64_t kExp2EmulationPeriod = 8;

namespace {

//===----------------------------------------------------------------------===//
// The NameRule column of spec_fields.def: each takes the canonical spec.
//===----------------------------------------------------------------------===//

bool fa3(const AttentionSpec &s) { return usesFa3Schedule(s); }

std::string nameNone(const AttentionSpec &) { return ""; }

/// attn_fwd, attn_kvcache or attn_combine.
std::string namePrefix(const AttentionSpec &s) {
  return s.combine ? "attn_combine" : s.kvCache ? "attn_kvcache" : "attn_fwd";
}

std::string nameArch(const AttentionSpec &s) {
  return s.target == TargetKind::sm_90a ? "_sm90a" : "_sm80";
}

std::string nameDtype(const AttentionSpec &s) {
  return "_" + spec::Element::text(s.dtype);
}

std::string nameHeadDim(const AttentionSpec &s) {
  return fmt::format("_d{}", s.headDim);
}

std::string nameVarlen(const AttentionSpec &s) {
  return s.varlen && !s.combine ? "_varlen" : "";
}

/// _causal is top-left (PyTorch's is_causal), _causal_br bottom-right
/// (FlashAttention's). A window: _window, _l<left> and _r<right> for its
/// bounded sides (r0: causal), _br when bottom-right aligned:
/// _window_l256_r0_br.
std::string nameMask(const AttentionSpec &s) {
  if (s.combine)
    return "";
  bool bottomRight = s.causalAlign == CausalAlign::bottom_right;
  if (s.windowLeft >= 0 || s.windowRight >= 0) {
    std::string window = "_window";
    if (s.windowLeft >= 0)
      window += fmt::format("_l{}", s.windowLeft);
    if (s.causal || s.windowRight >= 0)
      window += fmt::format("_r{}", s.causal ? 0 : s.windowRight);
    return bottomRight ? window + "_br" : window;
  }
  if (s.causal)
    return bottomRight ? "_causal_br" : "_causal";
  return "";
}

/// A real number as an identifier, in its shortest round-trip spelling
/// ('.' -> 'p', '-' -> 'm', '+' dropped): 30, 50p5, 1em05.
std::string identifierOf(double value) {
  std::string text;
  for (char c : fmt::format("{}", value))
    if (c == '.')
      text += 'p';
    else if (c == '-')
      text += 'm';
    else if (c != '+')
      text += c;
  return text;
}

std::string nameSoftcap(const AttentionSpec &s) {
  return s.softcap > 0 && !s.combine ? "_softcap" + identifierOf(s.softcap)
                                     : "";
}

std::string nameScale(const AttentionSpec &) { return ""; }

std::string nameLse(const AttentionSpec &s) {
  return s.withLse ? "" : "_nolse";
}

std::string nameHeadPack(const AttentionSpec &s) {
  return s.kvCache && s.headPack > 1 ? fmt::format("_pack{}", s.headPack)
                                     : "";
}

std::string namePageSize(const AttentionSpec &s) {
  return s.kvCache && s.pageSize > 0 ? fmt::format("_page{}", s.pageSize)
                                     : "";
}

std::string nameSplitKv(const AttentionSpec &s) {
  return s.splitKv && !s.combine ? "_split" : "";
}

// The schedule: a combine kernel has none of its own.

std::string nameStages(const AttentionSpec &s) {
  bool shown = s.target == TargetKind::sm_80 || fa3(s);
  return !s.combine && shown && s.stages > 0 ? fmt::format("_s{}", s.stages)
                                             : "";
}

std::string nameWarpSpecialize(const AttentionSpec &s) {
  return !s.combine && s.target == TargetKind::sm_90a && !s.warpSpecialize
             ? "_nows"
             : "";
}

std::string nameIntraWgOverlap(const AttentionSpec &s) {
  return !s.combine && fa3(s) && !s.intraWgOverlap ? "_noovl" : "";
}

std::string namePingpong(const AttentionSpec &s) {
  return !s.combine && fa3(s) && !s.pingpong ? "_nopp" : "";
}

std::string nameTmaStore(const AttentionSpec &s) {
  if (s.combine || !fa3(s) || !s.tmaStore || s.kvCache ||
      *s.tmaStore == tmaStoreByDefault(s))
    return "";
  return *s.tmaStore ? "_tma" : "_notma";
}

std::string namePersistent(const AttentionSpec &s) {
  if (s.combine || !fa3(s) || !s.persistent ||
      *s.persistent == persistentByDefault(s))
    return "";
  return *s.persistent ? "_pers" : "_nopers";
}

/// Tile overrides that change the tiles: _m<M>n<N>w<W>, so an override's
/// kernel never shares the default's name.
std::string nameTiles(const AttentionSpec &s) {
  if (s.combine || s.kvCache || !overridesTiles(s))
    return "";
  TileConfig asked = tileConfigOf(s);
  return fmt::format("_m{}n{}w{}", asked.blockM, asked.blockN, asked.numWarps);
}

std::string nameFtz(const AttentionSpec &s) {
  return !s.combine && !s.flushDenormals ? "_noftz" : "";
}

/// The soft cap's running max kept where attn-bounded-softmax would fix it.
std::string nameBoundedSoftmax(const AttentionSpec &s) {
  return !s.combine && !s.boundedSoftmax && boundedSoftmaxApplies(s)
             ? "_runmax"
             : "";
}

/// Software exp2 for k eighths of the scores: _exp2emu<k>o8.
std::string nameExp2Emulate(const AttentionSpec &s) {
  if (s.combine || s.exp2EmulatedEighths <= 0)
    return "";
  return fmt::format("_exp2emu{}o{}", s.exp2EmulatedEighths,
                     kExp2EmulationPeriod);
}

} // namespace

std::string mlir::attn::kernelName(const AttentionSpec &asked) {
  AttentionSpec spec = canonicalSpec(asked);
  std::vector<std::pair<int, std::string>> parts;
#define SPEC_FIELD(G, InC, Member, name, json, Kind, Default, Flag, Help, Key, \
                   Rank, Rule, Check)                                          \
  parts.emplace_back(Rank, Rule(spec));
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  std::string name;
  for (auto &[rank, part] : parts)
    name += part;
  return name;
}
