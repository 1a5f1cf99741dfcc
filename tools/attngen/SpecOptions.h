//===- SpecOptions.h - attngen's flags, one per spec field -----*- C++ -*-===//
//
// Each row of attnrt/spec_fields.def with a Flag becomes one command-line
// option of attngen; its kind decides the option's form:
//
//   Bool, Combine   --flag                Int, Real   --flag=N
//   NoBool          --no-flag             Tri         --flag=true|false
//   Element, Align, Arch   --flag=choice  Eighths     --flag=k/n
//   Window          --flag=L,R (both sides of the window)
//
//===----------------------------------------------------------------------===//
#ifndef ATTNGEN_TOOLS_SPECOPTIONS_H
#define ATTNGEN_TOOLS_SPECOPTIONS_H

#include "attn/Spec/Spec.h"

#include "llvm/Support/CommandLine.h"

#include <fmt/format.h>

#include <memory>
#include <string>

namespace attngen::cli {

using namespace mlir::attn;
namespace cl = llvm::cl;

/// The category the spec options show under in --help.
cl::OptionCategory &specCategory();

inline llvm::Error flagError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// An option of CLI type `CliType` (absent when the field has no flag).
template <class CliType> class OptionBase {
public:
  OptionBase(std::string flag, const char *help, CliType init)
      : flag(std::move(flag)) {
    if (!this->flag.empty())
      option = std::make_unique<cl::opt<CliType>>(
          llvm::StringRef(this->flag), cl::desc(help), cl::init(init),
          cl::cat(specCategory()));
  }
  bool given() const { return option && option->getNumOccurrences(); }
  /// The flag as written on the command line: --flag.
  std::string flagName() const { return "--" + flag; }
  /// The option as it was given, for messages: --flag=value.
  std::string asGiven() const {
    if constexpr (std::is_same_v<CliType, cl::boolOrDefault>)
      return fmt::format("--{}={}", flag,
                         option->getValue() == cl::BOU_TRUE ? "true" : "false");
    else
      return fmt::format("--{}={}", flag, option->getValue());
  }

protected:
  const CliType &value() const { return option->getValue(); }
  std::string flag;
  std::unique_ptr<cl::opt<CliType>> option;
};

/// --flag for a Bool or Combine field.
class FlagOption : public OptionBase<bool> {
public:
  FlagOption(const char *name, const char *help, bool init)
      : OptionBase(name, help, init) {}
  llvm::Error read(bool &out) const {
    if (option)
      out = value();
    return llvm::Error::success();
  }
};

/// --no-flag for a NoBool field.
class NoFlagOption : public OptionBase<bool> {
public:
  NoFlagOption(const char *name, const char *help, bool init)
      : OptionBase(std::string("no-") + name, help, !init) {}
  llvm::Error read(bool &out) const {
    if (option)
      out = !value();
    return llvm::Error::success();
  }
};

/// --flag=value for an Int or Real field.
template <class T> class NumberOption : public OptionBase<T> {
public:
  NumberOption(const char *name, const char *help, T init)
      : OptionBase<T>(name, help, init) {}
  llvm::Error read(T &out) const {
    if (this->option)
      out = this->value();
    return llvm::Error::success();
  }
};

/// --flag=true|false for a Tri field: unset unless given.
class TriOption : public OptionBase<cl::boolOrDefault> {
public:
  TriOption(const char *name, const char *help, std::optional<bool>)
      : OptionBase(name, help, cl::BOU_UNSET) {}
  llvm::Error read(std::optional<bool> &out) const {
    if (option && value() != cl::BOU_UNSET)
      out = value() == cl::BOU_TRUE;
    return llvm::Error::success();
  }
};

/// --flag=choice for an Element, Align or Arch field.
template <class Kind> class ChoiceOption : public OptionBase<std::string> {
public:
  ChoiceOption(const char *name, const char *help, typename Kind::Type init)
      : OptionBase(name, help, Kind::text(init)) {}
  llvm::Error read(typename Kind::Type &out) const {
    if (!option)
      return llvm::Error::success();
    std::optional<typename Kind::Type> parsed;
    if constexpr (std::is_same_v<Kind, spec::Element>)
      parsed = Kind::parseFlag(value());
    else
      parsed = Kind::parse(value());
    if (!parsed) {
      std::string hint;
      if constexpr (std::is_same_v<Kind, spec::Arch>)
        hint = Kind::hintFor(value());
      return flagError(fmt::format("unsupported --{}={}{}; supported: {}",
                                   flag, value(), hint, Kind::kChoices));
    }
    out = *parsed;
    return llvm::Error::success();
  }
};

/// --flag=k/n for an Eighths field.
class EighthsOption : public OptionBase<std::string> {
public:
  EighthsOption(const char *name, const char *help, int64_t init)
      : OptionBase(name, help, std::to_string(init)) {}
  llvm::Error read(int64_t &out) const {
    if (!option)
      return llvm::Error::success();
    std::optional<int64_t> eighths = spec::Eighths::parse(value());
    if (!eighths)
      return flagError(fmt::format(
          "invalid --{}={}; give a fraction from 0 to 1 in eighths: 0, 1/8, "
          "1/4, 3/8, 1/2, 5/8, 3/4, 7/8 or 1",
          flag, value()));
    out = *eighths;
    return llvm::Error::success();
  }
};

/// --flag=L,R for the Window field (the left side), which sets the right
/// side too; the ranges are validateSpec's to check.
class WindowOption : public OptionBase<std::string> {
public:
  WindowOption(const char *name, const char *help, int64_t init)
      : OptionBase(name, help, fmt::format("{},{}", init, init)) {}
  llvm::Error read(int64_t &left, int64_t &right) const {
    if (!option)
      return llvm::Error::success();
    auto [l, r] = llvm::StringRef(value()).split(',');
    if (r.contains(',') || l.trim().getAsInteger(10, left) ||
        r.trim().getAsInteger(10, right))
      return flagError(fmt::format(
          "invalid --{}={}; give two integers L,R, each -1 (unbounded) or a "
          "number of keys, e.g. --{}=256,0",
          flag, value(), flag));
    return llvm::Error::success();
  }
};

/// The option class of each kind.
template <class Kind> struct OptionOf;
template <> struct OptionOf<spec::Bool> { using type = FlagOption; };
template <> struct OptionOf<spec::Combine> { using type = FlagOption; };
template <> struct OptionOf<spec::NoBool> { using type = NoFlagOption; };
template <> struct OptionOf<spec::Int> { using type = NumberOption<int64_t>; };
template <> struct OptionOf<spec::Real> { using type = NumberOption<double>; };
template <> struct OptionOf<spec::Tri> { using type = TriOption; };
template <> struct OptionOf<spec::Eighths> { using type = EighthsOption; };
template <> struct OptionOf<spec::Window> { using type = WindowOption; };
template <> struct OptionOf<spec::Element> {
  using type = ChoiceOption<spec::Element>;
};
template <> struct OptionOf<spec::Align> {
  using type = ChoiceOption<spec::Align>;
};
template <> struct OptionOf<spec::Backward> {
  using type = ChoiceOption<spec::Backward>;
};
template <> struct OptionOf<spec::Arch> {
  using type = ChoiceOption<spec::Arch>;
};

/// One option per field, as options().<Member>.
struct SpecOptions {
#define SPEC_FIELD(G, InC, Member, name, json, Kind, Default, Flag, Help, ...) \
  OptionOf<spec::Kind>::type Member{Flag, Help,                                \
                                    spec::Kind::fromDefault(Default)};
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD

