"""ctypes binding of libattngen's C API (jit/include/attngen/attngen.h and
runtime/include/attnrt/attnrt.h): the library, loaded once at import (`lib`,
`library_path`), its functions' signatures, its constants, and its structs as
the library describes them (_abi). The bottom of the package: it imports no
other module of it but _abi. Private: use the functions of `attngen`."""

import ctypes
import glob
import os

from . import _abi

# Values of attnrt_dtype.
DTYPE_F16 = 1
DTYPE_BF16 = 2
DTYPE_E4M3 = 3

# Values of attngen_causal_align, by their Python spelling.
CAUSAL_ALIGN = {"top-left": 0, "bottom-right": 1}

# Values of attnrt_backward_part: which kernel of the backward pass.
BACKWARD = {"none": 0, "dq": 1, "dkdv": 2, "pre": 3, "fused": 4, "post": 5}

# Most splits a split-KV call may use (attnrt.h's ATTNRT_MAX_SPLITS).
MAX_SPLITS = 256

# attngen_status values whose cause is the caller's input.
STATUS_INVALID_ARGUMENT = 1
STATUS_INVALID_SPEC = 10


# The C API's structs, built from the library's description of them when
# it is loaded (_abi.struct_type): attnrt_forward_args, attnrt_kernel_info,
# attngen_spec, attngen_jit_options, attngen_jit_stats, attnrt_quantize_args.
ForwardArgs = KernelInfo = Spec = JitOptions = JitStats = QuantizeArgs = None


def _build_structs(lib):
    """Lays out the structs as `lib` says, before any signature names them."""
    global ForwardArgs, KernelInfo, Spec, JitOptions, JitStats, QuantizeArgs

    def build(name):
        return _abi.struct_type(lib, name, "attngen_struct_fields")

    ForwardArgs = build("attnrt_forward_args")
    KernelInfo = build("attnrt_kernel_info")
    Spec = build("attngen_spec")
    JitOptions = build("attngen_jit_options")
    JitStats = build("attngen_jit_stats")
    QuantizeArgs = build("attnrt_quantize_args")


def _candidates():
    """Where libattngen.so may be, in order."""
    env = os.environ.get("ATTNGEN_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "_lib", "libattngen.so*")))
    # Run from the source tree (PYTHONPATH=python): the CMake build.
    source_build = os.path.join(here, "..", "..", "build", "lib", "libattngen.so")
    if os.path.exists(source_build):
        found.append(os.path.normpath(source_build))
    return found


def _bind(lib):
    """Declares every function's types: ctypes would otherwise pass and return C ints."""
    _build_structs(lib)
    c = ctypes
    P = c.c_void_p
    signatures = {
        "attngen_last_error": (c.c_char_p, []),
        "attngen_status_name": (c.c_char_p, [c.c_int]),
        "attngen_version": (c.c_char_p, []),
        "attngen_compiler_id": (c.c_char_p, []),
        "attngen_spec_init_sized": (None, [c.POINTER(Spec), c.c_size_t]),
        "attngen_jit_options_init": (None, [c.POINTER(JitOptions)]),
        "attngen_spec_check": (c.c_int, [c.POINTER(Spec), c.c_char_p]),
        "attngen_device_arch": (c.c_int, [c.c_char_p, c.c_size_t]),
        "attngen_jit_create": (c.c_int, [c.POINTER(JitOptions), c.POINTER(P)]),
        "attngen_jit_destroy": (None, [P]),
        "attngen_jit_compile": (c.c_int, [P, c.POINTER(Spec), c.c_char_p, c.POINTER(P)]),
        "attngen_jit_get_kernel": (c.c_int, [P, c.POINTER(Spec), c.POINTER(P)]),
        "attngen_jit_clear_memory_cache": (c.c_int, [P]),
        "attngen_jit_cache_dir": (c.c_char_p, [P]),
        "attngen_jit_get_stats": (c.c_int, [P, c.POINTER(JitStats)]),
        "attngen_compiled_ptx": (c.c_char_p, [P]),
        "attngen_compiled_metadata": (c.c_char_p, [P]),
        "attngen_compiled_kernel_name": (c.c_char_p, [P]),
        "attngen_compiled_arch": (c.c_char_p, [P]),
        "attngen_compiled_cache_key": (c.c_char_p, [P]),
        "attngen_kernel_compiled": (P, [P]),
        "attngen_kernel_info": (c.c_int, [P, c.POINTER(KernelInfo)]),
        "attngen_kernel_forward": (c.c_int, [P, c.POINTER(ForwardArgs), P]),
        "attngen_kernel_backward": (c.c_int, [P, P, c.POINTER(ForwardArgs), P]),
        "attngen_kernel_backward_fused": (c.c_int, [P, P, P, c.POINTER(ForwardArgs), P]),
        "attnrt_check_cu_seqlens": (c.c_int, [c.POINTER(ForwardArgs),
                                              c.POINTER(c.c_int32), c.POINTER(c.c_int32)]),
        "attnrt_last_error": (c.c_char_p, []),
        "attngen_kernel_plan": (c.c_int, [P, c.POINTER(ForwardArgs), c.POINTER(c.c_int64),
                                          c.POINTER(c.c_size_t)]),
        "attngen_compiled_combine": (P, [P]),
        "attngen_kernel_check_kvcache_values": (c.c_int, [P, c.POINTER(ForwardArgs), P]),
        "attngen_quantize_fp8": (c.c_int, [P, c.POINTER(QuantizeArgs), c.c_int, c.c_uint64, P]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


def load():
    """Loads and binds libattngen; raises ImportError saying how to get it."""
    tried = []
    for path in _candidates():
        try:
            return _bind(ctypes.CDLL(path)), path
        except OSError as error:
            tried.append(f"{path}: {error}")
    where = "; ".join(tried) if tried else "no libattngen.so found"
    raise ImportError(
        "attngen: cannot load libattngen.so (" + where + "). Install the package with "
        "`pip install .` from the attngen source tree, build it with `bash scripts/build.sh "
        "attngen_jit`, or point ATTNGEN_LIBRARY at a libattngen.so")


lib, library_path = load()
