//===- SpecFields.h - the table of spec fields, in C++ ----------*- C++ -*-===//
//
// What attnrt/spec_fields.def says of each field, besides its type and
// value (FieldInfo), and a visitor over a struct holding the fields.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_SPECFIELDS_H
#define ATTN_DIALECT_SPECFIELDS_H

#include "attn/Dialect/SpecKinds.h"

namespace mlir::attn {
namespace spec {

/// The table's groups (spec_fields.def).
enum class Group { TARGET, PROBLEM, TILING, SCHEDULE, BACKEND };

/// What the table says of one field, besides its type and value.
struct FieldInfo {
  Group group;
  bool inC;         ///< a member of attngen_spec
  const char *name; ///< attngen_spec's member; the cache key's
  const char *json; ///< the metadata key (PROBLEM fields)
  const char *flag; ///< the CLI flag without dashes ("" for none)
  const char *help;
  bool key;     ///< part of the JIT's cache key
  int nameRank; ///< where its part of the kernel name goes
};

/// The FieldInfo of each field, as fieldInfo_<Member>.
#define SPEC_FIELD(G, InC, Member, name, json, Kind, Default, Flag, Help,   \
                   Key, Rank, Rule, Check)                                   \
  inline constexpr FieldInfo fieldInfo_##Member = {                          \
      Group::G, #InC[0] == 'C', #name, #json, Flag, Help, #Key[0] == 'K',    \
      Rank};
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD

/// Calls `visit(info, Kind(), value)` for every field of `s` in table order
/// (`value` a reference to the member), or with `Only`, for those of that
/// group: AttentionProblem holds the PROBLEM fields only.
template <class Struct, class Visit>
void forEachField(Struct &s, Visit &&visit) {
#define SPEC_FIELD(G, InC, Member, name, json, Kind, ...)                      \
  visit(fieldInfo_##Member, Kind(), s.Member);
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
}
template <Group Only, class Struct, class Visit>
void forEachFieldOf(Struct &s, Visit &&visit) {
#define SPEC_FIELD(G, InC, Member, name, json, Kind, ...)                      \
  if constexpr (Group::G == Only)                                              \
    visit(fieldInfo_##Member, Kind(), s.Member);
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
}

/// Calls `visit(info, Kind(), a.Member, b.Member)` for the fields of group
/// `Only` of two structs (comparisons, copies).
template <Group Only, class A, class B, class Visit>
void forEachFieldPairOf(A &a, B &b, Visit &&visit) {
#define SPEC_FIELD(G, InC, Member, name, json, Kind, ...)                      \
  if constexpr (Group::G == Only)                                              \
    visit(fieldInfo_##Member, Kind(), a.Member, b.Member);
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
}

} // namespace spec

} // namespace mlir::attn

#endif // ATTN_DIALECT_SPECFIELDS_H
