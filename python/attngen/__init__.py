"""attngen: FlashAttention-class attention kernels, compiled on demand.

    import attngen
    out = attngen.attention(q, k, v, causal=True)             # torch tensors
    out = attngen.attention(q, k, v, window_size=(256, 0))    # sliding window
    out, lse = attngen.attention(q, k, v, return_lse=True)

    k = attngen.compile(arch="sm_90a", head_dim=128, dtype="bf16")   # no GPU needed
    k.ptx, k.metadata

    # Packed variable-length batches, as flash_attn_varlen_func:
    out = attngen.attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                   max_seqlen_q, max_seqlen_k, causal=True)

Tensors are (batch, seqlen, heads, head_dim), fp16 or bf16, on a CUDA device,
with the last dimension contiguous (other strides are free) and head_dim a
multiple of 8 from 8 to 256. K and V may have fewer heads than Q
(grouped-query attention). Kernels are compiled on first
use and cached in memory and on disk (ATTNGEN_CACHE_DIR, default
~/.cache/attngen); ATTNGEN_LOG=1 logs what the cache does.
"""

import ctypes
import json
import math
import threading

from . import _capi

__all__ = ["attention", "attention_varlen", "attention_with_kvcache", "compile",
           "CompiledKernel", "AttngenError",
           "InvalidInputError", "cache_dir", "stats", "clear_memory_cache", "device_arch",
           "__version__", "compiler_id"]


class AttngenError(RuntimeError):
    """A failure reported by libattngen; `status` is the C API's status name."""

    def __init__(self, message, status="ATTNGEN_ERROR"):
        super().__init__(message)
        self.status = status


class InvalidInputError(AttngenError, ValueError):
    """The request is wrong: a tensor's device, dtype, shape or strides, or an
    unsupported head_dim / dtype / arch. The message says what to change."""


_lib, _library_path = _capi.load()
__version__ = _lib.attngen_version().decode()


def compiler_id():
    """Version, LLVM version and build id of the compiler in libattngen."""
    return _lib.attngen_compiler_id().decode()


def _raise(status, context=""):
    name = _lib.attngen_status_name(status).decode()
    message = _lib.attngen_last_error().decode()
    if context:
        message = f"{context}: {message}"
    if status in (_capi.STATUS_INVALID_ARGUMENT, _capi.STATUS_INVALID_SPEC):
        raise InvalidInputError(message, name)
    raise AttngenError(message, name)


class _Jit:
    """The process-wide JIT (created on first use)."""

    _lock = threading.Lock()
    _handle = None

    @classmethod
    def get(cls):
        with cls._lock:
            if cls._handle is None:
                options = _capi.JitOptions()
                _lib.attngen_jit_options_init(ctypes.byref(options))
                handle = ctypes.c_void_p()
                status = _lib.attngen_jit_create(ctypes.byref(options), ctypes.byref(handle))
                if status:
                    _raise(status, "creating the JIT")
                # Never destroyed: kernels stay loaded for the process's life.
                cls._handle = handle
            return cls._handle


_DTYPES = {"bf16": _capi.DTYPE_BF16, "bfloat16": _capi.DTYPE_BF16,
           "f16": _capi.DTYPE_F16, "fp16": _capi.DTYPE_F16, "float16": _capi.DTYPE_F16,
           "half": _capi.DTYPE_F16}


def _dtype_code(dtype):
    name = str(dtype)
    if name.startswith("torch."):
        name = name[len("torch."):]
    if name not in _DTYPES:
        raise InvalidInputError(
            f"dtype {dtype!r} is not supported; use 'bf16' or 'f16' (torch.bfloat16, "
            "torch.float16)", "ATTNGEN_ERROR_INVALID_SPEC")
    return _DTYPES[name]


