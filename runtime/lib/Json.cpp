//===- Json.cpp - A minimal strict JSON reader ------------------------------===//

#include "Json.h"

#include "Error.h"

#include <cstdint>

namespace attnrt {

const JsonValue *JsonValue::find(const std::string &key) const {
  for (const auto &member : members)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

const char *describeKind(JsonValue::Kind kind) {
  switch (kind) {
  case JsonValue::Kind::Null:
    return "null";
  case JsonValue::Kind::Bool:
    return "a boolean";
  case JsonValue::Kind::Number:
    return "a number";
  case JsonValue::Kind::String:
    return "a string";
  case JsonValue::Kind::Array:
    return "an array";
  case JsonValue::Kind::Object:
    return "an object";
  }
  return "an unknown value";
}

namespace {

/// Deepest nesting accepted; metadata is flat, this only bounds recursion.
constexpr int kMaxDepth = 64;

/// Recursive-descent parser over a NUL-terminated text.
class Parser {
public:
  explicit Parser(const char *text) : begin(text), cursor(text) {}

  bool parseDocument(JsonValue &out) {
    skipSpace();
    if (!parseValue(out, 0))
      return false;
    skipSpace();
    if (*cursor != '\0')
      return error("unexpected text after the top-level value");
    return true;
  }

  std::string message;

private:
  const char *begin;
  const char *cursor;

  /// Records "line L, column C: what" at the cursor and returns false.
  bool error(const char *what) {
    int line = 1, column = 1;
    for (const char *p = begin; p < cursor; ++p) {
      if (*p == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    message = format("line %d, column %d: %s", line, column, what);
    return false;
  }

  void skipSpace() {
    while (*cursor == ' ' || *cursor == '\t' || *cursor == '\n' || *cursor == '\r')
      ++cursor;
  }

  /// Consumes `word` (true/false/null) if it is next.
  bool consumeWord(const char *word) {
    const char *p = cursor;
    for (const char *w = word; *w; ++w, ++p)
      if (*p != *w)
        return false;
    cursor = p;
    return true;
  }

  bool parseValue(JsonValue &out, int depth) {
    if (depth > kMaxDepth)
      return error("values are nested too deeply");
    switch (*cursor) {
    case '{':
      return parseObject(out, depth);
    case '[':
      return parseArray(out, depth);
    case '"':
      out.kind = JsonValue::Kind::String;
      return parseString(out.text);
    case 't':
    case 'f':
    case 'n':
      if (consumeWord("true")) {
        out.kind = JsonValue::Kind::Bool;
        out.boolean = true;
        return true;
      }
      if (consumeWord("false")) {
        out.kind = JsonValue::Kind::Bool;
        out.boolean = false;
        return true;
      }
      if (consumeWord("null")) {
        out.kind = JsonValue::Kind::Null;
        return true;
      }
      return error("expected a value (true, false or null?)");
    default:
      if (*cursor == '-' || (*cursor >= '0' && *cursor <= '9'))
        return parseNumber(out);
      if (*cursor == '\0')
        return error("unexpected end of text, expected a value");
      return error("expected a value");
    }
  }

  bool parseObject(JsonValue &out, int depth) {
    out.kind = JsonValue::Kind::Object;
    ++cursor; // '{'
    skipSpace();
    if (*cursor == '}') {
      ++cursor;
      return true;
    }
    while (true) {
      if (*cursor != '"')
        return error("expected a string key in the object");
      std::string key;
      if (!parseString(key))
        return false;
      if (out.find(key)) {
        --cursor; // point at the key's closing quote
        return error(format("duplicate key \"%s\"", key.c_str()).c_str());
      }
      skipSpace();
      if (*cursor != ':')
        return error("expected ':' after an object key");
      ++cursor;
      skipSpace();
      out.members.emplace_back(std::move(key), JsonValue());
      if (!parseValue(out.members.back().second, depth + 1))
        return false;
      skipSpace();
      if (*cursor == ',') {
        ++cursor;
        skipSpace();
        continue;
      }
      if (*cursor == '}') {
        ++cursor;
        return true;
      }
      return error("expected ',' or '}' after an object member");
    }
  }

  bool parseArray(JsonValue &out, int depth) {
    out.kind = JsonValue::Kind::Array;
    ++cursor; // '['
    skipSpace();
    if (*cursor == ']') {
      ++cursor;
      return true;
    }
    while (true) {
      out.items.emplace_back();
      if (!parseValue(out.items.back(), depth + 1))
        return false;
      skipSpace();
      if (*cursor == ',') {
        ++cursor;
        skipSpace();
        continue;
      }
      if (*cursor == ']') {
        ++cursor;
        return true;
      }
      return error("expected ',' or ']' after an array element");
    }
  }

  /// Reads 4 hex digits of a \u escape.
  bool parseHex4(uint32_t &code) {
    code = 0;
    for (int i = 0; i < 4; ++i, ++cursor) {
      char c = *cursor;
      code <<= 4;
      if (c >= '0' && c <= '9')
        code |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        code |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        code |= static_cast<uint32_t>(c - 'A' + 10);
      else
        return error("expected 4 hex digits after \\u");
    }
    return true;
  }

  /// Appends code point `code` to `out` as UTF-8.
  static void appendUtf8(std::string &out, uint32_t code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  bool parseString(std::string &out) {
    ++cursor; // opening quote
    out.clear();
    while (true) {
      unsigned char c = static_cast<unsigned char>(*cursor);
      if (c == '\0')
        return error("unterminated string");
      if (c == '"') {
        ++cursor;
        return true;
      }
      if (c < 0x20)
        return error("control character inside a string (escape it)");
      if (c != '\\') {
        out += static_cast<char>(c);
        ++cursor;
        continue;
      }
      ++cursor; // backslash
      char escape = *cursor++;
      switch (escape) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t code;
        if (!parseHex4(code))
          return false;
        if (code >= 0xD800 && code <= 0xDBFF) {
          // A high surrogate must be followed by \u and a low surrogate.
          uint32_t low;
          if (cursor[0] != '\\' || cursor[1] != 'u')
            return error("unpaired UTF-16 surrogate in \\u escape");
          cursor += 2;
          if (!parseHex4(low))
            return false;
          if (low < 0xDC00 || low > 0xDFFF)
            return error("unpaired UTF-16 surrogate in \\u escape");
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        } else if (code >= 0xDC00 && code <= 0xDFFF) {
          return error("unpaired UTF-16 surrogate in \\u escape");
        }
        appendUtf8(out, code);
        break;
      }
      default:
        --cursor;
        return error("invalid escape sequence in a string");
      }
    }
  }

  static bool isDigit(char c) { return c >= '0' && c <= '9'; }

  /// Checks the RFC 8259 number grammar and keeps the source text:
  /// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
  bool parseNumber(JsonValue &out) {
    const char *start = cursor;
    if (*cursor == '-')
      ++cursor;
    if (*cursor == '0') {
      ++cursor;
      if (isDigit(*cursor))
        return error("numbers must not have leading zeros");
    } else if (isDigit(*cursor)) {
      while (isDigit(*cursor))
        ++cursor;
    } else {
      return error("expected a digit");
    }
    if (*cursor == '.') {
      ++cursor;
      if (!isDigit(*cursor))
        return error("expected a digit after the decimal point");
      while (isDigit(*cursor))
        ++cursor;
    }
    if (*cursor == 'e' || *cursor == 'E') {
      ++cursor;
      if (*cursor == '+' || *cursor == '-')
        ++cursor;
      if (!isDigit(*cursor))
        return error("expected a digit in the exponent");
      while (isDigit(*cursor))
        ++cursor;
    }
    out.kind = JsonValue::Kind::Number;
    out.text.assign(start, cursor);
    return true;
  }
};

} // namespace

bool parseJson(const char *text, JsonValue &out, std::string &error) {
  Parser parser(text);
  out = JsonValue();
  if (parser.parseDocument(out))
    return true;
  error = parser.message;
  return false;
}

} // namespace attnrt
