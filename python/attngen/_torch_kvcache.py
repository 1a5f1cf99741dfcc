"""attngen.attention_with_kvcache: decoding over a contiguous or paged KV
cache, as flash_attn_with_kvcache. Its checks, the torch custom op
attngen::attention_with_kvcache (so torch.compile traces it and CUDA graphs
capture it), and the launch with the split-KV workspace. Eager calls launch
directly, as attngen.attention's do (see _torch_launch.use_custom_op)."""

import ctypes
from typing import Optional

from . import _capi
from ._capi import lib
from ._errors import check_status, invalid_argument
from ._torch_checks import (TensorLayout, call_options, check_devices, check_int32,
                            check_is_tensor, check_qkv, check_rank, check_strides,
                            check_tensors, require_torch, torch)
from ._fp8_args import (check_descale, check_fp8_dtypes, check_fp8_head_dim, fp8_dtype,
                        is_fp8_call, set_descale_args)
from ._torch_launch import (check_alibi_slopes, current_stream, forward_args, head_dim_v_of,
                            kernel_for, launch, outputs_like, refuse_backward, set_alibi_args,
                            use_custom_op)

_LAYOUT = TensorLayout(function="attention_with_kvcache", names=("q", "k_cache", "v_cache"),
                       rank=4, dims="", rank_hint="", row_dims="its first three dimensions",
                       kv_heads="the caches")

#: Query rows of a KV-cache tile; each packed head needs 8 of them.
_BLOCK_M = 64
_MAX_PACK = _BLOCK_M // 8
#: Pages are whole 16-row MMA k steps.
_PAGE_ROW_MULTIPLE = 16
#: Keys per block of the FP8 kernels: an FP8 cache's pages lie in one block
#: (divide it) or cover whole blocks (a multiple of it).
_FP8_KEY_BLOCK = 128
_DESCALE_NAMES = ("q_descale", "k_descale", "v_descale")


