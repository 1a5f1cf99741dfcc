"""The process's JIT: compile() (PTX and metadata, no GPU), the one path from
a KernelSpec to a kernel loaded on a device that the torch front ends launch
(with its cache), and the JIT's caches and counters. Needs no torch."""

import ctypes
import json
import threading

from . import _capi
from ._capi import lib
from ._errors import AttngenError, check_status
from ._spec import KernelSpec, c_string

__version__ = lib.attngen_version().decode()

_jit_lock = threading.Lock()
_jit_handle = None

# (device index, KernelSpec) -> attngen_kernel*: a hit costs a dict look-up,
# no ctypes call.
_loaded = {}
_loaded_lock = threading.Lock()


def compiler_id():
    """Version, LLVM version and build id of the compiler in libattngen."""
    return lib.attngen_compiler_id().decode()


def jit():
    """The process-wide JIT, created on first use and never destroyed: its
    kernels stay loaded for the process's life."""
    global _jit_handle
    with _jit_lock:
        if _jit_handle is None:
            options = _capi.JitOptions()
            lib.attngen_jit_options_init(ctypes.byref(options))
            handle = ctypes.c_void_p()
            check_status(lib.attngen_jit_create(ctypes.byref(options), ctypes.byref(handle)),
                         "creating the JIT")
            _jit_handle = handle
        return _jit_handle


class CompiledKernel:
    """PTX and launch metadata of one kernel (see docs/ABI.md)."""

    __module__ = "attngen"  # the name users know it by

    def __init__(self, handle):
        self.ptx = lib.attngen_compiled_ptx(handle).decode()
        self.kernel_name = lib.attngen_compiled_kernel_name(handle).decode()
        text = lib.attngen_compiled_metadata(handle).decode()
        try:
            self.metadata = json.loads(text)
        except ValueError as error:  # json.JSONDecodeError
            raise AttngenError(
                f"the launch metadata of {self.kernel_name} is not valid JSON ({error}): a "
                f"compiler bug; please report it with this message. Metadata: {text[:200]}",
                "ATTNGEN_ERROR_COMPILE") from None
        self.arch = lib.attngen_compiled_arch(handle).decode()
        self.cache_key = lib.attngen_compiled_cache_key(handle).decode()
        # A split-KV kernel's combine kernel, compiled with it.
        combine = lib.attngen_compiled_combine(handle)
        self.combine = CompiledKernel(combine) if combine else None

    def __repr__(self):
        return f"CompiledKernel({self.kernel_name}, arch={self.arch}, {len(self.ptx)} bytes of PTX)"


def compile(arch="sm_90a", **fields):
    """Compiles (or finds in the cache) one kernel and returns its PTX and
    metadata. Needs no GPU unless arch="auto" (the current GPU's).

    `fields` are KernelSpec's, by keyword, each at its default when left
    out: head_dim (any multiple of 8 from 8 to 256), dtype ('bf16' or
    'f16'), causal, causal_align ('bottom-right', the default and
    flash_attn's: query i sees keys j <= i + Nk - Nq; or 'top-left', torch's
    is_causal: j <= i; where the diagonal of a causal mask or a window
    sits, which is all it changes), scale (None:
    1/sqrt(head_dim)), softcap (c > 0 caps the scores at
    c * tanh(scale * s / c) before the softmax; 0.0: none), window_size
    ((left, right) as flash_attn's: query i sees the keys from left before
    to right after its diagonal; -1: that side unbounded), with_lse,
    varlen (packed variable-length batches, attention_varlen's), and the
    tiling block_m, block_n, num_warps (0: the compiler's choice).

    kv_cache=True compiles a KV-cache (decoding) kernel, as
    attention_with_kvcache uses: page_size > 0 for a paged cache, split_kv
    to split the keys over CTAs (its combine kernel is .combine), head_pack
    query heads per tile; a causal one is bottom-right (to cache_seqlens)."""
    unknown = sorted(set(fields) - set(KernelSpec._fields))
    if unknown:
        raise TypeError(f"attngen.compile: unknown argument {unknown[0]!r}; it takes arch and "
                        f"the spec fields {', '.join(KernelSpec._fields)}")
    spec = KernelSpec(**fields).struct("compile")
    arch_name = c_string("compile", "arch", arch)
    handle = ctypes.c_void_p()
    check_status(lib.attngen_jit_compile(jit(), ctypes.byref(spec), arch_name,
                                         ctypes.byref(handle)))
    return CompiledKernel(handle)


def loaded_kernel(spec, device_index, on_device):
    """The kernel of `spec` loaded on device `device_index`, from the cache
    after the first call; `on_device()` is a context that makes that device
    current, since the kernel loads into the current context."""
    key = (device_index, spec)
    kernel = _loaded.get(key)
    if kernel is None:
        with _loaded_lock:
            kernel = _loaded.get(key)
            if kernel is None:
                kernel = _loaded[key] = _load(spec, on_device)
    return kernel


def _load(spec, on_device):
    """Asks the JIT for `spec`'s kernel (compiled, or from its caches) and
    loads it inside `on_device()`."""
    struct = spec.struct("attention")
    handle = ctypes.c_void_p()
    with on_device():
        status = lib.attngen_jit_get_kernel(jit(), ctypes.byref(struct), ctypes.byref(handle))
    check_status(status, f"getting the kernel for {spec.describe()}")
    return handle.value


def device_arch():
    """The arch attngen compiles for on the current GPU ("sm_90a", "sm_80")."""
    buffer = ctypes.create_string_buffer(16)
    check_status(lib.attngen_device_arch(buffer, len(buffer)))
    return buffer.value.decode()


def cache_dir():
    """The disk cache folder ("" when disabled)."""
    return lib.attngen_jit_cache_dir(jit()).decode()


def stats():
    """Counters of the process's JIT: requests, memory_hits, disk_hits,
    compiles, disk_writes, corrupt_entries, module_loads."""
    out = _capi.JitStats()
    check_status(lib.attngen_jit_get_stats(jit(), ctypes.byref(out)))
    return {name: getattr(out, name) for name, _ in _capi.JitStats._fields_}


def clear_memory_cache():
    """Forgets compiled and loaded kernels (the disk cache stays). Only call it
    while no other thread uses attngen."""
    with _loaded_lock:
        _loaded.clear()
    check_status(lib.attngen_jit_clear_memory_cache(jit()))
