//===- Problem.cpp - what an attention kernel computes --------------------===//
#include "attn/Dialect/Problem.h"
#include "attn/Dialect/AttnDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"

#include <fmt/format.h>

#include <limits>

using namespace mlir;
using namespace mlir::attn;
using spec::FieldInfo;

/// Largest window side: the kernels' index arithmetic is 32-bit.
static constexpr int64_t kMaxWindowSide = std::numeric_limits<int32_t>::max();

static llvm::Error problemError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error spec::checkHeadDimField(const FieldInfo &, int64_t headDim) {
  return checkHeadDim(headDim);
}

llvm::Error spec::checkHeadDimVField(const FieldInfo &, int64_t headDimV) {
  if (headDimV == 0)
    return llvm::Error::success();
  if (llvm::Error error = checkHeadDim(headDimV))
    return problemError("value " + llvm::toString(std::move(error)) +
                        " (head_dim_v 0 means the head dim)");
  return llvm::Error::success();
}

llvm::Error spec::checkScaleField(const FieldInfo &, double scale) {
  if (scale == 0)
    return llvm::Error::success();
  if (llvm::Error error = checkSoftmaxScale(scale))
    return problemError(llvm::toString(std::move(error)) +
                        " (or 0 for 1/sqrt(head_dim))");
  return llvm::Error::success();
}

/// A factor such as the soft cap takes the softmax scale's place in the
/// kernel (f32, folded into exp2's constant), so it obeys the same rule.
llvm::Error spec::checkOptionalFactorField(const FieldInfo &field,
                                           double value) {
  if (value == 0)
    return llvm::Error::success();
  if (llvm::Error error = checkSoftmaxScale(value, field.name, field.name))
    return problemError(llvm::toString(std::move(error)) +
                        " (or 0 for none)");
  return llvm::Error::success();
}

llvm::Error spec::checkWindowSideField(const FieldInfo &field, int64_t value) {
  if (value >= -1 && value <= kMaxWindowSide)
    return llvm::Error::success();
  llvm::StringRef side = llvm::StringRef(field.name).rsplit('_').second;
  return problemError(fmt::format("window {} = {} is out of range; use -1 "
                                  "(unbounded) or 0 to {} keys",
                                  side.str(), value, kMaxWindowSide));
}

/// FP8 (e4m3) forward kernels: what this first version covers. Each
/// refusal says what to use instead.
static llvm::Error checkFp8Problem(const AttentionProblem &problem) {
  if (problem.combine)
    return problemError("dtype e4m3 (FP8) has no combine kernel: an FP8 "
                        "split-KV kernel's partial outputs are f32 and its "
                        "output bf16, which the bf16 combine kernel merges; "
                        "use dtype bf16 with combine");
  if (problem.backward != BackwardPart::none)
    return problemError("dtype e4m3 (FP8) has forward kernels only, not "
                        "backward ones; train in bf16 or f16");
  // A KV cache's descales are per (batch, kv head) or per tensor: a cache
  // grows a few keys at a time, which block scales do not suit.
  if (problem.kvCache && problem.blockScales)
    return problemError("dtype e4m3 (FP8) with a KV cache takes descales "
                        "per tensor or per (batch, kv head), not per block: "
                        "drop block_scales");
  // A packed batch's V is read as its K and Q are, one TMA box per
  // sequence's block, and transposed in the kernel; its descales are per
  // (sequence, kv head) or per tensor.
  if (problem.varlen && !problem.vRowMajor)
    return problemError("dtype e4m3 (FP8) with varlen reads v row-major, "
                        "packed [total_k, Hkv, D] as k (the producer "
                        "warpgroup transposes each tile): add v_row_major "
                        "(--v-row-major)");
  if (problem.headDim != 64 && problem.headDim != 128 && problem.headDim != 256)
    return problemError(fmt::format(
        "dtype e4m3 (FP8) supports head dims 64, 128 and 256, not {}; pad q "
        "and k (and v) with zero columns to the next of them and keep the "
        "scale 1/sqrt({})",
        problem.headDim, problem.headDim));
  if (problem.headDimV != 0 && problem.headDimV != problem.headDim)
    return problemError("dtype e4m3 (FP8) needs v's head dim equal to q's "
                        "(head_dim_v 0); pad v with zero columns");
  return llvm::Error::success();
}

llvm::Error mlir::attn::verifyProblem(const AttentionProblem &problem) {
  using namespace spec;
  // Each field's own check, in table order.
#define SPEC_FIELD(G, InC, Member, name, json, Kind, Default, Flag, Help, Key, \
                   Rank, Rule, Check)                                          \
  ATTN_CHECK_##G(Member, Check)