def attention_with_kvcache(q, k_cache, v_cache, cache_seqlens=None, block_table=None, *,
                           causal=False, window_size=(-1, -1), softcap=0.0, scale=None,
                           return_lse=False, num_splits=0, check_cache_values=False,
                           alibi_slopes=None, q_descale=None, k_descale=None, v_descale=None):
    """Attention of q over a KV cache, as flash_attn_with_kvcache (without
    appending new keys): sequence b attends to the first cache_seqlens[b] keys
    of its cache. Returns out (batch, seqlen_q, heads, head_dim_v), or (out,
    lse) with lse (batch, heads, seqlen_q) float32.

    k_cache / v_cache are (batch, seqlen_cache, kv_heads, head_dim), or with
    block_table (batch, max_blocks) int32 a paged cache (num_blocks,
    page_size, kv_heads, head_dim), key n of sequence b in page
    block_table[b, n // page_size] (page_size a multiple of 16). v_cache
    (and out) may have a head dim of their own, head_dim_v (DeepSeek's
    192/128).
    cache_seqlens is an int, a (batch,) int32 CUDA tensor or None (the whole
    cache). causal is bottom-right to each sequence's keys (query i sees keys
    j <= i + cache_seqlens[b] - seqlen_q); a query that sees no key gets out
    0 and lse -inf (flash_attn reports +inf). num_splits: 0 lets attngen
    split each sequence's keys over CTAs when that fills the GPU better
    (flash-decoding), 1 never splits, n > 1 forces n. window_size (L, R)
    is a sliding window around each sequence's bottom-right diagonal, as
    flash_attn's (causal=True forces R to 0, and (-1, 0) is causal). alibi_slopes, a float32 tensor (heads,) or
    (batch, heads), adds ALiBi's bias -slope * |i + cache_seqlens[b] - seqlen_q
    - j| (from each sequence's bottom-right diagonal, as flash_attn's). The
    kernels never
    read outside the caches whatever cache_seqlens and block_table hold;
    check_cache_values=True also checks their values on the host (a device
    sync; not under CUDA graph capture) and raises for bad ones.
    Registered as torch.ops.attngen.attention_with_kvcache (torch.compile,
    CUDA graphs).

    FP8 (sm_90a, FlashAttention-3's): q, k_cache and v_cache all
    torch.float8_e4m3fn with float32 descales q_descale, k_descale, v_descale
    (None: 1.0; one element: per tensor; (batch, kv_heads): per sequence and
    key/value head, as FA3's; no block scales) attend as the dequantized
    q_descale q, k_descale k_cache, v_descale v_cache, into a bfloat16 out.
    Head dims 64, 128 and 256 with v_cache's the same; v_cache is row-major
    as k_cache (the kernel transposes its tiles); pages of 16, 32, 64, 128 or
    a multiple of 128 rows. Masks, windows, soft caps, ALiBi, GQA and splits
    as above."""
    require_torch("attention_with_kvcache")
    descales = (q_descale, k_descale, v_descale)
    options, cache_seqlens = _check_arguments(q, k_cache, v_cache, cache_seqlens, block_table,
                                              causal, window_size, softcap, scale, return_lse,
                                              num_splits, check_cache_values, alibi_slopes,
                                              descales)
    # A contiguous cache with more rows than sequences: the first ones.
    if block_table is None and k_cache.shape[0] != q.shape[0]:
        k_cache, v_cache = k_cache[:q.shape[0]], v_cache[:q.shape[0]]
    tensors = [q, k_cache, v_cache] + [t for t in (cache_seqlens, block_table, alibi_slopes,
                                                   *descales) if t is not None]
    if use_custom_op(*tensors):
        if check_cache_values:
            raise invalid_argument(
                "check_cache_values=True copies the cache's lengths to the host, which "
                "torch.compile and CUDA graph capture cannot do: check in an eager call")
        out, lse = torch.ops.attngen.attention_with_kvcache(
            q, k_cache, v_cache, cache_seqlens, block_table, options.causal, options.scale,
            options.softcap, return_lse, num_splits, options.window_left,
            options.window_right, alibi_slopes, q_descale, k_descale, v_descale)
    else:
        if check_cache_values and torch.cuda.is_current_stream_capturing():
            raise invalid_argument(
                "check_cache_values=True copies the cache's lengths to the host, which a CUDA "
                "graph capture cannot do: check in an eager call before capturing")
        out, lse = _forward(q, k_cache, v_cache, cache_seqlens, block_table, options.causal,
                            options.scale, options.softcap, return_lse, num_splits,
                            options.window_left, options.window_right, check_cache_values,
                            alibi_slopes, q_descale, k_descale, v_descale)
    return (out, lse) if return_lse else out


#: Query rows up to which a call takes the decoding (KV-cache) kernels: their
#: tiles pack the query heads of a key/value head and split the keys over
#: CTAs, where the dense kernel's 128-row tiles would be mostly padding.
DECODE_MAX_SEQLEN_Q = 16


def decodes(q, k, causal, causal_align, window_left, window_right, alibi=False):
    """Whether the decoding kernels compute an attention() call: few query
    rows, and a mask (and ALiBi's distances) they align the same way
    (bottom-right, or no diagonal, or Nq = Nk)."""
    batch, seqlen_q = q.shape[:2]
    if not 0 < seqlen_q <= DECODE_MAX_SEQLEN_Q or batch == 0:
        return False
    diagonal = causal or window_left >= 0 or window_right >= 0 or alibi
    return not diagonal or causal_align == "bottom-right" or seqlen_q == k.shape[1]


def head_pack_for(group):
    """Query heads per tile for `group` query heads per key/value head: the
    largest power of two dividing it, at most block_m / 8."""
    pack = 1
    while pack * 2 <= _MAX_PACK and group % (pack * 2) == 0:
        pack *= 2
    return pack


