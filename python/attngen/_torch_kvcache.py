"""attngen.attention_with_kvcache for PyTorch tensors: input checks, the torch
custom op attngen::attention_with_kvcache (so torch.compile traces it and CUDA
graphs capture it), and the launch with the split-KV workspace. Eager calls
launch directly, as attngen.attention's do (see _torch_op._use_custom_op)."""

import ctypes
import threading

from . import _capi
from . import _Jit, _lib, _make_spec, _normalize_scale, _raise, _softcap_value, InvalidInputError
from . import _torch_op

try:
    import torch
except ImportError:  # compile() works without torch; attention_with_kvcache() does not
    torch = None

# (device index, dtype, head_dim, causal, scale, softcap, page_size, split, pack)
#   -> attngen_kernel*
_kernels = {}
_kernels_lock = threading.Lock()

#: Query rows of a KV-cache tile; each packed head needs 8 of them.
_BLOCK_M = 64
_MAX_PACK = _BLOCK_M // 8
#: Pages are whole 16-row MMA k steps.
_PAGE_ROW_MULTIPLE = 16


def forget_kernels():
    with _kernels_lock:
        _kernels.clear()


def _bad(message):
    raise InvalidInputError(message, "ATTNGEN_ERROR_INVALID_ARGUMENT")


def head_pack_for(group):
    """Query heads per tile for `group` query heads per key/value head: the
    largest power of two dividing it, at most block_m / 8."""
    pack = 1
    while pack * 2 <= _MAX_PACK and group % (pack * 2) == 0:
        pack *= 2
    return pack


def _check_tensor(name, t, dims):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"attngen.attention_with_kvcache: {name} must be a torch.Tensor, got "
                        f"{type(t).__name__}")
    if t.dim() != dims:
        _bad(f"{name} must be {dims}-D; got shape {tuple(t.shape)}")


def _check_strides(name, t):
    strides = t.stride()
    if strides[-1] != 1:
        _bad(f"{name} has strides {tuple(strides)}: the last dimension (head_dim) must be "
             "contiguous (stride 1); call .contiguous()")
    for dim in range(3):
        if t.shape[dim] > 1 and strides[dim] % 8 != 0:
            _bad(f"{name} has strides {tuple(strides)}: the strides of its first three "
                 "dimensions must be multiples of 8 elements (16 bytes); call .contiguous()")


