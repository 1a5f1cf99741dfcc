//===- Exp2Emulation.h - exp2 on the FMA pipe --------------------*- C++ -*-===//
//
// The constants of the software exp2 that attn.exp2_diff's emulated_eighths
// selects (FragmentLowering.cpp emits it), and a host model of the same
// float32 operation sequence, which attngen-exp2-emulation-check measures
// against exp2 (test/Codegen/exp2-emulation-accuracy.test):
//
//   t = max(t, -127)                 -inf and below: exactly +0 at the end
//   y = t + 0x1.8p23                 round(t) in y's low mantissa bits
//   j = y - 0x1.8p23; f = t - j      f in [-0.5, 0.5], both exact
//   p = 1 + f (c1 + f (c2 + f c3))   2^f (three FMAs), p(0) = 1
//   2^t = bits(p) + (bits(y) << 23)  j added to p's exponent field
//
// (bits(y) << 23) is j << 23 because bits(0x1.8p23) = 0x4B400000 has its
// low 9 bits clear. At t = -127, p = 1 = 0x3F800000 and j << 23 =
// -0x3F800000: the sum is 0, so masked scores add exactly nothing.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CODEGEN_EXP2EMULATION_H
#define ATTN_CODEGEN_EXP2EMULATION_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mlir::attn::exp2emu {

/// Fragment blocks per emulation period: emulated_eighths counts eighths.
constexpr int64_t kPeriod = 8;
/// Smallest argument: 2^-127 is built as the bit pattern 0.
constexpr float kMinArg = -127.0f;
/// 1.5 * 2^23: adding it rounds a float32 of magnitude < 2^22 to an integer
/// held in the sum's low mantissa bits.
constexpr float kRoundMagic = 0x1.8p23f;
/// Shift from an integer to the float32 exponent field.
constexpr int kExponentShift = 23;
/// 2^f ~ 1 + f (c1 + f (c2 + f c3)) on [-0.5, 0.5], minimax in relative
/// error (1.01e-4) with the constant term 1; derived by scripts/exp2_poly.py.
constexpr float kC1 = 0x1.62f5fap-1f;
constexpr float kC2 = 0x1.f00c32p-3f;
constexpr float kC3 = 0x1.c2a1b4p-5f;
/// The bound the host check asserts on t >= -126 (normal results).
constexpr double kMaxRelativeError = 1.1e-4;

/// Whether fragment block `n` of a row (its columns 8n..8n+7) takes the
/// software path when `eighths` of every 8 blocks do: the emulated blocks
/// are spread evenly between the MUFU ones (4: every other block).
inline bool isEmulatedBlock(int64_t n, int64_t eighths) {
  int64_t k = n % kPeriod;
  return (k + 1) * eighths / kPeriod > k * eighths / kPeriod;
}

/// The kernel's sequence on the host, operation for operation.
inline float exp2Emulated(float t) {
  t = std::fmax(t, kMinArg);
  float y = t + kRoundMagic;
  float j = y - kRoundMagic;
  float f = t - j;
  float p = std::fma(std::fma(std::fma(kC3, f, kC2), f, kC1), f, 1.0f);
  uint32_t yBits, pBits;
  std::memcpy(&yBits, &y, sizeof y);
  std::memcpy(&pBits, &p, sizeof p);
  uint32_t bits = pBits + (yBits << kExponentShift);
  float result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

} // namespace mlir::attn::exp2emu

#endif // ATTN_CODEGEN_EXP2EMULATION_H
