//===- TuningOptions.cpp - the tiling and schedule rows as options --------===//
#include "TuningOptions.h"

#include <fmt/format.h>

#include <deque>
#include <mutex>

using namespace mlir::attn;

/// `text`, kept for the process's life (options hold their names and help
/// by reference).
static const char *intern(std::string text) {
  static std::mutex mutex;
  static std::deque<std::string> texts;
  std::lock_guard<std::mutex> lock(mutex);
  for (const std::string &known : texts)
    if (known == text)
      return known.c_str();
  return texts.emplace_back(std::move(text)).c_str();
}

const char *tuning::optionName(const char *fieldName) {
  std::string name = fieldName;
  for (char &c : name)
    if (c == '_')
      c = '-';
  return intern(std::move(name));
}

const char *tuning::prefixedHelp(const char *prefix, const char *help) {
  return intern(std::string(prefix) + help);
}

llvm::Error tuning::read(const char *name, const std::string &value,
                         std::optional<bool> &out) {
  if (value == "auto")
    out = std::nullopt;
  else if (value == "true" || value == "false")
    out = value == "true";
  else
    return spec::fieldError(fmt::format(
        "option {}={} is none of auto, true, false", optionName(name), value));
  return llvm::Error::success();
}

std::string tuning::write(const std::optional<bool> &value) {
  return OptionOf<spec::Tri>::init(value);
}