def _normalize_scale(scale):
    """None -> 0.0 (the library's 1/sqrt(head_dim)); else a positive float."""
    if scale is None:
        return 0.0
    if isinstance(scale, bool):
        raise InvalidInputError(f"scale must be a number or None, got {scale!r}",
                                "ATTNGEN_ERROR_INVALID_SPEC")
    try:
        value = float(scale)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInputError(f"scale must be a number or None, got {scale!r}",
                                "ATTNGEN_ERROR_INVALID_SPEC") from None
    if not (value > 0 and math.isfinite(value)):
        raise InvalidInputError(
            f"scale must be positive and finite (or None for 1/sqrt(head_dim)), got {value}",
            "ATTNGEN_ERROR_INVALID_SPEC")
    return value


# The C API's int fields are 32-bit: ctypes would silently wrap larger values.
_C_INT_MIN, _C_INT_MAX = -2**31, 2**31 - 1


def _c_int(name, value):
    """`value` as a C int field: an int (not a bool) that fits 32 bits. Which
    values are supported is the compiler's to say (its INVALID_SPEC error)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{name} must be an int, got {value!r}",
                                "ATTNGEN_ERROR_INVALID_SPEC")
    if not _C_INT_MIN <= value <= _C_INT_MAX:
        raise InvalidInputError(
            f"{name} = {value} is out of range: the C API takes a 32-bit int "
            f"({_C_INT_MIN} to {_C_INT_MAX})",
            "ATTNGEN_ERROR_INVALID_SPEC")
    return value


def _flag(function, name, value):
    """`value` as a C 0/1 flag: only a bool, so that 'False', 2 or None never
    turn into True."""
    if not isinstance(value, bool):
        raise TypeError(f"attngen.{function}: {name} must be a bool (True or False), got "
                        f"{value!r}")
    return 1 if value else 0


def _c_string(name, value):
    """`value` as a C string: a str without NUL characters (ctypes would cut it
    at the first one)."""
    if not isinstance(value, str):
        raise TypeError(f"attngen.compile: {name} must be a str, got {value!r}")
    if "\0" in value:
        raise InvalidInputError(f"{name} {value!r} contains a NUL character",
                                "ATTNGEN_ERROR_INVALID_SPEC")
    return value.encode()


def _causal_align_code(function, value):
    """`value` as an attngen_causal_align: exactly 'top-left' or 'bottom-right'."""
    if not isinstance(value, str):
        raise TypeError(f"attngen.{function}: causal_align must be a str ('top-left' or "
                        f"'bottom-right'), got {value!r}")
    if value not in _capi.CAUSAL_ALIGN:
        raise InvalidInputError(
            f"causal_align {value!r} is not supported; use 'top-left' (query i sees keys "
            "j <= i, as torch's is_causal) or 'bottom-right' (j <= i + seqlen_k - seqlen_q, as "
            "flash_attn)", "ATTNGEN_ERROR_INVALID_SPEC")
    return _capi.CAUSAL_ALIGN[value]


def _softcap_value(function, value):
    """`value` as the C API's double softcap: a real number (not a bool). Which
    values are valid (0, or positive and finite) is the compiler's to say."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"attngen.{function}: softcap must be a number (0.0 for none), got "
                        f"{value!r}")
    try:
        return float(value)
    except OverflowError:
        raise InvalidInputError(f"softcap {value!r} does not fit a double; use a positive "
                                "finite number or 0.0 for none",
                                "ATTNGEN_ERROR_INVALID_SPEC") from None


