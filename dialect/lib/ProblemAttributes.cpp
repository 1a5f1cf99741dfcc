//===- ProblemAttributes.cpp - a problem as a problem op's attributes -----===//
#include "attn/Dialect/ProblemAttributes.h"
#include "attn/Dialect/AttnDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::attn;

namespace {
// A field's value as its attribute (a unit attribute for a set flag); null
// for the kinds an op implies by its operands (dtype) or never holds.
Attribute attributeOf(Builder &b, spec::Bool, bool) { return b.getUnitAttr(); }
Attribute attributeOf(Builder &b, spec::Real, double value) {
  return b.getF32FloatAttr(value);
}
Attribute attributeOf(Builder &b, spec::Int, int64_t value) {
  return b.getI64IntegerAttr(value);
}
Attribute attributeOf(Builder &b, spec::Window, int64_t value) {
  return b.getI64IntegerAttr(value);
}
Attribute attributeOf(Builder &b, spec::Align, CausalAlign value) {
  return CausalAlignAttr::get(b.getContext(), value);
}
Attribute attributeOf(Builder &b, spec::Backward, BackwardPart value) {
  return BackwardPartAttr::get(b.getContext(), value);
}
template <class Kind, class T>
Attribute attributeOf(Builder &, Kind, const T &) {
  return {};
}

// The inverse: a present attribute as the field's value.
void valueOf(Attribute, spec::Bool, bool &value) { value = true; }
void valueOf(Attribute attr, spec::Real, double &value) {
  value = cast<FloatAttr>(attr).getValueAsDouble();
}
void valueOf(Attribute attr, spec::Int, int64_t &value) {
  value = cast<IntegerAttr>(attr).getInt();
}
void valueOf(Attribute attr, spec::Window, int64_t &value) {
  value = cast<IntegerAttr>(attr).getInt();
}
void valueOf(Attribute attr, spec::Align, CausalAlign &value) {
  value = cast<CausalAlignAttr>(attr).getValue();
}
void valueOf(Attribute attr, spec::Backward, BackwardPart &value) {
  value = cast<BackwardPartAttr>(attr).getValue();
}
template <class Kind, class T> void valueOf(Attribute, Kind, T &) {}

bool declares(Operation *op, StringRef name) {
  return llvm::any_of(op->getName().getAttributeNames(),
                      [&](StringAttr declared) { return declared == name; });
}
} // namespace

void mlir::attn::writeProblemAttributes(Operation *op,
                                        const AttentionProblem &problem) {
  Builder b(op->getContext());
  // The IR spells every field away from its IR default. An op without
  // `causal_align` is top-left (the ops' documented reading), while the spec's
  // default is bottom-right: a bottom-right problem always says so.
  AttentionProblem defaults;
  defaults.causalAlign = CausalAlign::top_left;
  spec::forEachFieldPairOf<spec::Group::PROBLEM>(
      problem, defaults,
      [&](const spec::FieldInfo &info, auto kind, const auto &value,
          const auto &byDefault) {
        if (value == byDefault || !declares(op, info.name))
          return;
        if (Attribute attr = attributeOf(b, kind, value))
          op->setAttr(info.name, attr);
      });
}

void mlir::attn::readProblemAttributes(Operation *op,
                                       AttentionProblem &problem) {
  if (declares(op, "causal_align"))
    problem.causalAlign = CausalAlign::top_left;
  spec::forEachFieldOf<spec::Group::PROBLEM>(
      problem, [&](const spec::FieldInfo &info, auto kind, auto &value) {
        if (!declares(op, info.name))
          return;
        if (Attribute attr = op->getAttr(info.name))
          valueOf(attr, kind, value);
      });
}
