//===- StructFields.cpp - the C API's structs for bindings ----------------===//
#include "abi/StructFields.h"
#include "attngen/attngen.h"

#include <cstddef>

using attnrt::abi::StructLayout;

namespace {

StructLayout specLayout() {
  StructLayout layout{"attngen_spec", sizeof(attngen_spec), {}};
  layout.fields.push_back(ATTNRT_FIELD_OF(attngen_spec, struct_size));
#define SPEC_FIELD(Group, InC, Member, name, ...) ATTNGEN_LAYOUT_##InC(name)
#define ATTNGEN_LAYOUT_C(name)                                                 \
  layout.fields.push_back(ATTNRT_FIELD_OF(attngen_spec, name));
#define ATTNGEN_LAYOUT_NOC(name)
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTNGEN_LAYOUT_C
#undef ATTNGEN_LAYOUT_NOC
  return layout;
}

StructLayout jitOptionsLayout() {
  StructLayout layout{"attngen_jit_options", sizeof(attngen_jit_options), {}};
#define ATTNGEN_FIELD(type, name)                                              \
  layout.fields.push_back(ATTNRT_FIELD_OF(attngen_jit_options, name));
#include "attngen/jit_options.def"
#undef ATTNGEN_FIELD
  return layout;
}

StructLayout jitStatsLayout() {
  StructLayout layout{"attngen_jit_stats", sizeof(attngen_jit_stats), {}};
#define ATTNGEN_FIELD(type, name)                                              \
  layout.fields.push_back(ATTNRT_FIELD_OF(attngen_jit_stats, name));
#include "attngen/jit_stats.def"
#undef ATTNGEN_FIELD
  return layout;
}

} // namespace

extern "C" ATTNGEN_API const attnrt_field *
attngen_struct_fields(const char *name, size_t *count, size_t *size) {
  static const std::vector<StructLayout> layouts = {
      specLayout(), jitOptionsLayout(), jitStatsLayout()};
  if (const attnrt_field *fields =
          attnrt::abi::findLayout(layouts, name, count, size))
    return fields;
  return attnrt_struct_fields(name, count, size);
}