def _window_sides(function, value):
    """`value` as (left, right) C ints: a tuple or list of two ints (-1: an
    unbounded side). Which sides are valid (-1 or 0 to 2**31 - 1, right -1 or
    0 with causal) is the compiler's to say."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"attngen.{function}: window_size must be a (left, right) pair of ints "
                        f"(-1 for an unbounded side), got {value!r}")
    for side, name in zip(value, ("left", "right")):
        if isinstance(side, bool) or not isinstance(side, int):
            raise TypeError(f"attngen.{function}: window_size {name} must be an int (-1 for "
                            f"unbounded), got {side!r}")
    return (_c_int("window_size left", value[0]), _c_int("window_size right", value[1]))


def _make_spec(head_dim, dtype, causal, scale, with_lse=True, block_m=0, block_n=0,
               num_warps=0, function="compile", causal_align="top-left", softcap=0.0,
               window_size=(-1, -1), varlen=False, kv_cache=False, page_size=0,
               split_kv=False, head_pack=1):
    spec = _capi.Spec()
    _lib.attngen_spec_init_sized(ctypes.byref(spec), ctypes.sizeof(spec))
    spec.head_dim = _c_int("head_dim", head_dim)
    spec.block_m = _c_int("block_m", block_m)
    spec.block_n = _c_int("block_n", block_n)
    spec.num_warps = _c_int("num_warps", num_warps)
    spec.dtype = _dtype_code(dtype)
    spec.causal = _flag(function, "causal", causal)
    spec.causal_align = _causal_align_code(function, causal_align)
    spec.softcap = _softcap_value(function, softcap)
    spec.window_left, spec.window_right = _window_sides(function, window_size)
    spec.scale = _normalize_scale(scale)
    spec.with_lse = _flag(function, "with_lse", with_lse)
    spec.varlen = _flag(function, "varlen", varlen)
    spec.kv_cache = _flag(function, "kv_cache", kv_cache)
    spec.split_kv = _flag(function, "split_kv", split_kv)
    spec.page_size = _c_int("page_size", page_size)
    spec.head_pack = _c_int("head_pack", head_pack)
    return spec


class CompiledKernel:
    """PTX and launch metadata of one kernel (see docs/ABI.md)."""

    def __init__(self, handle):
        self.ptx = _lib.attngen_compiled_ptx(handle).decode()
        self.kernel_name = _lib.attngen_compiled_kernel_name(handle).decode()
        text = _lib.attngen_compiled_metadata(handle).decode()
        try:
            self.metadata = json.loads(text)
        except ValueError as error:  # json.JSONDecodeError
            raise AttngenError(
                f"the launch metadata of {self.kernel_name} is not valid JSON ({error}): a "
                f"compiler bug; please report it with this message. Metadata: {text[:200]}",
                "ATTNGEN_ERROR_COMPILE") from None
        self.arch = _lib.attngen_compiled_arch(handle).decode()
        self.cache_key = _lib.attngen_compiled_cache_key(handle).decode()
        # A split-KV kernel's combine kernel, compiled with it.
        combine = _lib.attngen_compiled_combine(handle)
        self.combine = CompiledKernel(combine) if combine else None

    def __repr__(self):
        return f"CompiledKernel({self.kernel_name}, arch={self.arch}, {len(self.ptx)} bytes of PTX)"


def compile(arch="sm_90a", head_dim=128, dtype="bf16", causal=False, scale=None,
            with_lse=True, block_m=0, block_n=0, num_warps=0, causal_align="top-left",
            softcap=0.0, window_size=(-1, -1), varlen=False, *, kv_cache=False,
            page_size=0, split_kv=False, head_pack=1):
    """Compiles (or finds in the cache) one kernel and returns its PTX and
    metadata. Needs no GPU unless arch="auto" (the current GPU's).

    head_dim is any multiple of 8 from 8 to 256. causal_align ('top-left',
    the default, or 'bottom-right') places the diagonal of a causal mask or
    a window as the C API's causal_align does; 'bottom-right' needs
    causal=True or a window. softcap c > 0 caps the scores at
    c * tanh(scale * s / c) before the softmax (0.0: none).
    window_size=(left, right) is a sliding window as flash_attn's: query i
    sees the keys from left before to right after its diagonal (-1: that
    side unbounded; (left, 0) is a causal window). varlen=True compiles the
    kernel for packed variable-length batches (attention_varlen's).

    kv_cache=True compiles a KV-cache (decoding) kernel, as
    attention_with_kvcache uses: page_size > 0 for a paged cache, split_kv
    to split the keys over CTAs (its combine kernel is .combine), head_pack
    query heads per tile; a causal one needs causal_align='bottom-right'."""
    spec = _make_spec(head_dim, dtype, causal, scale, with_lse, block_m, block_n, num_warps,
                      causal_align=causal_align, softcap=softcap, window_size=window_size,
                      varlen=varlen, kv_cache=kv_cache, page_size=page_size,
                      split_kv=split_kv, head_pack=head_pack)
    arch_name = _c_string("arch", arch)
    handle = ctypes.c_void_p()
    status = _lib.attngen_jit_compile(_Jit.get(), ctypes.byref(spec), arch_name,
                                      ctypes.byref(handle))
    if status:
        _raise(status)
    return CompiledKernel(handle)


def device_arch():
    """The arch attngen compiles for on the current GPU ("sm_90a", "sm_80")."""
    buffer = ctypes.create_string_buffer(16)
    status = _lib.attngen_device_arch(buffer, len(buffer))
    if status:
        _raise(status)
    return buffer.value.decode()


def cache_dir():
    """The disk cache folder ("" when disabled)."""
    return _lib.attngen_jit_cache_dir(_Jit.get()).decode()


def stats():
    """Counters of the process's JIT: requests, memory_hits, disk_hits,
    compiles, disk_writes, corrupt_entries, module_loads."""
    out = _capi.JitStats()
    status = _lib.attngen_jit_get_stats(_Jit.get(), ctypes.byref(out))
    if status:
        _raise(status)
    return {name: getattr(out, name) for name, _ in _capi.JitStats._fields_}


def clear_memory_cache():
    """Forgets compiled and loaded kernels (the disk cache stays). Only call it
    while no other thread uses attngen."""
    _torch_op.forget_kernels()
    _torch_kvcache.forget_kernels()
    status = _lib.attngen_jit_clear_memory_cache(_Jit.get())
    if status:
        _raise(status)


def attention(q, k, v, causal=False, scale=None, return_lse=False, *,
              causal_align="bottom-right", softcap=0.0, window_size=(-1, -1)):
    """softmax(scale * q @ k^T [causal mask]) @ v for (batch, seqlen, heads,
    head_dim) tensors; returns out, or (out, lse) with lse (batch, heads,
    seqlen_q) float32 (natural-log log-sum-exp of the scaled scores).

    causal masks bottom-right aligned by default, as flash_attn_func: query i
    sees keys j <= i + seqlen_k - seqlen_q, and a query row that sees no key
    gets out 0 and lse -inf. causal_align='top-left' aligns it as torch's
    is_causal instead (j <= i); both agree when seqlen_q == seqlen_k.
    scale defaults to 1/sqrt(head_dim). softcap c > 0 soft-caps the scores,
    c * tanh(scale * q @ k^T / c), before the mask and softmax (Gemma 2, as
    flash_attn's softcap; lse is then that of the capped scores); 0.0: none.
    window_size=(left, right) restricts query i to the keys from left before
    to right after its diagonal (i + seqlen_k - seqlen_q bottom-right, as
    flash_attn's window_size; -1: that side unbounded): (256, 0) is a causal
    window of 256 keys, (-1, 0) plain causal; with causal=True right must be
    -1 or 0. Registered as the torch op torch.ops.attngen.attention, which
    torch.compile and torch.export trace; eager calls launch directly (the
    op's first call costs seconds of PyTorch set-up)."""
    return _torch_op.attention(q, k, v, causal, scale, return_lse, causal_align, softcap,
                               window_size)


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                     causal=False, window_size=(-1, -1), softcap=0.0, scale=None,
                     return_lse=False, *, causal_align="bottom-right", check_seqlens=True):
    """Attention over a packed batch of variable-length sequences, as
    flash_attn_varlen_func: q (total_q, heads, head_dim), k and v (total_k,
    kv_heads, head_dim), cu_seqlens_q and cu_seqlens_k int32 (batch + 1,) on
    q's device (sequence b is rows cu_seqlens[b] .. cu_seqlens[b+1] - 1),
    max_seqlen_q / max_seqlen_k ints at least the longest query / key length.
    Each sequence is its own attention problem (empty ones included: a query
    without keys gets out 0 and lse -inf). Returns out (total_q, heads,
    head_dim), or (out, lse) with lse (heads, total_q) float32, flash_attn's
    varlen layout.

    causal is bottom-right aligned per sequence (query i of a sequence sees
    its keys j <= i + seqlen_k - seqlen_q, as flash_attn); causal_align=
    'top-left' aligns it as torch's is_causal. softcap and scale as in
    attention(). window_size=(left, right) is a sliding window per sequence,
    as flash_attn's: query i sees its sequence's keys from left before to
    right after its diagonal (i + seqlen_k - seqlen_q bottom-right; -1: that
    side unbounded); with causal=True right must be -1 or 0.

    check_seqlens=True (the default) checks the values of cu_seqlens_q/k
    against the tensors and max_seqlen_q/k before the launch: that copies
    them to the host, a synchronization per call. It is skipped while a CUDA
    graph is being captured and while tracing; pass False once the inputs
    are known to be right (serving loops, benchmarks). The kernel never
    reads or writes outside its tensors either way. Registered as the torch
    op torch.ops.attngen.attention_varlen (torch.compile, CUDA graphs)."""
    return _torch_varlen.attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                          max_seqlen_k, causal, window_size, softcap, scale,
                                          return_lse, causal_align, check_seqlens)


def attention_with_kvcache(q, k_cache, v_cache, cache_seqlens=None, block_table=None, *,
                           causal=False, window_size=(-1, -1), softcap=0.0, scale=None,
                           return_lse=False, num_splits=0, check_cache_values=False):
    """Attention of q over a KV cache, as flash_attn_with_kvcache (without
    appending new keys): sequence b attends to the first cache_seqlens[b] keys
    of its cache. Returns out (batch, seqlen_q, heads, head_dim), or (out,
    lse) with lse (batch, heads, seqlen_q) float32.

    k_cache / v_cache are (batch, seqlen_cache, kv_heads, head_dim), or with
    block_table (batch, max_blocks) int32 a paged cache (num_blocks,
    page_size, kv_heads, head_dim), key n of sequence b in page
    block_table[b, n // page_size] (page_size a multiple of 16).
    cache_seqlens is an int, a (batch,) int32 CUDA tensor or None (the whole
    cache). causal is bottom-right to each sequence's keys (query i sees keys
    j <= i + cache_seqlens[b] - seqlen_q); a query that sees no key gets out
    0 and lse -inf (flash_attn reports +inf). num_splits: 0 lets attngen
    split each sequence's keys over CTAs when that fills the GPU better
    (flash-decoding), 1 never splits, n > 1 forces n. window_size must be
    (-1, -1) (sliding windows are not supported here yet). The kernels never
    read outside the caches whatever cache_seqlens and block_table hold;
    check_cache_values=True also checks their values on the host (a device
    sync; not under CUDA graph capture) and raises for bad ones.
    Registered as torch.ops.attngen.attention_with_kvcache (torch.compile,
    CUDA graphs)."""
    return _torch_kvcache.attention_with_kvcache(q, k_cache, v_cache, cache_seqlens,
                                                 block_table, causal, window_size, softcap,
                                                 scale, return_lse, num_splits,
                                                 check_cache_values)


# Registers torch.ops.attngen.attention (and attention_varlen,
# attention_with_kvcache) when PyTorch is installed.
from . import _torch_op  # noqa: E402
from . import _torch_varlen  # noqa: E402
from . import _torch_kvcache  # noqa: E402