def _check_inputs(q, k_cache, v_cache, cache_seqlens, block_table, causal, window_size,
                  return_lse, num_splits, check_cache_values):
    """Checks everything the kernels assume; returns (page_size, capacity,
    cache_seqlens as a tensor or None)."""
    # Devices come last, so that every other check can be tested on the CPU.
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        _check_tensor(name, t, 4)
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        if t.dtype not in (torch.float16, torch.bfloat16):
            _bad(f"{name} has dtype {t.dtype}; attngen supports torch.float16 and "
                 "torch.bfloat16: convert with .to(torch.bfloat16)")
        if t.dtype != q.dtype:
            _bad(f"{name} has dtype {t.dtype} but q has {q.dtype}: use one dtype")
    b, nq, h, d = q.shape
    if tuple(k_cache.shape) != tuple(v_cache.shape):
        _bad(f"k_cache and v_cache must have the same shape; got {tuple(k_cache.shape)} and "
             f"{tuple(v_cache.shape)}")
    hkv, dk = k_cache.shape[2], k_cache.shape[3]
    if dk != d:
        _bad(f"q has head_dim {d} but k_cache and v_cache have head_dim {dk}")
    if hkv == 0 or h % hkv != 0:
        _bad(f"q has {h} heads and the caches {hkv}: the number of q heads must be a multiple "
             "of the number of key/value heads (grouped-query attention)")
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        _check_strides(name, t)
    if block_table is not None:
        _check_tensor("block_table", block_table, 2)
        if block_table.dtype != torch.int32:
            _bad(f"block_table has dtype {block_table.dtype}; it must be torch.int32 (as "
                 "flash_attn's): convert with .to(torch.int32)")
        if block_table.shape[0] != b:
            _bad(f"block_table has {block_table.shape[0]} rows but q has batch {b}: one row of "
                 "page indices per sequence")
        if block_table.shape[1] < 1:
            _bad("block_table has no columns: a sequence needs at least one page")
        if block_table.shape[1] > 1 and block_table.stride(1) != 1:
            _bad(f"block_table has strides {tuple(block_table.stride())}: its rows must be "
                 "contiguous (stride 1 along max_blocks); call .contiguous()")
        page_size = k_cache.shape[1]
        if page_size < _PAGE_ROW_MULTIPLE or page_size % _PAGE_ROW_MULTIPLE != 0:
            _bad(f"the paged caches have pages of {page_size} rows (dim 1 of k_cache); attngen "
                 "needs a multiple of 16")
        if k_cache.shape[0] < 1:
            _bad("the paged caches hold no page (dim 0 of k_cache is 0)")
        capacity = block_table.shape[1] * page_size
    else:
        page_size = 0
        if k_cache.shape[0] < b:
            _bad(f"k_cache has batch {k_cache.shape[0]} but q has {b}: a contiguous cache "
                 "needs a row per sequence (pass a block_table for a paged cache)")
        capacity = k_cache.shape[1]
        if capacity < 1 and b > 0 and nq > 0:
            _bad("k_cache holds no key (dim 1 is 0)")
    if cache_seqlens is not None and not isinstance(cache_seqlens, torch.Tensor):
        if isinstance(cache_seqlens, bool) or not isinstance(cache_seqlens, int):
            raise TypeError("attngen.attention_with_kvcache: cache_seqlens must be None, an int "
                            f"or an int32 tensor, got {cache_seqlens!r}")
        if not 0 <= cache_seqlens <= capacity:
            _bad(f"cache_seqlens = {cache_seqlens} is outside [0, {capacity}], the keys a "
                 "sequence of this cache can hold")
        cache_seqlens = torch.full((b,), cache_seqlens, dtype=torch.int32, device=q.device)
    if cache_seqlens is not None:
        if cache_seqlens.dim() != 1 or cache_seqlens.shape[0] != b:
            _bad(f"cache_seqlens must have shape ({b},), one length per sequence; got "
                 f"{tuple(cache_seqlens.shape)}")
        if cache_seqlens.dtype != torch.int32:
            _bad(f"cache_seqlens has dtype {cache_seqlens.dtype}; it must be torch.int32 (as "
                 "flash_attn's): convert with .to(torch.int32)")
        if b > 1 and cache_seqlens.stride(0) != 1:
            _bad("cache_seqlens must be contiguous; call .contiguous()")
    for name, flag in (("causal", causal), ("return_lse", return_lse),
                       ("check_cache_values", check_cache_values)):
        if not isinstance(flag, bool):
            raise TypeError(f"attngen.attention_with_kvcache: {name} must be a bool, got "
                            f"{flag!r}")
    if (not isinstance(window_size, (tuple, list)) or len(window_size) != 2
            or any(isinstance(w, bool) or not isinstance(w, int) for w in window_size)):
        raise TypeError("attngen.attention_with_kvcache: window_size must be a pair of ints, "
                        f"got {window_size!r}")
    if tuple(window_size) != (-1, -1):
        raise InvalidInputError(
            f"window_size = {tuple(window_size)}: sliding windows are not supported by the "
            "KV-cache kernels yet; pass (-1, -1)", "ATTNGEN_ERROR_INVALID_SPEC")
    if isinstance(num_splits, bool) or not isinstance(num_splits, int):
        raise TypeError("attngen.attention_with_kvcache: num_splits must be an int, got "
                        f"{num_splits!r}")
    if not 0 <= num_splits <= _capi.MAX_SPLITS:
        _bad(f"num_splits = {num_splits} is out of range: use 0 (attngen chooses), 1 (no "
             f"split) or up to {_capi.MAX_SPLITS}")
    named = [("q", q), ("k_cache", k_cache), ("v_cache", v_cache),
             ("cache_seqlens", cache_seqlens), ("block_table", block_table)]
    for name, t in named:
        if t is None:
            continue
        if t.device.type != "cuda":
            _bad(f"{name} is on {t.device}; attngen runs on CUDA devices: move the tensors "
                 "with .cuda()")
        if t.device != q.device:
            _bad(f"{name} is on {t.device} but q is on {q.device}: put every tensor on one "
                 "device")
    return page_size, capacity, cache_seqlens


