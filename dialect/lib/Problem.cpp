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

llvm::Error spec::checkScaleField(const FieldInfo &, double scale) {
  if (scale == 0)
    return llvm::Error::success();
  if (llvm::Error error = checkSoftmaxScale(scale))
    return problemError(llvm::toString(std::move(error)) +
                        " (or 0 for 1/sqrt(head_dim))");
  return llvm::Error::success();
}

/// The cap takes the softmax scale's place in the kernel (f32, folded into
/// exp2's constant), so it obeys the same rule.
llvm::Error spec::checkSoftcapField(const FieldInfo &, double softcap) {
  if (softcap == 0)
    return llvm::Error::success();
  if (llvm::Error error = checkSoftmaxScale(softcap, "softcap", "softcap"))
    return problemError(llvm::toString(std::move(error)) +
                        " (or 0 for no soft cap)");
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
  if (problem.causalAlign == CausalAlign::bottom_right &&
      !problem.hasDiagonal())
    return problemError(
        "causal alignment bottom-right needs a causal mask or a "
        "window (it places their diagonal): set causal (--causal) "
        "or a window (--window=L,R), or leave the alignment "
        "top-left");
  return llvm::Error::success();
}

bool AttentionProblem::sameProblem(const AttentionProblem &other) const {
#define SPEC_FIELD(G, InC, Member, ...) ATTN_SAME_##G(Member)
#define ATTN_SAME_PROBLEM(Member)                                              \
  if (!(Member == other.Member))                                               \
    return false;
#define ATTN_SAME_TARGET(...)
#define ATTN_SAME_TILING(...)
#define ATTN_SAME_SCHEDULE(...)
#define ATTN_SAME_BACKEND(...)
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTN_SAME_PROBLEM
  return true;
}

/// A field's value as something llvm::hash_combine takes.
template <class T> static auto hashOf(const T &value) {
  if constexpr (std::is_floating_point_v<T>)
    return llvm::bit_cast<uint64_t>(static_cast<double>(value));
  else
    return value;
}

llvm::hash_code mlir::attn::hash_value(const AttentionProblem &problem) {
  llvm::hash_code hash = llvm::hash_value(0);
#define SPEC_FIELD(G, InC, Member, ...) ATTN_SAME_##G(Member)
#define ATTN_SAME_PROBLEM(Member)                                              \
  hash = llvm::hash_combine(hash, hashOf(problem.Member));
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTN_SAME_PROBLEM
#undef ATTN_SAME_TARGET
#undef ATTN_SAME_TILING
#undef ATTN_SAME_SCHEDULE
#undef ATTN_SAME_BACKEND
  return hash;
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
} // namespace

/// `#attn.problem<dtype = bf16, head_dim = 128, causal = true, ...>`: every
/// PROBLEM field of spec_fields.def by its name, in table order.
void ProblemAttr::print(AsmPrinter &p) const {
  const AttentionProblem &problem = getValue();
  p << "<";
  llvm::StringRef separator = "";
  spec::forEachFieldOf<spec::Group::PROBLEM>(
      problem, [&](const FieldInfo &field, auto, const auto &value) {
        p << separator << field.name << " = ";
        printValue(p, value);
        separator = ", ";
      });
  p << ">";
}

/// Any subset of the fields, in any order, each once; those left out keep
/// their defaults. An unknown name is an error that lists the known ones.
Attribute ProblemAttr::parse(AsmParser &p, Type) {
  AttentionProblem problem;
  llvm::StringSet<> seen;
  if (p.parseLess())
    return {};
  if (succeeded(p.parseOptionalGreater()))
    return getChecked([&] { return p.emitError(p.getNameLoc()); },
                      p.getContext(), problem);
  do {
    SMLoc loc = p.getCurrentLocation();
    std::string name;
    if (p.parseKeywordOrString(&name) || p.parseEqual())
      return {};
    if (!seen.insert(name).second) {
      p.emitError(loc, "#attn.problem has '") << name << "' twice";
      return {};
    }
    bool known = false;
    ParseResult result = success();
    spec::forEachFieldOf<spec::Group::PROBLEM>(
        problem, [&](const FieldInfo &field, auto, auto &value) {
          if (known || name != field.name)
            return;
          known = true;
          result = parseValue(p, value);
        });
    if (!known) {
      std::string names;
      spec::forEachFieldOf<spec::Group::PROBLEM>(
          problem, [&](const FieldInfo &field, auto, auto &) {
            names += (names.empty() ? "" : ", ") + std::string(field.name);
          });
      p.emitError(loc, "#attn.problem has no field '")
          << name << "'; its fields: " << names;
      return {};
    }
    if (failed(result))
      return {};
  } while (succeeded(p.parseOptionalComma()));
  if (p.parseGreater())
    return {};
  return getChecked([&] { return p.emitError(p.getNameLoc()); },
                    p.getContext(), problem);
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
