//===- StructFields.cpp - the runtime's structs for bindings ---------------===//
#include "abi/StructFields.h"
#include "Error.h"

#include "attnrt/attnrt_quantize.h"

#include <cstddef>

using attnrt::abi::StructLayout;

namespace {

StructLayout forwardArgsLayout() {
  StructLayout layout{"attnrt_forward_args", sizeof(attnrt_forward_args), {}};
#define ATTNRT_FIELD(type, name)                                               \
  layout.fields.push_back(ATTNRT_FIELD_OF(attnrt_forward_args, name));
#define ATTNRT_ARRAY(type, name, n) ATTNRT_FIELD(type, name)
#include "attnrt/forward_args.def"
#undef ATTNRT_FIELD
#undef ATTNRT_ARRAY
  return layout;
}

StructLayout kernelInfoLayout() {
  StructLayout layout{"attnrt_kernel_info", sizeof(attnrt_kernel_info), {}};
#define ATTNRT_FIELD(type, name)                                               \
  layout.fields.push_back(ATTNRT_FIELD_OF(attnrt_kernel_info, name));
#define ATTNRT_ARRAY(type, name, n) ATTNRT_FIELD(type, name)
#include "attnrt/kernel_info.def"
#undef ATTNRT_ARRAY
  // The problem: the PROBLEM rows of spec_fields.def.
#define SPEC_FIELD(Group, InC, Member, name, json, ...)                        \
  ATTNRT_LAYOUT_##Group(json)
#define ATTNRT_LAYOUT_PROBLEM(json) ATTNRT_FIELD(, json)
#define ATTNRT_LAYOUT_TARGET(json)
#define ATTNRT_LAYOUT_TILING(json)
#define ATTNRT_LAYOUT_SCHEDULE(json)
#define ATTNRT_LAYOUT_BACKEND(json)
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTNRT_FIELD
  return layout;
}

StructLayout quantizeArgsLayout() {
  StructLayout layout{"attnrt_quantize_args", sizeof(attnrt_quantize_args), {}};
#define ATTNRT_FIELD(type, name)                                               \
  layout.fields.push_back(ATTNRT_FIELD_OF(attnrt_quantize_args, name));
#define ATTNRT_ARRAY(type, name, n) ATTNRT_FIELD(type, name)
#include "attnrt/quantize_args.def"
#undef ATTNRT_FIELD
#undef ATTNRT_ARRAY
  return layout;
}

/// attnrt_field, described by itself (a binding's check of the one struct
/// it must know before it can read the others).
StructLayout fieldLayout() {
  StructLayout layout{"attnrt_field", sizeof(attnrt_field), {}};
#define ATTNRT_FIELD(type, name)                                               \
  layout.fields.push_back(ATTNRT_FIELD_OF(attnrt_field, name));
#include "attnrt/field.def"
#undef ATTNRT_FIELD
  return layout;
}

} // namespace

extern "C" const attnrt_field *attnrt_struct_fields(const char *name,
                                                    size_t *count,
                                                    size_t *size) {
  static const std::vector<StructLayout> layouts = {
      forwardArgsLayout(), kernelInfoLayout(), quantizeArgsLayout(), fieldLayout()};
  return attnrt::abi::findLayout(layouts, name, count, size);
}
