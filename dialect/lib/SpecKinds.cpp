//===- SpecKinds.cpp - the kinds of spec fields ----------------------------===//
#include "attn/Dialect/SpecKinds.h"
#include "attn/Dialect/AttnDialect.h"

#include <fmt/format.h>

using namespace mlir::attn;
using namespace mlir::attn::spec;

llvm::Error spec::fieldError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<bool> Bool::fromC(int v, llvm::StringRef name) {
  if (v != 0 && v != 1)
    return fieldError(fmt::format("{} must be 0 or 1, got {}", name.str(), v));
  return v == 1;
}

std::optional<int64_t> Eighths::parse(llvm::StringRef text) {
  constexpr int64_t kEighths = 8;
  auto [num, den] = text.trim().split('/');
  int64_t k = 0, n = 1;
  if (num.trim().getAsInteger(10, k) ||
      (!den.empty() && den.trim().getAsInteger(10, n)) ||
      (den.empty() && text.contains('/')))
    return std::nullopt;
  if (n <= 0 || k < 0 || k > n || (k * kEighths) % n != 0)
    return std::nullopt;
  return k * kEighths / n;
}

std::string Real::text(double v) { return fmt::format("{}", v); }

std::string Real::key(double v) { return fmt::format("{:a}", v); }

llvm::Expected<DType> Element::fromC(int v, llvm::StringRef) {
  if (v != ATTNRT_DTYPE_F16 && v != ATTNRT_DTYPE_BF16 &&
      v != ATTNRT_DTYPE_E4M3)
    return fieldError(fmt::format(
        "dtype {} is not supported; supported: ATTNRT_DTYPE_F16 ({}), "
        "ATTNRT_DTYPE_BF16 ({}), ATTNRT_DTYPE_E4M3 ({})",
        v, int(ATTNRT_DTYPE_F16), int(ATTNRT_DTYPE_BF16),
        int(ATTNRT_DTYPE_E4M3)));
  return fromDefault(v);
}

std::optional<DType> Element::parse(llvm::StringRef text) {
  if (text == "f16")
    return DType::f16;
  if (text == "bf16")
    return DType::bf16;
  if (text == "e4m3")
    return DType::e4m3;
  return std::nullopt;
}

std::optional<DType> Element::parseFlag(llvm::StringRef text) {
  if (text == "fp16" || text == "half" || text == "float16")
    return DType::f16;
  if (text == "bfloat16")
    return DType::bf16;
  if (text == "float8_e4m3fn" || text == "e4m3fn" || text == "fp8")
    return DType::e4m3;
  return parse(text);
}

CausalAlign Align::fromDefault(int v) {
  return v == ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT ? CausalAlign::bottom_right
                                               : CausalAlign::top_left;
}

llvm::Expected<CausalAlign> Align::fromC(int v, llvm::StringRef) {
  if (v != ATTNRT_CAUSAL_ALIGN_TOP_LEFT && v != ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT)
    return fieldError(fmt::format(
        "causal_align {} is not supported; supported: "
        "ATTNGEN_CAUSAL_TOP_LEFT ({}), ATTNGEN_CAUSAL_BOTTOM_RIGHT ({})",
        v, int(ATTNRT_CAUSAL_ALIGN_TOP_LEFT),
        int(ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT)));
  return fromDefault(v);
}

int Align::toC(CausalAlign v) {
  return v == CausalAlign::bottom_right ? ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT
                                        : ATTNRT_CAUSAL_ALIGN_TOP_LEFT;
}

std::string Align::text(CausalAlign v) {
  return v == CausalAlign::bottom_right ? "bottom-right" : "top-left";
}

std::string Align::key(CausalAlign v) { return stringifyCausalAlign(v).str(); }

std::optional<CausalAlign> Align::parse(llvm::StringRef text) {
  if (text == "top-left")
    return CausalAlign::top_left;
  if (text == "bottom-right")
    return CausalAlign::bottom_right;
  return std::nullopt;
}

BackwardPart Backward::fromDefault(int v) {
  std::optional<BackwardPart> part =
      v < 0 ? std::nullopt : symbolizeBackwardPart(static_cast<uint32_t>(v));
  return part ? *part : BackwardPart::none;
}

llvm::Expected<BackwardPart> Backward::fromC(int v, llvm::StringRef) {
  if (v < 0 || !symbolizeBackwardPart(static_cast<uint32_t>(v)))
    return fieldError(fmt::format(
        "backward {} is not supported; supported: ATTNRT_BACKWARD_NONE ({}, "
        "a forward kernel), the deterministic pair ATTNRT_BACKWARD_DQ ({}) "
        "and ATTNRT_BACKWARD_DKDV ({}), or the one-kernel backward's "
        "ATTNRT_BACKWARD_PRE ({}), ATTNRT_BACKWARD_FUSED ({}) and "
        "ATTNRT_BACKWARD_POST ({})",
        v, int(ATTNRT_BACKWARD_NONE), int(ATTNRT_BACKWARD_DQ),
        int(ATTNRT_BACKWARD_DKDV), int(ATTNRT_BACKWARD_PRE),
        int(ATTNRT_BACKWARD_FUSED), int(ATTNRT_BACKWARD_POST)));
  return fromDefault(v);
}

int Backward::toC(BackwardPart v) { return static_cast<int>(v); }

std::string Backward::text(BackwardPart v) {
  return stringifyBackwardPart(v).str();
}

std::optional<BackwardPart> Backward::parse(llvm::StringRef text) {
  return symbolizeBackwardPart(text);
}

TargetKind Arch::fromDefault(int v) {
  return v == 0 ? TargetKind::sm_80 : TargetKind::sm_90a;
}

int Arch::toC(TargetKind v) { return v == TargetKind::sm_80 ? 0 : 1; }

std::string Arch::text(TargetKind v) { return stringifyTargetKind(v).str(); }

std::string Arch::hintFor(llvm::StringRef text) {
  if (text == "sm_90")
    return " (Hopper kernels use wgmma and TMA, which need sm_90a)";
  if (text.starts_with("sm_8") || text.starts_with("sm_10") ||
      text.starts_with("sm_12"))
    return " (compile for sm_80: the driver runs sm_80 PTX on newer GPUs)";
  return "";
}

std::optional<TargetKind> Arch::parse(llvm::StringRef text) {
  if (text == "sm_80")
    return TargetKind::sm_80;
  if (text == "sm_90a")
    return TargetKind::sm_90a;
  return std::nullopt;
}
