//===- Json.h - A minimal strict JSON reader --------------------*- C++ -*-===//
//
// Reads RFC 8259 JSON into a small tree. It is strict (no comments, no
// trailing commas, no duplicate object keys, nothing after the value) and
// small: the runtime reads a flat metadata object of a few hundred bytes.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_LIB_JSON_H
#define ATTNRT_LIB_JSON_H

#include <string>
#include <utility>
#include <vector>

namespace attnrt {

/// One JSON value. Numbers keep their source text, so a reader can tell an
/// integer ("128") from a real ("128.0") and convert without rounding.
struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  /// String contents (unescaped, UTF-8) or a number's source text.
  std::string text;
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;

  /// The member named `key` of an object, or nullptr.
  const JsonValue *find(const std::string &key) const;
};

/// "an object", "a string", ... for messages.
const char *describeKind(JsonValue::Kind kind);

/// Parses `text` as exactly one JSON value. On failure returns false and
/// sets `error` to "line L, column C: what was expected".
bool parseJson(const char *text, JsonValue &out, std::string &error);

} // namespace attnrt

#endif // ATTNRT_LIB_JSON_H