  /// The spec the flags describe (each field's default where its flag is
  /// absent); an error names the flag that is malformed.
  llvm::Expected<AttentionSpec> read() const {
    AttentionSpec spec;
#define SPEC_FIELD(G, InC, Member, ...)                                        \
  if (llvm::Error error = readField(Member, spec.Member, spec))                \
    return std::move(error);                                                   \
  if (llvm::Error error = checkTuningZero<spec::Group::G>(Member, spec.Member))\
    return std::move(error);
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
    return spec;
  }

  /// Whether the flag of `Member` was given (the window's right side is
  /// given with --window).
  template <class Option> bool given(const Option &option) const {
    if constexpr (std::is_same_v<Option, NumberOption<int64_t>>)
      if (&option == &windowRight)
        return windowLeft.given();
    return option.given();
  }

  /// The flag of `Member` as given (--window=L,R for either window side).
  template <class Option> std::string asGiven(const Option &option) const {
    if constexpr (std::is_same_v<Option, NumberOption<int64_t>>)
      if (&option == &windowRight)
        return windowLeft.asGiven();
    return option.asGiven();
  }

private:
  /// A tile override's 0 means "the tuned choice" in the C API, where a
  /// field cannot be left out; a flag can, so --block-n=0 is refused rather
  /// than silently ignored.
  template <spec::Group G, class Option, class T>
  static llvm::Error checkTuningZero(const Option &option, const T &value) {
    if constexpr (G == spec::Group::TILING &&
                  std::is_same_v<Option, NumberOption<int64_t>>)
      if (option.given() && value == 0)
        return flagError(fmt::format(
            "{}: 0 is not a value of its own; leave the flag out for the "
            "tuned choice",
            option.asGiven()));
    return llvm::Error::success();
  }

  template <class Option, class T>
  static llvm::Error readField(const Option &option, T &out,
                               AttentionSpec &spec) {
    if constexpr (std::is_same_v<Option, WindowOption>)
      return option.read(spec.windowLeft, spec.windowRight);
    else
      return option.read(out);
  }
};

} // namespace attngen::cli

#endif // ATTNGEN_TOOLS_SPECOPTIONS_H
