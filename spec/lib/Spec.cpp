//===- Spec.cpp - generic helpers over the spec's fields ------------------===//
#include "attn/Spec/Spec.h"

using namespace mlir;
using namespace mlir::attn;

std::string mlir::attn::specKey(const AttentionSpec &asked) {
  AttentionSpec spec = asked;
  spec.scale = softmaxScaleOf(spec);
  if (spec.headDimV == spec.headDim)
    spec.headDimV = 0;
  std::string key = "attn";
  spec::forEachField(spec, [&](const spec::FieldInfo &field, auto kind,
                               const auto &value) {
    if (field.key)
      key += std::string(" ") + field.name + "=" + decltype(kind)::key(value);
  });
  return key;
}