def _check_arguments(q, k_cache, v_cache, cache_seqlens, block_table, causal, window_size,
                     softcap, scale, return_lse, num_splits, check_cache_values,
                     alibi_slopes=None, descales=(None, None, None)):
    """Everything the kernels assume, the devices last; returns the options
    and cache_seqlens as a tensor (or None)."""
    check_tensors(_LAYOUT, q, k_cache, v_cache)
    # FP8: e4m3 q or caches, or any descale (then all three must be e4m3).
    fp8 = is_fp8_call(q, descales) or fp8_dtype() in (k_cache.dtype, v_cache.dtype)
    options = call_options("attention_with_kvcache", causal, scale,
                           "bottom-right" if causal else "top-left", softcap, window_size,
                           return_lse=return_lse, check_cache_values=check_cache_values)
    left, right = options.window_left, options.window_right
    # flash_attn's spellings of a causal mask: window (L, 0), and causal with
    # any right side (causal forces it to 0).
    causal = options.causal or right == 0
    if causal:
        right = -1
    # The diagonal, causal or a window's (and ALiBi's distances), is
    # bottom-right to each sequence's keys.
    diagonal = causal or left >= 0 or right >= 0 or alibi_slopes is not None
    options = options._replace(causal=causal, window_right=right,
                               causal_align="bottom-right" if diagonal else "top-left")
    if fp8:
        _check_fp8(q, k_cache, v_cache, descales)
    else:
        check_qkv(_LAYOUT, q, k_cache, v_cache, value_head_dim=True)
    if block_table is not None:
        capacity = _check_pages(q, k_cache, block_table, fp8)
    else:
        capacity = _check_contiguous_cache(q, k_cache)
    cache_seqlens = _cache_seqlens_tensor(q, cache_seqlens, capacity)
    _check_num_splits(num_splits)
    check_alibi_slopes("attention_with_kvcache", alibi_slopes, q, q.shape[0], q.shape[2])
    check_devices([("q", q), ("k_cache", k_cache), ("v_cache", v_cache),
                   ("cache_seqlens", cache_seqlens), ("block_table", block_table)] +
                  list(zip(_DESCALE_NAMES, descales)))
    return options, cache_seqlens


def _check_fp8(q, k_cache, v_cache, descales):
    """What the FP8 KV-cache kernels take: e4m3 q and caches of one shape (v's
    head dim q's) and head dim in FP8_HEAD_DIMS, whole groups of query heads,
    16-byte rows, and descales of one element or (batch, kv_heads)."""
    check_fp8_dtypes("attention_with_kvcache", _LAYOUT.names, (q, k_cache, v_cache))
    heads, head_dim = q.shape[-2:]
    if tuple(k_cache.shape) != tuple(v_cache.shape):
        raise invalid_argument(
            f"k_cache and v_cache must have the same shape for FP8 (v_cache's head dim q's: "
            f"no head_dim_v of its own); got k_cache {tuple(k_cache.shape)} and v_cache "
            f"{tuple(v_cache.shape)}")
    if k_cache.shape[-1] != head_dim:
        raise invalid_argument(f"q has head_dim {head_dim} but k_cache and v_cache have "
                               f"head_dim {k_cache.shape[-1]}")
    check_fp8_head_dim(head_dim)
    kv_heads = k_cache.shape[2]
    if kv_heads == 0 or heads % kv_heads != 0:
        raise invalid_argument(
            f"q has {heads} heads and the caches {kv_heads}: the number of q heads must be a "
            "multiple of the number of k/v heads (grouped-query attention)")
    check_strides(_LAYOUT, list(zip(_LAYOUT.names, (q, k_cache, v_cache))))
    for name, d in zip(_DESCALE_NAMES, descales):
        if isinstance(d, torch.Tensor) and d.dim() == 3:
            raise invalid_argument(
                f"{name} has shape {tuple(d.shape)}: block scales (one per 128 rows) are not "
                "supported with a KV cache; attention_with_kvcache takes descales per tensor "
                f"(one element) or per (batch, kv_heads) = ({q.shape[0]}, {kv_heads}), as "
                "FlashAttention-3's flash_attn_with_kvcache")
        check_descale(name, d, q.shape[0], kv_heads, "attention_with_kvcache")


