"""ctypes binding of libattngen's C API (jit/include/attngen/attngen.h and
runtime/include/attnrt/attnrt.h). Private: use the functions of `attngen`."""

import ctypes
import glob
import os

# Values of attnrt_dtype.
DTYPE_F16 = 1
DTYPE_BF16 = 2

# Values of attngen_causal_align, by their Python spelling.
CAUSAL_ALIGN = {"top-left": 0, "bottom-right": 1}

# Most splits a split-KV call may use (attnrt.h's ATTNRT_MAX_SPLITS).
MAX_SPLITS = 256

# attngen_status values whose cause is the caller's input.
STATUS_INVALID_ARGUMENT = 1
STATUS_INVALID_SPEC = 10


class ForwardArgs(ctypes.Structure):
    """attnrt_forward_args."""
    _fields_ = [
        ("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p),
        ("o", ctypes.c_void_p), ("lse", ctypes.c_void_p),
        ("batch", ctypes.c_int64), ("nq", ctypes.c_int64), ("nk", ctypes.c_int64),
        ("num_heads", ctypes.c_int64), ("num_kv_heads", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("q_strides", ctypes.c_int64 * 4), ("k_strides", ctypes.c_int64 * 4),
        ("v_strides", ctypes.c_int64 * 4), ("o_strides", ctypes.c_int64 * 4),
        ("dtype", ctypes.c_int),
        # Variable-length batches (appended).
        ("cu_seqlens_q", ctypes.c_void_p), ("cu_seqlens_k", ctypes.c_void_p),
        ("max_seqlen_q", ctypes.c_int64), ("max_seqlen_k", ctypes.c_int64),
        # KV cache and split-KV (appended after the varlen block).
        ("cache_seqlens", ctypes.c_void_p), ("block_table", ctypes.c_void_p),
        ("block_table_stride", ctypes.c_int64), ("max_blocks", ctypes.c_int64),
        ("num_blocks", ctypes.c_int64), ("page_size", ctypes.c_int64),
        ("num_splits", ctypes.c_int64), ("workspace", ctypes.c_void_p),
        ("workspace_bytes", ctypes.c_size_t),
    ]


class KernelInfo(ctypes.Structure):
    """attnrt_kernel_info."""
    _fields_ = [
        ("kernel", ctypes.c_char * 256), ("arch", ctypes.c_char * 16),
        ("dtype", ctypes.c_int), ("head_dim", ctypes.c_int), ("causal", ctypes.c_int),
        ("block_m", ctypes.c_int), ("block_n", ctypes.c_int),
        ("num_threads", ctypes.c_int), ("smem_bytes", ctypes.c_int),
        ("uses_tma", ctypes.c_int), ("tma_box_cols", ctypes.c_int),
        ("tma_box_rows_q", ctypes.c_int), ("tma_box_rows_k", ctypes.c_int),
        ("tma_box_rows_v", ctypes.c_int), ("scale", ctypes.c_double),
        ("device", ctypes.c_int), ("cc_major", ctypes.c_int), ("cc_minor", ctypes.c_int),
        ("num_regs", ctypes.c_int), ("local_bytes", ctypes.c_int),
        ("static_smem_bytes", ctypes.c_int), ("max_threads_per_block", ctypes.c_int),
        ("lse", ctypes.c_int),
        ("grid_dims", ctypes.c_int), ("grid_size", ctypes.c_int * 3),
        ("grid_tile", ctypes.c_int * 3), ("ctas_per_sm", ctypes.c_int),
        ("num_sms", ctypes.c_int),
        # Variable-length batches (appended).
        ("varlen", ctypes.c_int),
        # KV cache and split-KV (appended after varlen).
        ("kind", ctypes.c_int), ("kv_cache", ctypes.c_int), ("page_size", ctypes.c_int),
        ("head_pack", ctypes.c_int), ("split_kv", ctypes.c_int),
        ("grid_times", ctypes.c_int * 3),
        # The output through the TMA (appended).
        ("tma_box_rows_o", ctypes.c_int),
    ]


class Spec(ctypes.Structure):
    """attngen_spec."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t), ("dtype", ctypes.c_int),
        ("head_dim", ctypes.c_int), ("causal", ctypes.c_int),
        ("scale", ctypes.c_double), ("with_lse", ctypes.c_int),
        ("block_m", ctypes.c_int), ("block_n", ctypes.c_int), ("num_warps", ctypes.c_int),
        ("causal_align", ctypes.c_int), ("softcap", ctypes.c_double),
        ("window_left", ctypes.c_int), ("window_right", ctypes.c_int),
        # Variable-length batches (appended).
        ("varlen", ctypes.c_int),
        # Decoding with a KV cache (appended after varlen).
        ("kv_cache", ctypes.c_int), ("page_size", ctypes.c_int), ("split_kv", ctypes.c_int),
        ("head_pack", ctypes.c_int),
    ]


class JitOptions(ctypes.Structure):
    """attngen_jit_options."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("cache_dir", ctypes.c_char_p),
                ("disk_cache", ctypes.c_int)]


class JitStats(ctypes.Structure):
    """attngen_jit_stats."""
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "requests", "memory_hits", "disk_hits", "compiles", "disk_writes",
        "corrupt_entries", "module_loads")]


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
    c = ctypes
    P = c.c_void_p
    signatures = {
        "attngen_last_error": (c.c_char_p, []),
        "attngen_status_name": (c.c_char_p, [c.c_int]),
        "attngen_version": (c.c_char_p, []),
        "attngen_compiler_id": (c.c_char_p, []),
        "attngen_sizeof_spec": (c.c_size_t, []),
        "attngen_sizeof_jit_stats": (c.c_size_t, []),
        "attnrt_sizeof_forward_args": (c.c_size_t, []),
        "attnrt_sizeof_kernel_info": (c.c_size_t, []),
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
        "attnrt_check_cu_seqlens": (c.c_int, [c.POINTER(ForwardArgs),
                                              c.POINTER(c.c_int32), c.POINTER(c.c_int32)]),
        "attnrt_last_error": (c.c_char_p, []),
        "attngen_kernel_plan": (c.c_int, [P, c.POINTER(ForwardArgs), c.POINTER(c.c_int64),
                                          c.POINTER(c.c_size_t)]),
        "attngen_compiled_combine": (P, [P]),
        "attngen_kernel_check_kvcache_values": (c.c_int, [P, c.POINTER(ForwardArgs), P]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    # The structs above must be the library's.
    for name, struct in (("attngen_sizeof_spec", Spec), ("attngen_sizeof_jit_stats", JitStats),
                         ("attnrt_sizeof_forward_args", ForwardArgs),
                         ("attnrt_sizeof_kernel_info", KernelInfo)):
        if getattr(lib, name)() != ctypes.sizeof(struct):
            raise ImportError(
                f"attngen: {name}() is {getattr(lib, name)()} but the Python binding's struct "
                f"is {ctypes.sizeof(struct)} bytes: the library and the package are from "
                "different versions; reinstall the package")
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
