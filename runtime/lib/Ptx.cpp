//===- Ptx.cpp - Consistency check of PTX text against metadata -------------===//

#include "Ptx.h"

#include "Error.h"
#include "Metadata.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace attnrt {

namespace {

/// Hint appended to every PTX/metadata mismatch.
constexpr const char *kRegenerate =
    "the PTX and its metadata do not belong together; regenerate both with the same attngen run";

/// Splits PTX into tokens: words ([A-Za-z0-9_$.%]+), strings and single
/// punctuation characters; comments (// and /* */) are dropped.
std::vector<std::string> tokenize(const char *text) {
  std::vector<std::string> tokens;
  const char *p = text;
  auto isWord = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '.' || c == '%';
  };
  while (*p) {
    char c = *p;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++p;
    } else if (c == '/' && p[1] == '/') {
      while (*p && *p != '\n')
        ++p;
    } else if (c == '/' && p[1] == '*') {
      const char *end = std::strstr(p + 2, "*/");
      p = end ? end + 2 : p + std::strlen(p);
    } else if (c == '"') {
      const char *start = p++;
      while (*p && *p != '"')
        ++p;
      if (*p)
        ++p;
      tokens.emplace_back(start, p);
    } else if (isWord(c)) {
      const char *start = p;
      while (*p && isWord(*p))
        ++p;
      tokens.emplace_back(start, p);
    } else {
      tokens.emplace_back(1, c);
      ++p;
    }
  }
  return tokens;
}

/// Bytes of a PTX fundamental type token (".u64" -> 8), 0 if not a type.
unsigned typeBytes(const std::string &type) {
  static const struct {
    const char *name;
    unsigned bytes;
  } types[] = {{".b8", 1},   {".u8", 1},   {".s8", 1},   {".b16", 2},  {".u16", 2},   {".s16", 2},
               {".f16", 2},  {".bf16", 2}, {".b32", 4},  {".u32", 4},  {".s32", 4},   {".f32", 4},
               {".b64", 8},  {".u64", 8},  {".s64", 8},  {".f64", 8},  {".b128", 16}, {".f16x2", 4},
               {".bf16x2", 4}};
  for (const auto &t : types)
    if (type == t.name)
      return t.bytes;
  return 0;
}

/// One parameter of a PTX entry as declared.
struct PtxParam {
  std::string name;
  unsigned bytes = 0;
};

/// Parses the parameter list starting at tokens[i] == "(". Returns false and
/// sets `error` if the declaration is not understood.
bool parseParams(const std::vector<std::string> &tokens, size_t i, std::vector<PtxParam> &params,
                 std::string &error) {
  ++i; // '('
  if (i < tokens.size() && tokens[i] == ")")
    return true;
  while (i < tokens.size()) {
    if (tokens[i] != ".param") {
      error = format("expected '.param' but found '%s'", tokens[i].c_str());
      return false;
    }
    ++i;
    PtxParam param;
    unsigned elementBytes = 0;
    unsigned count = 1;
    for (; i < tokens.size() && tokens[i] != "," && tokens[i] != ")"; ++i) {
      const std::string &token = tokens[i];
      if (unsigned bytes = typeBytes(token)) {
        elementBytes = bytes;
      } else if (token == ".align") {
        ++i; // skip the alignment value
      } else if (token == "[") {
        if (i + 2 >= tokens.size() || tokens[i + 2] != "]") {
          error = format("cannot read the array size of parameter '%s'", param.name.c_str());
          return false;
        }
        count = static_cast<unsigned>(std::strtoul(tokens[i + 1].c_str(), nullptr, 10));
        i += 2;
      } else if (token[0] != '.') {
        param.name = token;
      }
      // Other state-space qualifiers (.ptr, .global, ...) do not change the size.
    }
    if (elementBytes == 0) {
      error = format("parameter '%s' has no type the runtime knows", param.name.c_str());
      return false;
    }
    param.bytes = elementBytes * count;
    params.push_back(param);
    if (i >= tokens.size())
      break;
    if (tokens[i] == ")")
      return true;
    ++i; // ','
  }
  error = "the parameter list is not closed by ')'";
  return false;
}

} // namespace

attnrt_status checkPtx(const char *ptx, const attnrt_kernel_info &info, const KernelAbi &abi) {
  std::vector<std::string> tokens = tokenize(ptx);

  // .target sm_90a[, debug]
  size_t i = 0;
  while (i < tokens.size() && tokens[i] != ".target")
    ++i;
  if (i + 1 >= tokens.size())
    return fail(ATTNRT_ERROR_INVALID_PTX,
                "the PTX text has no .target directive: pass the kernel's .ptx file (as text), not "
                "a cubin or another file");
  const std::string &target = tokens[i + 1];
  if (target != info.arch)
    return fail(ATTNRT_ERROR_INVALID_PTX,
                "the PTX targets %s but its metadata says \"arch\": \"%s\"; %s", target.c_str(),
                info.arch, kRegenerate);

  // .entry <kernel> ( params )
  std::vector<std::string> entries;
  size_t entry = tokens.size();
  for (size_t t = 0; t + 1 < tokens.size(); ++t) {
    if (tokens[t] != ".entry")
      continue;
    entries.push_back(tokens[t + 1]);
    if (tokens[t + 1] == info.kernel) {
      entry = t;
      break;
    }
  }
  if (entry == tokens.size()) {
    std::string list;
    for (const std::string &name : entries)
      list += (list.empty() ? "" : ", ") + name;
    return fail(ATTNRT_ERROR_INVALID_PTX,
                "the PTX has no .entry named '%s' (it has: %s): the metadata's \"kernel\" must be "
                "the PTX entry name; %s",
                info.kernel, list.empty() ? "none" : list.c_str(), kRegenerate);
  }

  std::vector<PtxParam> params;
  std::string error;
  if (entry + 2 < tokens.size() && tokens[entry + 2] == "(" &&
      !parseParams(tokens, entry + 2, params, error))
    return fail(ATTNRT_ERROR_INVALID_PTX,
                "cannot read the parameter list of PTX entry '%s': %s; check that the file is PTX "
                "emitted by attngen",
                info.kernel, error.c_str());

  const std::vector<KernelParam> &expected = abi.params;
  if (params.size() != expected.size())
    return fail(ATTNRT_ERROR_INVALID_PTX,
                "PTX entry '%s' has %zu parameters but its metadata lists %zu; %s", info.kernel,
                params.size(), expected.size(), kRegenerate);
  for (size_t p = 0; p < params.size(); ++p)
    if (params[p].bytes != expected[p].bytes())
      return fail(ATTNRT_ERROR_INVALID_PTX,
                  "PTX entry '%s' parameter %zu ('%s') is %u bytes but the metadata's parameter %zu "
                  "(\"%s\") is %u bytes; %s",
                  info.kernel, p, params[p].name.c_str(), params[p].bytes, p,
                  expected[p].name.c_str(), expected[p].bytes(), kRegenerate);
  return ATTNRT_OK;
}

} // namespace attnrt
