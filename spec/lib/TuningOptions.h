//===- TuningOptions.h - the tiling and schedule rows as options -*- C++ -*-===//
//
// attn-configure and the attn-pipeline family take the TILING and SCHEDULE
// rows of attnrt/spec_fields.def as pass options, named after the table's
// fields (block-m, warp-specialize, tma-store, ...). ATTN_TUNING_OPTIONS
// declares them in a pass or a pipeline's options; readTuningOptions and
// writeTuningOptions move them to and from a spec.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_SPEC_LIB_TUNINGOPTIONS_H
#define ATTN_SPEC_LIB_TUNINGOPTIONS_H

#include "attn/Spec/Spec.h"

#include "llvm/Support/CommandLine.h"

#include <string>

namespace mlir::attn::tuning {

/// The option name of a field: its table name with dashes (block_m ->
/// block-m), interned for the option's lifetime.
const char *optionName(const char *fieldName);

/// The option's help: the field's help (which describes attngen's flag),
/// prefixed for a NoBool with what `false` means and for Eighths with its
/// unit, interned.
template <class Kind> const char *optionHelp(const char *help);
const char *prefixedHelp(const char *prefix, const char *help);
template <class Kind> const char *optionHelp(const char *help) {
  if constexpr (std::is_same_v<Kind, spec::NoBool>)
    return prefixedHelp("On where it applies; false: ", help);
  else if constexpr (std::is_same_v<Kind, spec::Eighths>)
    return prefixedHelp("In eighths, 0 to 8 (attngen's flag takes the "
                        "fraction): ",
                        help);
  else
    return help;
}

/// The option's value type and default per kind: integers, booleans, and
/// auto/true/false for a Tri.
template <class Kind> struct OptionOf {
  using Type = typename Kind::Type;
  static Type init(Type value) { return value; }
};
template <> struct OptionOf<spec::Tri> {
  using Type = std::string;
  static Type init(std::optional<bool> value) {
    return value ? (*value ? "true" : "false") : "auto";
  }
};

/// An option's value into the spec field of its kind.
template <class T> llvm::Error read(const char *, const T &value, T &out) {
  out = value;
  return llvm::Error::success();
}
llvm::Error read(const char *name, const std::string &value,
                 std::optional<bool> &out);

/// A spec field into its option's value.
template <class T> T write(const T &value) { return value; }
std::string write(const std::optional<bool> &value);

} // namespace mlir::attn::tuning

/// One option per TILING and SCHEDULE row, as members of a pass or of a
/// pipeline's options: TuningOptionMembers.def, included in the class body
/// with ATTN_OPTION naming the option template (Pass::Option or
/// PassPipelineOptions<...>::Option), expands these.
#define ATTN_TUNING_OPTION_TILING(Member, name, Kind, Default, Help)           \
  ATTN_OPTION<typename ::mlir::attn::tuning::OptionOf<                         \
      ::mlir::attn::spec::Kind>::Type>                                         \
      Member{*this, ::mlir::attn::tuning::optionName(#name),                   \
             ::llvm::cl::desc(                                                 \
                 ::mlir::attn::tuning::optionHelp<::mlir::attn::spec::Kind>(   \
                     Help)),                                                   \
             ::llvm::cl::init(                                                 \
                 ::mlir::attn::tuning::OptionOf<::mlir::attn::spec::Kind>::    \
                     init(::mlir::attn::spec::Kind::fromDefault(Default)))};
#define ATTN_TUNING_OPTION_SCHEDULE ATTN_TUNING_OPTION_TILING
#define ATTN_TUNING_OPTION_PROBLEM(...)
#define ATTN_TUNING_OPTION_TARGET(...)
#define ATTN_TUNING_OPTION_BACKEND(...)

namespace mlir::attn::tuning {

/// Sets the tiling and schedule fields of `spec` from `options` (a pass or
/// a pipeline's options with ATTN_TUNING_OPTIONS); an error names a value
/// that is none of its option's.
template <class Options>
llvm::Error readTuningOptions(const Options &options, AttentionSpec &spec) {
#define SPEC_FIELD(G, InC, Member, name, ...) ATTN_READ_OPTION_##G(Member, name)
#define ATTN_READ_OPTION_TILING(Member, name)                                  \
  if (llvm::Error error = read(#name, options.Member.getValue(), spec.Member))  \
    return error;
#define ATTN_READ_OPTION_SCHEDULE ATTN_READ_OPTION_TILING
#define ATTN_READ_OPTION_PROBLEM(...)
#define ATTN_READ_OPTION_TARGET(...)
#define ATTN_READ_OPTION_BACKEND(...)
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTN_READ_OPTION_TILING
#undef ATTN_READ_OPTION_SCHEDULE
#undef ATTN_READ_OPTION_PROBLEM
#undef ATTN_READ_OPTION_TARGET
#undef ATTN_READ_OPTION_BACKEND
  return llvm::Error::success();
}

/// Sets `options` from the tiling and schedule fields of `spec`.
template <class Options>
void writeTuningOptions(const AttentionSpec &spec, Options &options) {
#define SPEC_FIELD(G, InC, Member, name, ...) ATTN_WRITE_OPTION_##G(Member)
#define ATTN_WRITE_OPTION_TILING(Member) options.Member = write(spec.Member);
#define ATTN_WRITE_OPTION_SCHEDULE ATTN_WRITE_OPTION_TILING
#define ATTN_WRITE_OPTION_PROBLEM(...)
#define ATTN_WRITE_OPTION_TARGET(...)
#define ATTN_WRITE_OPTION_BACKEND(...)
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTN_WRITE_OPTION_TILING
#undef ATTN_WRITE_OPTION_SCHEDULE
#undef ATTN_WRITE_OPTION_PROBLEM
#undef ATTN_WRITE_OPTION_TARGET
#undef ATTN_WRITE_OPTION_BACKEND
}

} // namespace mlir::attn::tuning

#endif // ATTN_SPEC_LIB_TUNINGOPTIONS_H
