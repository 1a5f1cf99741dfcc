//===- BoundedSoftmax.h - when a soft cap makes the max fixed ---*- C++ -*-===//
//
// A soft-capped score c * tanh(x) lies in [-c, c], so exp(score - m) for a
// constant m stays inside f32 (and bf16) range without the running max:
// attn-bounded-softmax uses m = max(0, c - kBoundedExpHigh), which keeps
// every exponent in [kBoundedExpLow, kBoundedExpHigh]. The pass and the
// kernel name (_runmax, its ablation) share this rule.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_PASSES_BOUNDEDSOFTMAX_H
#define ATTN_PASSES_BOUNDEDSOFTMAX_H

#include <algorithm>
#include <optional>

namespace mlir::attn {

/// The largest exponent: p <= e^30 = 1.1e13, so row sums and P V stay far
/// from f32's 3.4e38 (up to N * |V| = 3e25).
constexpr double kBoundedExpHigh = 30;
/// The smallest exponent of a row's largest score: e^-70 = 4e-31 keeps
/// P, the row sum and P V (for |V| >= 3e-8) normal in f32 and bf16.
constexpr double kBoundedExpLow = -70;

/// The fixed max, in tanh units (the score divided by the cap), for a cap
/// `cap`; none where the exponents [-2 cap + offset, ...] would leave
/// [kBoundedExpLow, kBoundedExpHigh] (caps above 50).
inline std::optional<double> boundedSoftmaxOffset(double cap) {
  if (!(cap > 0))
    return std::nullopt;
  double offset = std::max(0.0, cap - kBoundedExpHigh); // in score units
  if (-cap - offset < kBoundedExpLow)
    return std::nullopt;
  return offset / cap;
}

/// Whether a soft cap `cap` on `bf16` P is one attn-bounded-softmax fixes
/// (the tile configuration follows it, with or without the pass).
inline bool isFixedMaxSoftcap(double cap, bool bf16) {
  return bf16 && boundedSoftmaxOffset(cap).has_value();
}

} // namespace mlir::attn

#endif // ATTN_PASSES_BOUNDEDSOFTMAX_H