def _check_pages(q, k_cache, block_table, fp8=False):
    """A paged cache's pages and block table; returns the keys a sequence can
    hold (its pages' rows)."""
    check_is_tensor("attention_with_kvcache", "block_table", block_table)
    check_rank("block_table", block_table, 2)
    check_int32("block_table", block_table)
    batch = q.shape[0]
    if block_table.shape[0] != batch:
        raise invalid_argument(f"block_table has {block_table.shape[0]} rows but q has batch "
                               f"{batch}: one row of page indices per sequence")
    if block_table.shape[1] < 1:
        raise invalid_argument("block_table has no columns: a sequence needs at least one page")
    if block_table.shape[1] > 1 and block_table.stride(1) != 1:
        raise invalid_argument(f"block_table has strides {tuple(block_table.stride())}: its "
                               "rows must be contiguous (stride 1 along max_blocks); call "
                               ".contiguous()")
    page_size = k_cache.shape[1]
    if page_size < _PAGE_ROW_MULTIPLE or page_size % _PAGE_ROW_MULTIPLE != 0:
        raise invalid_argument(f"the paged caches have pages of {page_size} rows (dim 1 of "
                               "k_cache); attngen needs a multiple of 16")
    if fp8 and _FP8_KEY_BLOCK % page_size != 0 and page_size % _FP8_KEY_BLOCK != 0:
        raise invalid_argument(
            f"the paged FP8 caches have pages of {page_size} rows (dim 1 of k_cache); FP8 "
            f"reads keys in blocks of {_FP8_KEY_BLOCK}, which must lie in one page or cover "
            f"whole pages: use pages of 16, 32, 64, 128 or a multiple of {_FP8_KEY_BLOCK} rows")
    if k_cache.shape[0] < 1:
        raise invalid_argument("the paged caches hold no page (dim 0 of k_cache is 0)")
    return block_table.shape[1] * page_size


def _check_contiguous_cache(q, k_cache):
    """A contiguous cache has a row per sequence; returns its keys per row."""
    batch, seqlen_q = q.shape[:2]
    if k_cache.shape[0] < batch:
        raise invalid_argument(f"k_cache has batch {k_cache.shape[0]} but q has {batch}: a "
                               "contiguous cache needs a row per sequence (pass a block_table "
                               "for a paged cache)")
    capacity = k_cache.shape[1]
    if capacity < 1 and batch > 0 and seqlen_q > 0:
        raise invalid_argument("k_cache holds no key (dim 1 is 0)")
    return capacity


def _cache_seqlens_tensor(q, cache_seqlens, capacity):
    """cache_seqlens as the kernels read it: None, or a contiguous int32 (batch,)
    tensor (an int becomes one on q's device)."""
    batch = q.shape[0]
    if cache_seqlens is None:
        return None
    if not isinstance(cache_seqlens, torch.Tensor):
        if isinstance(cache_seqlens, bool) or not isinstance(cache_seqlens, int):
            raise TypeError("attngen.attention_with_kvcache: cache_seqlens must be None, an int "
                            f"or an int32 tensor, got {cache_seqlens!r}")
        if not 0 <= cache_seqlens <= capacity:
            raise invalid_argument(f"cache_seqlens = {cache_seqlens} is outside [0, {capacity}], "
                                   "the keys a sequence of this cache can hold")
        cache_seqlens = torch.full((batch,), cache_seqlens, dtype=torch.int32, device=q.device)
    if cache_seqlens.dim() != 1 or cache_seqlens.shape[0] != batch:
        raise invalid_argument(f"cache_seqlens must have shape ({batch},), one length per "
                               f"sequence; got {tuple(cache_seqlens.shape)}")
    check_int32("cache_seqlens", cache_seqlens)
    if batch > 1 and cache_seqlens.stride(0) != 1:
        raise invalid_argument("cache_seqlens must be contiguous; call .contiguous()")
    return cache_seqlens


def _check_num_splits(num_splits):
    """0 (attngen chooses), 1 (no split) or a count the combine kernel takes."""
    if isinstance(num_splits, bool) or not isinstance(num_splits, int):
        raise TypeError("attngen.attention_with_kvcache: num_splits must be an int, got "
                        f"{num_splits!r}")
    if not 0 <= num_splits <= _capi.MAX_SPLITS:
        raise invalid_argument(f"num_splits = {num_splits} is out of range: use 0 (attngen "
                               f"chooses), 1 (no split) or up to {_capi.MAX_SPLITS}")