def _kernel_for(device, dtype, head_dim, causal, scale, softcap, page_size, split, pack):
    key = (device.index, dtype, head_dim, causal, scale, softcap, page_size, split, pack)
    kernel = _kernels.get(key)
    if kernel is not None:
        return kernel
    with _kernels_lock:
        kernel = _kernels.get(key)
        if kernel is None:
            spec = _make_spec(head_dim, str(dtype), causal, scale or None, with_lse=True,
                              function="attention_with_kvcache",
                              causal_align="bottom-right" if causal else "top-left",
                              softcap=softcap, kv_cache=True, page_size=page_size,
                              split_kv=split, head_pack=pack)
            handle = ctypes.c_void_p()
            with torch.cuda.device(device):
                status = _lib.attngen_jit_get_kernel(_Jit.get(), ctypes.byref(spec),
                                                     ctypes.byref(handle))
            if status:
                _raise(status, f"getting the KV-cache kernel for {dtype}, head_dim {head_dim}, "
                               f"causal={causal}, page_size={page_size}, split={split}, "
                               f"head_pack={pack}")
            kernel = handle.value
            _kernels[key] = kernel
    return kernel


def _forward(q, k_cache, v_cache, cache_seqlens, block_table, causal, scale, softcap,
             return_lse, num_splits, check_cache_values=False):
    b, nq, h, d = q.shape
    hkv = k_cache.shape[2]
    out = torch.empty((b, nq, h, d), dtype=q.dtype, device=q.device)
    lse = torch.empty((b, h, nq) if return_lse else (0,), dtype=torch.float32, device=q.device)
    paged = block_table is not None
    page_size = k_cache.shape[1] if paged else 0
    # A kernel that can split serves num_splits 0 and n > 1; 1 never splits.
    kernel = _kernel_for(q.device, q.dtype, d, causal, scale, softcap, page_size,
                         num_splits != 1, head_pack_for(h // hkv))
    args = _capi.ForwardArgs()
    args.q, args.k, args.v, args.o = q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(), \
        out.data_ptr()
    args.lse = lse.data_ptr() if return_lse else None
    args.batch, args.nq = b, nq
    args.nk = block_table.shape[1] * page_size if paged else k_cache.shape[1]
    args.num_heads, args.num_kv_heads, args.head_dim = h, hkv, d
    args.q_strides[:] = q.stride()
    args.k_strides[:] = k_cache.stride()
    args.v_strides[:] = v_cache.stride()
    args.o_strides[:] = out.stride()
    args.dtype = _capi.DTYPE_BF16 if q.dtype == torch.bfloat16 else _capi.DTYPE_F16
    args.cache_seqlens = cache_seqlens.data_ptr() if cache_seqlens is not None else None
    if paged:
        args.block_table = block_table.data_ptr()
        args.block_table_stride = block_table.stride(0)
        args.max_blocks = block_table.shape[1]
        args.num_blocks = k_cache.shape[0]
        args.page_size = page_size
    args.num_splits = num_splits
    # The plan fixes the splits; its workspace comes from torch's allocator,
    # which CUDA graph capture serves from the graph's pool.
    splits, workspace_bytes = ctypes.c_int64(), ctypes.c_size_t()
    status = _lib.attngen_kernel_plan(kernel, ctypes.byref(args), ctypes.byref(splits),
                                      ctypes.byref(workspace_bytes))
    if status:
        _raise(status)
    args.num_splits = splits.value
    workspace = None
    if workspace_bytes.value:
        workspace = torch.empty(workspace_bytes.value, dtype=torch.uint8, device=q.device)
        args.workspace = workspace.data_ptr()
        args.workspace_bytes = workspace_bytes.value
    stream = torch.cuda.current_stream(q.device).cuda_stream
    if check_cache_values:
        status = _lib.attngen_kernel_check_kvcache_values(kernel, ctypes.byref(args), stream)
        if status:
            _raise(status, "checking cache_seqlens and block_table")
    status = _lib.attngen_kernel_forward(kernel, ctypes.byref(args), stream)
    if status:
        _raise(status)
    del workspace  # the launch is queued: the allocator reuses it in stream order
    return out, lse


if torch is not None:
    from typing import Optional

    @torch.library.custom_op("attngen::attention_with_kvcache", mutates_args=(),
                             device_types="cuda")
    def _kvcache_op(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                    cache_seqlens: Optional[torch.Tensor], block_table: Optional[torch.Tensor],
                    causal: bool, scale: float, softcap: float, return_lse: bool,
                    num_splits: int) -> tuple[torch.Tensor, torch.Tensor]:
        return _forward(q, k_cache, v_cache, cache_seqlens, block_table, causal, scale,
                        softcap, return_lse, num_splits)

    @_kvcache_op.register_fake
    def _kvcache_fake(q, k_cache, v_cache, cache_seqlens, block_table, causal, scale, softcap,
                      return_lse, num_splits):
        return _torch_op._outputs_like(q, return_lse)

    _torch_op._refuse_backward(
        _kvcache_op,
        "attngen.attention_with_kvcache has no backward pass: it serves inference "
        "(decoding); call it under torch.no_grad()")


def attention_with_kvcache(q, k_cache, v_cache, cache_seqlens, block_table, causal, window_size,
                           softcap, scale, return_lse, num_splits, check_cache_values):
    if torch is None:
        raise ImportError("attngen.attention_with_kvcache needs PyTorch (pip install torch); "
                          "attngen.compile works without it")
    _, _, cache_seqlens = _check_inputs(q, k_cache, v_cache, cache_seqlens, block_table, causal,
                                        window_size, return_lse, num_splits, check_cache_values)
    scale = _normalize_scale(scale)
    softcap = _softcap_value("attention_with_kvcache", softcap)
    # A contiguous cache with more rows than sequences: the first ones.
    if block_table is None and k_cache.shape[0] != q.shape[0]:
        k_cache, v_cache = k_cache[:q.shape[0]], v_cache[:q.shape[0]]
    tensors = [q, k_cache, v_cache] + [t for t in (cache_seqlens, block_table) if t is not None]
    if _torch_op._use_custom_op(*tensors):
        if check_cache_values:
            raise InvalidInputError(
                "check_cache_values=True copies the cache's lengths to the host, which "
                "torch.compile and CUDA graph capture cannot do: check in an eager call",
                "ATTNGEN_ERROR_INVALID_ARGUMENT")
        out, lse = torch.ops.attngen.attention_with_kvcache(
            q, k_cache, v_cache, cache_seqlens, block_table, causal, scale, softcap,
            return_lse, num_splits)
    else:
        if check_cache_values and torch.cuda.is_current_stream_capturing():
            _bad("check_cache_values=True copies the cache's lengths to the host, which a CUDA "
                 "graph capture cannot do: check in an eager call before capturing")
        out, lse = _forward(q, k_cache, v_cache, cache_seqlens, block_table, causal, scale,
                            softcap, return_lse, num_splits, check_cache_values)
    return (out, lse) if return_lse else out
