//===- StructFields.h - a C struct's members as a table --------*- C++ -*-===//
//
// attnrt_struct_fields and attngen_struct_fields report the layout of the C
// API's structs to bindings; each struct's members come from the same
// .def list its declaration is expanded from (forward_args.def,
// kernel_info.def, spec_fields.def, ...), so the layout a binding builds
// can never drift from the struct. Header-only, not installed.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNRT_ABI_STRUCTFIELDS_H
#define ATTNRT_ABI_STRUCTFIELDS_H

#include "attnrt/attnrt.h"

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace attnrt::abi {

/// The attnrt_field_type of a member's element type `T`.
template <class T> constexpr int fieldType() {
  if constexpr (std::is_same_v<T, const char *>)
    return ATTNRT_FIELD_STRING;
  else if constexpr (std::is_pointer_v<T>)
    return ATTNRT_FIELD_POINTER;
  else if constexpr (std::is_same_v<T, char>)
    return ATTNRT_FIELD_CHAR;
  else if constexpr (std::is_same_v<T, int>)
    return ATTNRT_FIELD_INT;
  else if constexpr (std::is_same_v<T, double>)
    return ATTNRT_FIELD_DOUBLE;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> &&
                     sizeof(T) == 8)
    return ATTNRT_FIELD_INT64;
  else {
    static_assert(std::is_integral_v<T> && std::is_unsigned_v<T> &&
                      sizeof(T) == 8,
                  "a member type attnrt_field_type has no name for");
    return ATTNRT_FIELD_UINT64;
  }
}

/// The attnrt_field of a member of type `M` (a scalar or an array).
template <class M> attnrt_field fieldOf(const char *name, size_t offset) {
  using Element = std::remove_all_extents_t<M>;
  size_t count = std::is_array_v<M> ? std::extent_v<M> : 1;
  return {name, fieldType<Element>(), offset, count};
}

/// A struct's members with its name and size.
struct StructLayout {
  const char *name;
  size_t size;
  std::vector<attnrt_field> fields;
};

/// The layout named `name` among `layouts`, filling the C API's outputs.
inline const attnrt_field *findLayout(const std::vector<StructLayout> &layouts,
                                      const char *name, size_t *count,
                                      size_t *size) {
  for (const StructLayout &layout : layouts)
    if (name && std::strcmp(name, layout.name) == 0) {
      if (count)
        *count = layout.fields.size();
      if (size)
        *size = layout.size;
      return layout.fields.data();
    }
  return nullptr;
}

} // namespace attnrt::abi

/// The member `name` of `Struct` as an attnrt_field.
#define ATTNRT_FIELD_OF(Struct, name)                                          \
  ::attnrt::abi::fieldOf<decltype(Struct::name)>(#name, offsetof(Struct, name))

#endif // ATTNRT_ABI_STRUCTFIELDS_H