def _forward(q, k_cache, v_cache, cache_seqlens, block_table, causal, scale, softcap,
             return_lse, num_splits, window_left=-1, window_right=-1,
             check_cache_values=False, alibi_slopes=None, q_descale=None, k_descale=None,
             v_descale=None):
    """The op's CUDA implementation and the eager path: the plan (splits and
    their workspace), the optional value check, then the launch. An FP8 q
    (and caches) writes a bfloat16 out."""
    batch, _, heads, _ = q.shape
    fp8 = q.dtype == fp8_dtype()
    out, lse = outputs_like(q, return_lse, v_cache)
    paged = block_table is not None
    page_size = k_cache.shape[1] if paged else 0
    # A kernel that can split serves num_splits 0 and n > 1; 1 never splits.
    alibi = alibi_slopes is not None
    diagonal = causal or window_left >= 0 or window_right >= 0 or alibi
    kernel = kernel_for(q, scale, causal=causal, alibi=alibi,
                        causal_align="bottom-right" if diagonal else "top-left",
                        softcap=softcap, window_size=(window_left, window_right),
                        kv_cache=True, page_size=page_size, split_kv=num_splits != 1,
                        head_pack=head_pack_for(heads // k_cache.shape[2]),
                        head_dim_v=head_dim_v_of(q, v_cache), v_row_major=fp8)
    keys = block_table.shape[1] * page_size if paged else k_cache.shape[1]
    args = forward_args(q, k_cache, v_cache, out, lse if return_lse else None, batch, keys)
    args.cache_seqlens = cache_seqlens.data_ptr() if cache_seqlens is not None else None
    if paged:
        args.block_table = block_table.data_ptr()
        args.block_table_stride = block_table.stride(0)
        args.max_blocks = block_table.shape[1]
        args.num_blocks = k_cache.shape[0]
        args.page_size = page_size
    set_alibi_args(args, alibi_slopes)
    # FP8's descales (ones for None), kept until the launch is queued.
    keep = (set_descale_args(args, (q_descale, k_descale, v_descale), batch,
                             k_cache.shape[2], q.device) if fp8 else ())
    args.num_splits = num_splits
    # The plan fixes the splits; its workspace comes from torch's allocator,
    # which CUDA graph capture serves from the graph's pool.
    splits, workspace_bytes = ctypes.c_int64(), ctypes.c_size_t()
    check_status(lib.attngen_kernel_plan(kernel, ctypes.byref(args), ctypes.byref(splits),
                                         ctypes.byref(workspace_bytes)))
    args.num_splits = splits.value
    workspace = None
    if workspace_bytes.value:
        workspace = torch.empty(workspace_bytes.value, dtype=torch.uint8, device=q.device)
        args.workspace = workspace.data_ptr()
        args.workspace_bytes = workspace_bytes.value
    if check_cache_values:
        check_status(lib.attngen_kernel_check_kvcache_values(kernel, ctypes.byref(args),
                                                             current_stream(q.device)),
                     "checking cache_seqlens and block_table")
    launch(kernel, args, q.device)
    del workspace, keep  # the launch is queued: the allocator reuses them in stream order
    return out, lse


if torch is not None:
    @torch.library.custom_op("attngen::attention_with_kvcache", mutates_args=(),
                             device_types="cuda")
    def _kvcache_op(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                    cache_seqlens: Optional[torch.Tensor], block_table: Optional[torch.Tensor],
                    causal: bool, scale: float, softcap: float, return_lse: bool,
                    num_splits: int, window_left: int, window_right: int,
                    alibi_slopes: Optional[torch.Tensor] = None,
                    q_descale: Optional[torch.Tensor] = None,
                    k_descale: Optional[torch.Tensor] = None,
                    v_descale: Optional[torch.Tensor] = None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        """What traced calls (torch.compile, CUDA graphs, autograd) run."""
        return _forward(q, k_cache, v_cache, cache_seqlens, block_table, causal, scale,
                        softcap, return_lse, num_splits, window_left, window_right,
                        alibi_slopes=alibi_slopes, q_descale=q_descale, k_descale=k_descale,
                        v_descale=v_descale)

    @_kvcache_op.register_fake
    def _kvcache_fake(q, k_cache, v_cache, cache_seqlens, block_table, causal, scale, softcap,
                      return_lse, num_splits, window_left, window_right, alibi_slopes=None,
                      q_descale=None, k_descale=None, v_descale=None):
        """The outputs' shapes (out bfloat16 for FP8 q), for tracing with fake or
        meta tensors."""
        return outputs_like(q, return_lse, v_cache)

    refuse_backward(
        _kvcache_op,
        "attngen.attention_with_kvcache has no backward pass: it serves inference "
        "(decoding); call it under torch.no_grad()")