#define ATTN_CHECK_PROBLEM(Member, Check)                                      \
  if (llvm::Error error = Check(fieldInfo_##Member, problem.Member))           \
    return error;
#define ATTN_CHECK_TARGET(...)
#define ATTN_CHECK_TILING(...)
#define ATTN_CHECK_SCHEDULE(...)
#define ATTN_CHECK_BACKEND(...)
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTN_CHECK_PROBLEM
#undef ATTN_CHECK_TARGET
#undef ATTN_CHECK_TILING
#undef ATTN_CHECK_SCHEDULE
#undef ATTN_CHECK_BACKEND

  // The mask's rules.
  if (problem.causal && problem.windowRight > 0)
    return problemError(
        fmt::format("window right = {} with a causal mask: a causal "
                    "row sees no key right of its diagonal; use "
                    "window right 0 or -1 with causal, or drop "
                    "causal for a window that looks ahead",
                    problem.windowRight));
  if (problem.dtype == DType::e4m3)
    if (llvm::Error error = checkFp8Problem(problem))
      return error;
  // A paged K/V outside a KV-cache kernel: the bf16/f16 varlen forward
  // (flash_attn_varlen_func with a block_table).
  if (problem.pageSize != 0 && !problem.kvCache) {
    if (!problem.varlen)
      return problemError("page_size reads keys and values from a paged "
                          "cache, which KV-cache and varlen forward kernels "
                          "do: set kv_cache (--kv-cache) or varlen "
                          "(--varlen), or drop page_size");
    if (problem.backward != BackwardPart::none)
      return problemError("page_size with varlen is for the forward pass "
                          "(a paged KV cache at inference); the varlen "
                          "backward reads packed k and v: drop page_size "
                          "(--paged-kv)");
  }
  if (problem.blockScales && problem.dtype != DType::e4m3)
    return problemError("block_scales are the descales of FP8 block "
                        "quantization: use them with dtype e4m3");
  if (problem.vRowMajor && problem.dtype != DType::e4m3)
    return problemError("v_row_major is FP8's V layout (bf16 and f16 "
                        "kernels always read V row-major): use it with "
                        "dtype e4m3, or drop it");

  // A value head dim of its own: the dense, varlen and KV-cache forward
  // kernels and the deterministic backward pair (a split KV-cache kernel's
  // combine kernel has the value head dim as its only one).
  if (problem.headDimV != 0 && problem.headDimV != problem.headDim) {
    bool pair = problem.backward == BackwardPart::none ||
                problem.backward == BackwardPart::dq ||
                problem.backward == BackwardPart::dkdv;
    if (!pair)
      return problemError(fmt::format(
          "head_dim_v = {} (Q and K have {}) is not supported by the "
          "one-kernel backward (pre, fused, post); use the deterministic "
          "pair, backward dq and dkdv",
          problem.headDimV, problem.headDim));
    if (problem.combine)
      return problemError(fmt::format(
          "head_dim_v = {} with combine: the combine kernel merges outputs "
          "of one head dim; give it the split kernel's value head dim as "
          "head_dim ({}) and no head_dim_v",
          problem.headDimV, problem.headDimV));
  }
  return llvm::Error::success();
}

llvm::SmallVector<llvm::StringRef>
mlir::attn::kernelTensorRoles(const AttentionProblem &problem) {
  SmallVector<StringRef> roles;
  if (problem.combine) {
    roles = {"o_partial", "lse_partial", "o"};
    if (problem.withLse)
      roles.push_back("lse");
    return roles;
  }
  if (problem.kvCache) {
    roles = {"q", "k", "v", "o", "cache_seqlens"};
    if (problem.pageSize > 0)
      roles.push_back("block_table");
    if (problem.withLse)
      roles.push_back("lse");
    if (problem.splitKv)
      roles.append({"o_partial", "lse_partial"});
    if (problem.alibi)
      roles.push_back("alibi_slopes");
    if (problem.dtype == DType::e4m3)
      roles.append({"q_descale", "k_descale", "v_descale"});
    return roles;
  }
  if (problem.backward != BackwardPart::none)
    roles = {"q", "k", "v", "o", "dout", "lse", "delta", "dq", "dk", "dv"};
  else {
    roles = {"q", "k", "v", "o"};
    if (problem.withLse)
      roles.push_back("lse");
  }
  if (problem.varlen)
    roles.append({"cu_seqlens_q", "cu_seqlens_k"});
  if (problem.varlen && problem.pageSize > 0)
    roles.push_back("block_table");
  if (problem.alibi)
    roles.push_back("alibi_slopes");
  if (problem.dtype == DType::e4m3)
    roles.append({"q_descale", "k_descale", "v_descale"});
  if (problem.backward == BackwardPart::pre ||
      problem.backward == BackwardPart::fused ||
      problem.backward == BackwardPart::post)
    roles.push_back("dq_accum");
  return roles;
}

bool AttentionProblem::hasMonotoneBlockLengths() const {
  bool looping = backward == BackwardPart::dq ||
                 backward == BackwardPart::dkdv ||
                 backward == BackwardPart::fused;
  return looping && (causal || windowRight >= 0) && windowLeft < 0;
}

bool AttentionProblem::sameProblem(const AttentionProblem &other) const {
  bool same = true;
  spec::forEachFieldPairOf<spec::Group::PROBLEM>(
      *this, other, [&](const FieldInfo &, auto, const auto &a, const auto &b) {
        same = same && a == b;
      });
  return same;
}

bool AttentionSchedule::operator==(const AttentionSchedule &other) const {
  bool same = true;
  spec::forEachFieldPairOf<spec::Group::SCHEDULE>(
      *this, other, [&](const FieldInfo &, auto, const auto &a, const auto &b) {
        same = same && a == b;
      });
  return same;
}

/// A field's value as something llvm::hash_combine takes.
template <class T> static auto hashOf(const T &value) {
  if constexpr (std::is_floating_point_v<T>)
    return llvm::bit_cast<uint64_t>(static_cast<double>(value));
  else
    return value;
}

/// The hash of the fields of group `G` of `fields`.
template <spec::Group G, class Struct>
static llvm::hash_code hashFields(const Struct &fields) {
  llvm::hash_code hash = llvm::hash_value(static_cast<int>(G));
  spec::forEachFieldOf<G>(fields, [&](const FieldInfo &, auto,
                                      const auto &value) {
    hash = llvm::hash_combine(hash, hashOf(value));
  });
  return hash;
}

llvm::hash_code mlir::attn::hash_value(const AttentionProblem &problem) {
  return hashFields<spec::Group::PROBLEM>(problem);
}

llvm::hash_code mlir::attn::hash_value(const AttentionSchedule &schedule) {
  return hashFields<spec::Group::SCHEDULE>(schedule);
}

//===----------------------------------------------------------------------===//
// #attn.problem
//===----------------------------------------------------------------------===//

namespace {
void printValue(AsmPrinter &p, bool v) { p << (v ? "true" : "false"); }
void printValue(AsmPrinter &p, int64_t v) { p << v; }
/// The shortest spelling that reads back as the same double, always with a
/// point or an exponent (MLIR reads an integer literal as no float).
void printValue(AsmPrinter &p, double v) {
  std::string text = fmt::format("{}", v);
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  p << text;
}
void printValue(AsmPrinter &p, DType v) { p << spec::Element::text(v); }
void printValue(AsmPrinter &p, CausalAlign v) { p << spec::Align::key(v); }
void printValue(AsmPrinter &p, BackwardPart v) { p << spec::Backward::key(v); }

ParseResult parseValue(AsmParser &p, bool &v) {
  StringRef word;
  SMLoc loc = p.getCurrentLocation();
  if (p.parseKeyword(&word))
    return failure();
  if (word != "true" && word != "false")
    return p.emitError(loc, "expected true or false, got '") << word << "'";
  v = word == "true";
  return success();
}
ParseResult parseValue(AsmParser &p, int64_t &v) { return p.parseInteger(v); }
ParseResult parseValue(AsmParser &p, double &v) { return p.parseFloat(v); }
ParseResult parseValue(AsmParser &p, DType &v) {
  StringRef word;
  SMLoc loc = p.getCurrentLocation();
  if (p.parseKeyword(&word))
    return failure();
  std::optional<DType> parsed = spec::Element::parse(word);
  if (!parsed)
    return p.emitError(loc, "expected f16 or bf16, got '") << word << "'";
  v = *parsed;
  return success();
}
ParseResult parseValue(AsmParser &p, CausalAlign &v) {
  StringRef word;
  SMLoc loc = p.getCurrentLocation();
  if (p.parseKeyword(&word))
    return failure();
  std::optional<CausalAlign> parsed = symbolizeCausalAlign(word);
  if (!parsed)
    return p.emitError(loc, "expected top_left or bottom_right, got '")
           << word << "'";
  v = *parsed;
  return success();
}
ParseResult parseValue(AsmParser &p, BackwardPart &v) {
  StringRef word;
  SMLoc loc = p.getCurrentLocation();
  if (p.parseKeyword(&word))
    return failure();
  std::optional<BackwardPart> parsed = spec::Backward::parse(word);
  if (!parsed)
    return p.emitError(loc, "expected none, dq or dkdv, got '") << word << "'";
  v = *parsed;
  return success();
}
} // namespace

namespace {
/// Prints `<name = value, ...>` for every field of group `G` of `fields`,
/// by its name in spec_fields.def, in table order.
template <spec::Group G, class Struct>
void printFields(AsmPrinter &p, const Struct &fields) {
  p << "<";
  llvm::StringRef separator = "";
  spec::forEachFieldOf<G>(
      fields, [&](const FieldInfo &field, auto, const auto &value) {
        p << separator << field.name << " = ";
        printValue(p, value);
        separator = ", ";
      });
  p << ">";
}

/// Parses what printFields prints: any subset of the fields, in any order,
/// each once; those left out keep their defaults. An unknown name is an
/// error that lists the known ones.
template <spec::Group G, class Struct>
ParseResult parseFields(AsmParser &p, Struct &fields, StringRef attrName) {
  llvm::StringSet<> seen;
  if (p.parseLess())
    return failure();
  if (succeeded(p.parseOptionalGreater()))
    return success();
  do {
    SMLoc loc = p.getCurrentLocation();
    std::string name;
    if (p.parseKeywordOrString(&name) || p.parseEqual())
      return failure();
    if (!seen.insert(name).second)
      return p.emitError(loc) << attrName << " has '" << name << "' twice";
    bool known = false;
    ParseResult result = success();
    spec::forEachFieldOf<G>(fields,
                            [&](const FieldInfo &field, auto, auto &value) {
                              if (known || name != field.name)
                                return;
                              known = true;
                              result = parseValue(p, value);
                            });
    if (!known) {
      std::string names;
      spec::forEachFieldOf<G>(fields, [&](const FieldInfo &field, auto, auto &) {
        names += (names.empty() ? "" : ", ") + std::string(field.name);
      });
      return p.emitError(loc) << attrName << " has no field '" << name
                              << "'; its fields: " << names;
    }
    if (failed(result))
      return failure();
  } while (succeeded(p.parseOptionalComma()));
  return p.parseGreater();
}
} // namespace

/// `#attn.problem<dtype = bf16, head_dim = 128, causal = true, ...>`.
void ProblemAttr::print(AsmPrinter &p) const {
  printFields<spec::Group::PROBLEM>(p, getValue());
}

Attribute ProblemAttr::parse(AsmParser &p, Type) {
  AttentionProblem problem;
  if (failed(parseFields<spec::Group::PROBLEM>(p, problem, "#attn.problem")))
    return {};
  return getChecked([&] { return p.emitError(p.getNameLoc()); },
                    p.getContext(), problem);
}

/// `#attn.schedule<block_skip = true, warp_specialize = true, ...>`.
void ScheduleAttr::print(AsmPrinter &p) const {
  printFields<spec::Group::SCHEDULE>(p, getValue());
}

Attribute ScheduleAttr::parse(AsmParser &p, Type) {
  AttentionSchedule schedule;
  if (failed(parseFields<spec::Group::SCHEDULE>(p, schedule, "#attn.schedule")))
    return {};
  return getChecked([&] { return p.emitError(p.getNameLoc()); },
                    p.getContext(), schedule);
}

LogicalResult
ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     AttentionSchedule schedule) {
  constexpr int64_t kEighths = 8;
  if (schedule.exp2EmulatedEighths < 0 ||
      schedule.exp2EmulatedEighths > kEighths)
    return emitError() << "invalid #attn.schedule: exp2_emulated_eighths = "
                       << schedule.exp2EmulatedEighths
                       << " is not a number of eighths from 0 to 8";
  return success();
}

