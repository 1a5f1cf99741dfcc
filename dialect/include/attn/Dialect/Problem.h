//===- Problem.h - what an attention kernel computes ------------*- C++ -*-===//
//
// The PROBLEM rows of attnrt/spec_fields.def as one struct: the problem an
// attention kernel solves (dtype, head dim, mask, scale, soft cap, batch
// layout, KV cache). attn-tile records it on the kernel as #attn.problem,
// every later pass and the metadata read it from there, and the spec of a
// request (AttentionSpec) extends it with the tiling and schedule choices.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_PROBLEM_H
#define ATTN_DIALECT_PROBLEM_H

#include "attn/Dialect/SpecFields.h"

#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace mlir::attn {

/// What an attention kernel computes: each PROBLEM row of spec_fields.def,
/// of its kind's type, its default the table's.
struct AttentionProblem {
#define SPEC_FIELD(G, InC, Member, name, json, Kind, Default, ...)            \
  ATTN_PROBLEM_MEMBER_##G(Member, Kind, Default)
#define ATTN_PROBLEM_MEMBER_PROBLEM(Member, Kind, Default)                     \
  spec::Kind::Type Member = spec::Kind::fromDefault(Default);
#define ATTN_PROBLEM_MEMBER_TARGET(...)
#define ATTN_PROBLEM_MEMBER_TILING(...)
#define ATTN_PROBLEM_MEMBER_SCHEDULE(...)
#define ATTN_PROBLEM_MEMBER_BACKEND(...)
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTN_PROBLEM_MEMBER_PROBLEM
#undef ATTN_PROBLEM_MEMBER_TARGET
#undef ATTN_PROBLEM_MEMBER_TILING
#undef ATTN_PROBLEM_MEMBER_SCHEDULE
#undef ATTN_PROBLEM_MEMBER_BACKEND

  /// Whether the mask has a diagonal to align: causal or a window side.
  bool hasDiagonal() const {
    return causal || windowLeft >= 0 || windowRight >= 0;
  }
  /// Whether causal_align places anything: the mask's diagonal, or ALiBi's
  /// distances (measured from that diagonal even without a mask).
  bool placesDiagonal() const { return hasDiagonal() || alibi; }
  /// The head dim of V and O: head_dim_v, or the head dim when it is 0.
  int64_t valueHeadDim() const { return headDimV ? headDimV : headDim; }
  /// The head dim the tiles are chosen and checked for: the wider of Q's
  /// and V's (a 192/128 kernel takes d192's tiles).
  int64_t tileHeadDim() const {
    return headDim > valueHeadDim() ? headDim : valueHeadDim();
  }
  /// Whether its CTAs differ in length monotonically along the grid's block
  /// axis: a backward kernel that loops over blocks (dq, dkdv, fused) under
  /// a causal mask or a window bounded on the right only. attn-longest-first
  /// starts the longest of them first.
  bool hasMonotoneBlockLengths() const;
  /// This problem's fields, compared field by field.
  bool sameProblem(const AttentionProblem &other) const;
  bool operator==(const AttentionProblem &other) const {
    return sameProblem(other);
  }
};

llvm::hash_code hash_value(const AttentionProblem &problem);

/// The roles of a kernel's arguments, in order (its `attn.tensors`), which
/// the problem fixes: the forward's q, k, v, o[, lse][, cu_seqlens_q,
/// cu_seqlens_k]; the KV cache's, the combine kernel's and the backward's.
llvm::SmallVector<llvm::StringRef>
kernelTensorRoles(const AttentionProblem &problem);

namespace spec {
/// A field's type once chosen: a Tri (unset, true, false) resolves to true
/// or false; every other kind keeps its type.
template <class Kind> struct Resolved {
  using Type = typename Kind::Type;
};
template <> struct Resolved<Tri> {
  using Type = bool;
};
} // namespace spec

/// Which techniques a kernel's schedule applies: each SCHEDULE row of
/// spec_fields.def, resolved for one kernel (attn-configure chooses them;
/// #attn.schedule carries them; each technique's pass reads its switch).
struct AttentionSchedule {
#define SPEC_FIELD(G, InC, Member, name, json, Kind, Default, ...)            \
  ATTN_SCHEDULE_MEMBER_##G(Member, Kind)
#define ATTN_SCHEDULE_MEMBER_SCHEDULE(Member, Kind)                            \
  typename spec::Resolved<spec::Kind>::Type Member{};
#define ATTN_SCHEDULE_MEMBER_PROBLEM(...)
#define ATTN_SCHEDULE_MEMBER_TARGET(...)
#define ATTN_SCHEDULE_MEMBER_TILING(...)
#define ATTN_SCHEDULE_MEMBER_BACKEND(...)
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTN_SCHEDULE_MEMBER_SCHEDULE
#undef ATTN_SCHEDULE_MEMBER_PROBLEM
#undef ATTN_SCHEDULE_MEMBER_TARGET
#undef ATTN_SCHEDULE_MEMBER_TILING
#undef ATTN_SCHEDULE_MEMBER_BACKEND

  bool operator==(const AttentionSchedule &other) const;
};

llvm::hash_code hash_value(const AttentionSchedule &schedule);

/// Checks what every problem must satisfy, whether a request or a kernel's:
/// each PROBLEM field's own check (head dim, scale, soft cap, window sides),
/// then the mask's rules (a causal mask has no right window side; a
/// bottom-right alignment needs a diagonal). The message says what is
/// supported.
llvm::Error verifyProblem(const AttentionProblem &problem);

namespace spec {
// The Check column of the PROBLEM rows (the others are the spec's, in
// spec/lib/Validate.cpp).
template <class T>
llvm::Error checkNone(const FieldInfo &, const T &) {
  return llvm::Error::success();
}
llvm::Error checkHeadDimField(const FieldInfo &, int64_t headDim);
/// V's and O's head dim: 0 (the head dim) or one checkHeadDim accepts.
llvm::Error checkHeadDimVField(const FieldInfo &, int64_t headDimV);
/// A scale: 0 (1/sqrt(head_dim)) or one checkSoftmaxScale accepts.
llvm::Error checkScaleField(const FieldInfo &, double scale);
/// An optional factor (the soft cap): 0 (none) or a value
/// checkSoftmaxScale accepts under the field's name.
llvm::Error checkOptionalFactorField(const FieldInfo &field, double value);
/// A window side: -1 (unbounded) or 0 to INT32_MAX keys.
llvm::Error checkWindowSideField(const FieldInfo &field, int64_t value);
} // namespace spec

} // namespace mlir::attn

#endif // ATTN_DIALECT_PROBLEM_H
