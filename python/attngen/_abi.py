"""The C API's structs as ctypes classes, built from the library's own
description of them (attnrt_struct_fields / attngen_struct_fields), so no
copy of a C struct is kept in Python: a member added, moved or retyped in
the library is one here too. Private, and importable on its own (gpu/'s
scripts load it by path beside libattnrt alone)."""

import ctypes

# attnrt_field_type -> ctypes type.
_TYPES = {0: ctypes.c_int, 1: ctypes.c_int64, 2: ctypes.c_uint64, 3: ctypes.c_double,
          4: ctypes.c_void_p, 5: ctypes.c_char_p, 6: ctypes.c_char}


class _Field(ctypes.Structure):
    """attnrt_field: the one struct read before the library can describe it;
    `struct_type` checks it against the library's description of itself."""
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int),
                ("offset", ctypes.c_size_t), ("count", ctypes.c_size_t)]


def _layout(lib, function, name):
    """[(member, type code, offset, count)] and sizeof of struct `name`."""
    describe = getattr(lib, function)
    describe.restype = ctypes.POINTER(_Field)
    describe.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
                         ctypes.POINTER(ctypes.c_size_t)]
    count, size = ctypes.c_size_t(), ctypes.c_size_t()
    fields = describe(name.encode(), ctypes.byref(count), ctypes.byref(size))
    if not fields:
        raise ImportError(f"attngen: the library does not describe the struct {name}: "
                          "the library and the package are from different versions")
    members = [(fields[i].name.decode(), fields[i].type, fields[i].offset, fields[i].count)
               for i in range(count.value)]
    return members, size.value


def struct_type(lib, name, function="attnrt_struct_fields"):
    """The ctypes Structure of the C struct `name`, laid out as the library
    `lib` says (`function`: attnrt_struct_fields or attngen_struct_fields);
    ImportError if ctypes would place any member elsewhere."""
    own, own_size = _layout(lib, function, "attnrt_field")
    expected = [(n, t, getattr(_Field, n).offset, 1) for n, t in
                (("name", 5), ("type", 0), ("offset", 2), ("count", 2))]
    if own != expected or own_size != ctypes.sizeof(_Field):
        raise ImportError("attngen: the library's attnrt_field is not the package's: "
                          "reinstall the package")
    members, size = _layout(lib, function, name)
    fields = []
    for member, code, _, count in members:
        if code not in _TYPES:
            raise ImportError(f"attngen: {name}.{member} has a type ({code}) this package "
                              "does not know: reinstall the package")
        fields.append((member, _TYPES[code] * count if count != 1 else _TYPES[code]))
    struct = type(name, (ctypes.Structure,), {"_fields_": fields, "__doc__": f"The C {name}."})
    for member, _, offset, _ in members:
        if getattr(struct, member).offset != offset:
            raise ImportError(f"attngen: ctypes places {name}.{member} at "
                              f"{getattr(struct, member).offset}, the library at {offset}")
    if ctypes.sizeof(struct) != size:
        raise ImportError(f"attngen: ctypes makes {name} {ctypes.sizeof(struct)} bytes, "
                          f"the library {size}")
    return struct
