//===- Exp2EmulationCheck.cpp - accuracy of the software exp2 -------------===//
//
// Evaluates the float32 operation sequence of the kernels' software exp2
// (Exp2Emulation.h, the same constants FragmentLowering.cpp emits) over the
// arguments a softmax produces and fails unless
//   * every t in [-126, 1] is within kMaxRelativeError of exp2 (every 5th
//     float32 of [-127, -2^-24], every 11th of [2^-24, 1] and a uniform
//     grid), t in (-127, -126) is in [0, 2^-126] (a denormal
//     result; the kernels flush those to zero anyway),
//   * -inf, -127 and everything below give exactly +0 (masked scores add
//     nothing to a row; a fully masked row keeps O = 0, LSE = -inf),
//   * k of every 8 fragment blocks are selected for k = 0..8.
// test/Codegen/exp2-emulation-accuracy.test runs it; no GPU needed.
//
//===----------------------------------------------------------------------===//
#include "../lib/Exp2Emulation.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

using namespace mlir::attn;

namespace {

/// Strides through the float32 bit patterns of negative and positive t
/// (all 2.6e8 negative ones take seconds; odd strides visit every mantissa
/// residue).
constexpr uint32_t kNegativeStride = 5, kPositiveStride = 11;
/// Uniform grid over [-127, 1].
constexpr int kGridSamples = 1 << 22;
/// Smallest |t| sampled: below it 2^t rounds to 1 in float32.
constexpr float kTinyArg = 0x1p-24f;

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t toBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

struct Stats {
  double maxRelative = 0;
  float worstArg = 0;
  int64_t samples = 0;
  int64_t failures = 0;

  void check(float t) {
    ++samples;
    float got = exp2emu::exp2Emulated(t);
    double exact = std::exp2(double(t));
    if (t >= -126.0f) {
      double relative = std::fabs(double(got) / exact - 1.0);
      if (relative > maxRelative) {
        maxRelative = relative;
        worstArg = t;
      }
      if (!(relative <= exp2emu::kMaxRelativeError))
        ++failures;
    } else if (t > exp2emu::kMinArg) {
      if (!(got >= 0.0f && got <= 0x1p-126f))
        ++failures;
    } else if (toBits(got) != 0) {
      ++failures;
    }
  }
};

} // namespace

int main() {
  Stats stats;
  for (uint32_t bits = toBits(kTinyArg); bits <= toBits(128.0f);
       bits += kNegativeStride)
    stats.check(-fromBits(bits));
  for (uint32_t bits = toBits(kTinyArg); bits <= toBits(1.0f);
       bits += kPositiveStride)
    stats.check(fromBits(bits));
  for (int i = 0; i <= kGridSamples; ++i)
    stats.check(float(-127.0 + 128.0 * i / kGridSamples));
  fmt::print("samples: {}\n", stats.samples);
  fmt::print("max relative error on [-126, 1]: {:.3e} at t = {} (bound {:.1e})\n",
             stats.maxRelative, stats.worstArg, exp2emu::kMaxRelativeError);

  // Masked scores: exactly +0.
  float zeros[] = {-std::numeric_limits<float>::infinity(),
                   -std::numeric_limits<float>::max(),
                   -1e30f,
                   -1000.0f,
                   -128.0f,
                   -127.5f,
                   exp2emu::kMinArg};
  int64_t nonZero = 0;
  for (float t : zeros)
    if (toBits(exp2emu::exp2Emulated(t)) != 0) {
      fmt::print("exp2({}) = {} (bits {:#x}), expected +0\n", t,
                 exp2emu::exp2Emulated(t), toBits(exp2emu::exp2Emulated(t)));
      ++nonZero;
    }
  fmt::print("exact zeros: {} of {}\n", std::size(zeros) - nonZero,
             std::size(zeros));
  // Exact powers of two are exact.
  int64_t inexact = 0;
  for (int j = -126; j <= 0; ++j)
    if (exp2emu::exp2Emulated(float(j)) != std::ldexp(1.0f, j))
      ++inexact;
  fmt::print("inexact integer powers: {}\n", inexact);

  // Block selection: k of every 8, for each k.
  int64_t badSelections = 0;
  for (int64_t k = 0; k <= exp2emu::kPeriod; ++k) {
    std::string pattern;
    int64_t count = 0;
    for (int64_t n = 0; n < 2 * exp2emu::kPeriod; ++n) {
      bool emulated = exp2emu::isEmulatedBlock(n, k);
      count += emulated;
      pattern += emulated ? 'E' : 'M';
    }
    if (count != 2 * k)
      ++badSelections;
    fmt::print("blocks {}/8: {}\n", k, pattern);
  }

  bool ok = stats.failures == 0 && nonZero == 0 && inexact == 0 &&
            badSelections == 0;
  fmt::print("{} ({} out-of-bound samples)\n", ok ? "PASS" : "FAIL",
             stats.failures);
  return ok ? 0 : 1;
}
