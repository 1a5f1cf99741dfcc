//===- SpecKinds.h - the kinds of spec fields --------------------*- C++ -*-===//
//
// Each row of attnrt/spec_fields.def names a Kind: the C++ type of the field
// and how its value is converted from and to the C struct, read from a CLI
// flag, written into the cache key, printed in an attribute and in the
// metadata. Generic code over the table (Spec.h, the CLI, the attributes)
// asks these; a new kind of field is one more struct here.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_SPECKINDS_H
#define ATTN_DIALECT_SPECKINDS_H

#include "attnrt/attnrt.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::attn {

enum class TargetKind : uint32_t;
enum class CausalAlign : uint32_t;
enum class BackwardPart : uint32_t;

/// The element type of Q, K, V and O.
enum class DType { f16, bf16, e4m3 };

namespace spec {

/// An error with `message`.
llvm::Error fieldError(const std::string &message);

/// A 0/1 flag; the C struct holds an int.
struct Bool {
  using Type = bool;
  using CType = int;
  static Type fromDefault(CType v) { return v != 0; }
  static llvm::Expected<Type> fromC(CType v, llvm::StringRef name);
  static CType toC(Type v) { return v ? 1 : 0; }
  static std::string text(Type v) { return v ? "true" : "false"; }
  static std::string key(Type v) { return v ? "1" : "0"; }
};

/// A switch that is on by default; its CLI flag is --no-<flag>.
struct NoBool : Bool {};

/// The split-KV combine kernel rather than a forward kernel (metadata
/// "kind": "combine" or "forward").
struct Combine : Bool {};

/// An integer; the C struct holds an int.
struct Int {
  using Type = int64_t;
  using CType = int;
  static Type fromDefault(CType v) { return v; }
  static llvm::Expected<Type> fromC(CType v, llvm::StringRef) { return v; }
  static CType toC(Type v) { return static_cast<CType>(v); }
  static std::string text(Type v) { return std::to_string(v); }
  static std::string key(Type v) { return std::to_string(v); }
};

/// A window side (-1: unbounded): an Int whose CLI flag --window=L,R sets
/// both sides.
struct Window : Int {};

/// A fraction in eighths (0 to 8): the CLI reads 0, k/8, 1/4, ... 1.
struct Eighths : Int {
  /// Reads "0", "1" or "k/n" (0 <= k <= n) as eighths; none unless it is a
  /// whole number of eighths.
  static std::optional<int64_t> parse(llvm::StringRef text);
};

/// A real number; the C struct holds a double.
struct Real {
  using Type = double;
  using CType = double;
  static Type fromDefault(CType v) { return v; }
  static llvm::Expected<Type> fromC(CType v, llvm::StringRef) { return v; }
  static CType toC(Type v) { return v; }
  static std::string text(Type v);
  /// Every bit of the double (%a).
  static std::string key(Type v);
};

/// Unset, true or false (a technique on by default where it applies); the
/// C form is -1, 1 or 0.
struct Tri {
  using Type = std::optional<bool>;
  using CType = int;
  static Type fromDefault(CType v) {
    return v < 0 ? Type() : Type(v != 0);
  }
  static CType toC(Type v) { return v ? (*v ? 1 : 0) : -1; }
  static std::string text(Type v) { return v ? (*v ? "true" : "false") : "default"; }
  static std::string key(Type v) { return std::to_string(toC(v)); }
};

/// f16, bf16 or e4m3 (FP8: q, k and v; o is bf16); the C struct holds an
/// attnrt_dtype.
struct Element {
  using Type = DType;
  using CType = int;
  static Type fromDefault(CType v) {
    return v == ATTNRT_DTYPE_F16    ? DType::f16
           : v == ATTNRT_DTYPE_E4M3 ? DType::e4m3
                                    : DType::bf16;
  }
  static llvm::Expected<Type> fromC(CType v, llvm::StringRef name);
  static CType toC(Type v) {
    return v == DType::f16    ? ATTNRT_DTYPE_F16
           : v == DType::e4m3 ? ATTNRT_DTYPE_E4M3
                              : ATTNRT_DTYPE_BF16;
  }
  static std::string text(Type v) {
    return v == DType::f16 ? "f16" : v == DType::e4m3 ? "e4m3" : "bf16";
  }
  static std::string key(Type v) { return text(v); }
  /// "f16" / "bf16" / "e4m3"; none otherwise.
  static std::optional<Type> parse(llvm::StringRef text);
  static constexpr const char *kChoices = "f16, bf16, e4m3";
  /// A flag's spelling: also the names Python takes (fp16, half, float16,
  /// bfloat16), so the CLI and the package accept the same words; the IR
  /// keeps f16 and bf16 only (parse).
  static std::optional<Type> parseFlag(llvm::StringRef text);
};

/// top-left or bottom-right; the C struct holds an attngen_causal_align.
struct Align {
  using Type = CausalAlign;
  using CType = int;
  static Type fromDefault(CType v);
  static llvm::Expected<Type> fromC(CType v, llvm::StringRef name);
  static CType toC(Type v);
  /// The CLI's spelling: top-left, bottom-right.
  static std::string text(Type v);
  /// The IR's and the metadata's spelling: top_left, bottom_right.
  static std::string key(Type v);
  static std::optional<Type> parse(llvm::StringRef text);
  static constexpr const char *kChoices = "top-left, bottom-right";
};

/// none (a forward kernel), dq or dkdv; the C struct holds an
/// attnrt_backward_part.
struct Backward {
  using Type = BackwardPart;
  using CType = int;
  static Type fromDefault(CType v);
  static llvm::Expected<Type> fromC(CType v, llvm::StringRef name);
  static CType toC(Type v);
  /// none, dq, dkdv, pre, fused, post: the CLI's, the IR's and the
  /// metadata's spelling.
  static std::string text(Type v);
  static std::string key(Type v) { return text(v); }
  static std::optional<Type> parse(llvm::StringRef text);
  static constexpr const char *kChoices = "dq, dkdv, pre, fused, post";
};

/// sm_80 or sm_90a (the C API takes it as a string of its own).
struct Arch {
  using Type = TargetKind;
  using CType = int;
  static Type fromDefault(CType v);
  static CType toC(Type v);
  static std::string text(Type v);
  static std::string key(Type v) { return text(v); }
  static std::optional<Type> parse(llvm::StringRef text);
  static constexpr const char *kChoices = "sm_80, sm_90a";
  /// What to use instead of an unsupported arch `text` (" (compile for
  /// sm_80: ...)"), or "": the CLI and the C API give the same hint.
  static std::string hintFor(llvm::StringRef text);
};

} // namespace spec

} // namespace mlir::attn

#endif // ATTN_DIALECT_SPECKINDS_H