std::optional<AttentionSchedule> mlir::attn::getSchedule(Operation *kernel) {
  if (auto attr = kernel->getAttrOfType<ScheduleAttr>(kScheduleAttrName))
    return attr.getValue();
  return std::nullopt;
}

LogicalResult ProblemAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  AttentionProblem problem) {
  if (llvm::Error error = verifyProblem(problem))
    return emitError() << "invalid #attn.problem: "
                       << llvm::toString(std::move(error));
  if (!(problem.scale > 0))
    return emitError() << "invalid #attn.problem: the scale of a kernel is "
                          "spelled out (positive), got "
                       << problem.scale;
  return success();
}

std::optional<AttentionProblem> mlir::attn::getProblem(Operation *kernel) {
  if (auto attr = kernel->getAttrOfType<ProblemAttr>(kProblemAttrName))
    return attr.getValue();
  return std::nullopt;
}

std::optional<AttentionProblem> mlir::attn::problemOfKernel(Operation *func) {
  if (std::optional<AttentionProblem> problem = getProblem(func))
    return problem;
  std::optional<AttentionProblem> found;
  func->walk([&](Operation *op) {
    if (auto attention = dyn_cast<AttentionOp>(op))
      found = attention.problem();
    else if (auto kv = dyn_cast<AttentionKvCacheOp>(op))
      found = kv.problem();
    else if (auto combine = dyn_cast<CombineSplitsOp>(op))
      found = combine.problem();
    else if (auto backward = dyn_cast<AttentionBackwardOp>(op))
      found = backward.problem();
  });
  return found;
}
