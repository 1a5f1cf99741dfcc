"""flash_attn's forward API on attngen's kernels: change the import, nothing else.

    # from flash_attn import flash_attn_func, flash_attn_with_kvcache
    from attngen.flash_attn_interface import flash_attn_func, flash_attn_with_kvcache

The functions take flash_attn 2's arguments, in its order and with its
defaults, and return what it returns:

* flash_attn_func, flash_attn_qkvpacked_func, flash_attn_kvpacked_func;
* flash_attn_varlen_func (block_table: a paged KV cache), and its
  qkvpacked / kvpacked forms;
* flash_attn_with_kvcache, with k / v appended in place at cache_seqlens,
  rotary embeddings, cache_batch_idx and cache_leftpad.

FP8 as FlashAttention-3 takes it: float8_e4m3fn q, k and v (or caches) with
its q_descale, k_descale, v_descale keywords, in flash_attn_func,
flash_attn_varlen_func (paged too) and flash_attn_with_kvcache; the output is
bfloat16.

Semantics are flash_attn's: causal is bottom-right aligned; causal forces the
window's right side to 0; a window side of seqlen_k or more is unbounded; the
softmax LSE is +inf for a query row that sees no key (its output is 0); head
dims that are not a multiple of 8 (up to 256) are padded, as flash_attn pads
them; inputs whose last dimension is not contiguous are copied.

What attngen does not have yet raises InvalidInputError (a ValueError and a
RuntimeError) that says so: dropout_p > 0. alibi_slopes work everywhere
(flash_attn_with_kvcache's forward; flash_attn_func's and
flash_attn_varlen_func's backward included). return_attn_probs
returns (out, softmax_lse, None): flash_attn's third output is only
meaningful with dropout. flash_attn_func, flash_attn_varlen_func and their
packed forms are differentiable (attngen.attention's and
attention_varlen's backward, head dims up to 256), except
flash_attn_varlen_func over a paged cache (block_table), which, as
flash_attn_with_kvcache, has no backward pass: .backward() through either
raises NotImplementedError.

Where flash_attn reads memory that attngen's kernels cannot address directly,
this module copies, and the docstrings say so: cache_leftpad, and
cache_batch_idx on a cache whose rows are not whole pages of 16. A paged
cache in flash_attn_varlen_func is read in place (pages of a multiple of 16
rows).
"""

import math
import numbers

from ._errors import invalid_argument
from ._torch_attention import attention
from ._torch_checks import check_is_tensor, require_torch, torch
from ._torch_kvcache import attention_with_kvcache
from ._torch_varlen import attention_varlen

__all__ = ["flash_attn_func", "flash_attn_qkvpacked_func", "flash_attn_kvpacked_func",
           "flash_attn_varlen_func", "flash_attn_varlen_qkvpacked_func",
           "flash_attn_varlen_kvpacked_func", "flash_attn_with_kvcache"]

#: flash_attn takes head dims up to 256 and pads them to a multiple of 8.
_MAX_HEAD_DIM = 256
#: torch.float8_e4m3fn (None on a torch without it): FP8 tensors are not padded.
_E4M3 = getattr(torch, "float8_e4m3fn", None) if torch is not None else None


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
                    window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                    return_attn_probs=False, *, q_descale=None, k_descale=None,
                    v_descale=None):
    """flash_attn.flash_attn_func: q (batch, seqlen_q, nheads, headdim), k and v
    (batch, seqlen_k, nheads_k, headdim), nheads a multiple of nheads_k.
    Returns out (batch, seqlen_q, nheads, headdim), or with return_attn_probs
    (out, softmax_lse (batch, nheads, seqlen_q) float32, None). FP8:
    float8_e4m3fn q, k, v with float32 descales (None, one element, or
    (batch, nheads_k) as FlashAttention-3's) give a bfloat16 out."""
    function = "flash_attn_func"
    _refuse_missing_features(function, dropout_p, deterministic)
    (q, k, v), (head_dim, _, head_dim_v) = _ready(function, ("q", "k", "v"), (q, k, v))
    window = _window(window_size, causal, k.shape[1])
    result = attention(q, k, v, causal=bool(causal), scale=_scale(softmax_scale, head_dim),
                       return_lse=bool(return_attn_probs), causal_align="bottom-right",
                       softcap=softcap, window_size=window, alibi_slopes=alibi_slopes,
                       deterministic=bool(deterministic), **_descales(q_descale, k_descale,
                                                                     v_descale))
    return _outputs(result, bool(return_attn_probs), head_dim_v, probs=True)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False,
                              window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                              deterministic=False, return_attn_probs=False):
    """flash_attn.flash_attn_qkvpacked_func: qkv (batch, seqlen, 3, nheads,
    headdim); returns as flash_attn_func."""
    q, k, v = _unpack("flash_attn_qkvpacked_func", "qkv", qkv, 5, 3)
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap,
                           alibi_slopes, deterministic, return_attn_probs)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False,
                             window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                             deterministic=False, return_attn_probs=False):
    """flash_attn.flash_attn_kvpacked_func: q (batch, seqlen_q, nheads,
    headdim), kv (batch, seqlen_k, 2, nheads_k, headdim); returns as
    flash_attn_func."""
    k, v = _unpack("flash_attn_kvpacked_func", "kv", kv, 5, 2)
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap,
                           alibi_slopes, deterministic, return_attn_probs)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           dropout_p=0.0, softmax_scale=None, causal=False,
                           window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None, *,
                           q_descale=None, k_descale=None, v_descale=None):
    """flash_attn.flash_attn_varlen_func: q (total_q, nheads, headdim), k and v
    (total_k, nheads_k, headdim), cu_seqlens_q / cu_seqlens_k int32 (batch +
    1,). Returns out (total_q, nheads, headdim), or with return_attn_probs
    (out, softmax_lse (nheads, total_q) float32, None).

    With block_table (batch, max_blocks) int32, k and v are a paged cache
    (num_blocks, page_block_size, nheads_k, headdim), page_block_size a
    multiple of 16, and sequence b's keys are its first cu_seqlens_k[b + 1]
    - cu_seqlens_k[b] rows, addressed through its row of block_table. The
    kernel reads the pages in place; the values check (a synchronization,
    as for every varlen call here) refuses a sequence longer than its row of
    the table addresses. FP8: float8_e4m3fn q, k, v (pages too) with
    float32 descales (None, one element, or (batch, nheads_k) per sequence)
    give a bfloat16 out."""
    function = "flash_attn_varlen_func"
    _refuse_missing_features(function, dropout_p, deterministic)
    (q, k, v), (head_dim, _, head_dim_v) = _ready(function, ("q", "k", "v"), (q, k, v))
    window = _window(window_size, causal, max_seqlen_k)
    result = attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                              causal=bool(causal), window_size=window, softcap=softcap,
                              scale=_scale(softmax_scale, head_dim),
                              return_lse=bool(return_attn_probs), causal_align="bottom-right",
                              alibi_slopes=alibi_slopes, block_table=block_table,
                              **_descales(q_descale, k_descale, v_descale))
    return _outputs(result, bool(return_attn_probs), head_dim_v, probs=True)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0,
                                     softmax_scale=None, causal=False, window_size=(-1, -1),
                                     softcap=0.0, alibi_slopes=None, deterministic=False,
                                     return_attn_probs=False):
    """flash_attn.flash_attn_varlen_qkvpacked_func: qkv (total, 3, nheads,
    headdim), one cu_seqlens for queries and keys."""
    q, k, v = _unpack("flash_attn_varlen_qkvpacked_func", "qkv", qkv, 4, 3)
    return flash_attn_varlen_func(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen,
                                  dropout_p, softmax_scale, causal, window_size, softcap,
                                  alibi_slopes, deterministic, return_attn_probs)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                    max_seqlen_k, dropout_p=0.0, softmax_scale=None,
                                    causal=False, window_size=(-1, -1), softcap=0.0,
                                    alibi_slopes=None, deterministic=False,
                                    return_attn_probs=False):
    """flash_attn.flash_attn_varlen_kvpacked_func: q (total_q, nheads,
    headdim), kv (total_k, 2, nheads_k, headdim)."""
    k, v = _unpack("flash_attn_varlen_kvpacked_func", "kv", kv, 4, 2)
    return flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                  max_seqlen_k, dropout_p, softmax_scale, causal, window_size,
                                  softcap, alibi_slopes, deterministic, return_attn_probs)


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None,
                            rotary_sin=None, cache_seqlens=None, cache_batch_idx=None,
                            cache_leftpad=None, block_table=None, softmax_scale=None,
                            causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, alibi_slopes=None, num_splits=0,
                            return_softmax_lse=False, *, q_descale=None, k_descale=None,
                            v_descale=None):
    """flash_attn.flash_attn_with_kvcache: q (batch, seqlen_q, nheads, headdim);
    k_cache / v_cache (batch_cache, seqlen_cache, nheads_k, headdim), or with
    block_table (batch, max_blocks) int32 a paged cache (num_blocks,
    page_block_size, nheads_k, headdim). v_cache (and v, and out) may have a
    headdim of their own (FlashAttention-3's headdim_v, DeepSeek's 192/128).

    k / v (batch, seqlen_new, nheads_k, headdim), when given, are written into
    the cache in place at rows cache_seqlens[b] ... + seqlen_new - 1, and the
    attention covers them: sequence b sees its first cache_seqlens[b] +
    seqlen_new keys (cache_seqlens itself is not changed). rotary_cos /
    rotary_sin (seqlen_ro, rotary_dim / 2) rotate the new keys at those
    positions and q at positions cache_seqlens[b] + i when causal or with a
    window, else all at cache_seqlens[b] (GPT-J pairs with
    rotary_interleaved=True, GPT-NeoX halves with False); with cache_leftpad
    the positions count from it. cache_batch_idx (batch,) int32 picks the
    cache row of each sequence (a contiguous cache). cache_leftpad (batch,)
    int32: sequence b's keys start at cache row cache_leftpad[b].

    Returns out (batch, seqlen_q, nheads, headdim of v_cache), or with
    return_softmax_lse (out, softmax_lse (batch, nheads, seqlen_q) float32).

    A sequence whose cache_seqlens (plus seqlen_new) exceeds what its cache
    can hold raises RuntimeError naming block_table (or k_cache), as
    flash_attn does: that check reads cache_seqlens on the host (a
    synchronization) and is skipped under CUDA graph capture and
    torch.compile, where indices are clamped to the cache instead.
    cache_leftpad, and cache_batch_idx on a cache whose sequence rows are not
    whole pages of 16, copy the cache rows they read.

    FP8 (FlashAttention-3's keywords): q, k_cache and v_cache of dtype
    torch.float8_e4m3fn with float32 q_descale, k_descale, v_descale (one
    element, or (batch, nheads_k)) give a bfloat16 out (attngen's
    attention_with_kvcache says what it takes). New k / v appended to FP8
    caches must be e4m3 already (quantized with the caches' descales): they
    are copied as they are. No rotary embeddings with FP8."""
    function = "flash_attn_with_kvcache"
    _refuse_missing_features(function, 0.0, False)
    require_torch(function)
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        check_is_tensor(function, name, t)
    if (k is None) != (v is None):
        raise invalid_argument(f"{function}: pass both k and v (the new keys and values to "
                               "append) or neither")
    if (rotary_cos is None) != (rotary_sin is None):
        raise invalid_argument(f"{function}: pass both rotary_cos and rotary_sin or neither")
    paged = block_table is not None
    if paged and cache_batch_idx is not None:
        raise invalid_argument(f"{function}: cache_batch_idx is not supported with a paged "
                               "KV cache (block_table): the block table already maps each "
                               "sequence to its pages")
    if paged and cache_leftpad is not None:
        raise invalid_argument(f"{function}: cache_leftpad is not supported with a paged KV "
                               "cache (block_table), as in flash_attn")
    batch = q.shape[0]
    capacity = _cache_capacity(function, k_cache, block_table)
    seqlen_new = 0
    if k is not None:
        check_is_tensor(function, "k", k)
        check_is_tensor(function, "v", v)
        if cache_seqlens is None:
            raise invalid_argument(f"{function}: appending k and v needs cache_seqlens (where "
                                   "each sequence's new keys go)")
        if (k.dim() != 4 or v.dim() != 4 or tuple(k.shape[:3]) != tuple(v.shape[:3])
                or k.shape[0] != batch or k.shape[2:] != k_cache.shape[2:]
                or v.shape[2:] != v_cache.shape[2:]):
            raise invalid_argument(f"{function}: k and v must both be (batch, seqlen_new, "
                                   f"nheads_k, headdim) with batch {batch}, nheads_k and "
                                   "headdim those of k_cache (v's those of v_cache); got k "
                                   f"{tuple(k.shape)} and v {tuple(v.shape)} for caches "
                                   f"{tuple(k_cache.shape)} and {tuple(v_cache.shape)}")
        seqlen_new = k.shape[1]
        _check_fp8_append(function, k_cache, v_cache, k, v)
    elif rotary_cos is not None:
        raise invalid_argument(f"{function}: rotary_cos and rotary_sin rotate the new keys: "
                               "pass k and v with them")
    if rotary_cos is not None and _E4M3 is not None and _E4M3 in (q.dtype, k_cache.dtype):
        raise invalid_argument(f"{function}: rotary embeddings are not supported on FP8 "
                               "(float8_e4m3fn) q and caches: rotate q and the new keys "
                               "before quantizing them")
    cache_seqlens = _lengths_tensor(function, cache_seqlens, batch, q.device)
    for name, t in (("cache_batch_idx", cache_batch_idx), ("cache_leftpad", cache_leftpad)):
        if t is not None:
            _check_index_vector(function, name, t, batch)
    leftpad = cache_leftpad
    window = _window(window_size, causal, capacity)
    if cache_seqlens is not None and _can_read_values(cache_seqlens):
        _check_cache_lengths(function, cache_seqlens, seqlen_new, capacity, paged, leftpad)
    if rotary_cos is not None:
        offsets = cache_seqlens if leftpad is None else cache_seqlens - leftpad
        _check_rotary(function, rotary_cos, rotary_sin, q.shape[-1], capacity)
        k = _apply_rotary(k, rotary_cos, rotary_sin, _positions(offsets, seqlen_new, True),
                         rotary_interleaved)
        local = bool(causal) or window != (-1, -1)
        q = _apply_rotary(q, rotary_cos, rotary_sin,
                         _positions(offsets, q.shape[1], local), rotary_interleaved)
    if k is not None:
        _append_to_cache(k_cache, v_cache, k, v, cache_seqlens, block_table, cache_batch_idx)
    lengths = cache_seqlens if not seqlen_new else cache_seqlens + seqlen_new
    k_read, v_read, table = k_cache, v_cache, block_table
    if cache_batch_idx is not None:
        k_read, v_read, table = _select_cache_rows(k_cache, v_cache, cache_batch_idx)
    elif not paged and lengths is None and k_cache.shape[0] != batch:
        k_read, v_read = k_cache[:batch], v_cache[:batch]
    if leftpad is not None:
        if lengths is None:
            lengths = torch.full((batch,), capacity, dtype=torch.int32, device=q.device)
        k_read, v_read = _shift_left(k_read, v_read, table, leftpad, capacity)
        table = None
        lengths = (lengths - leftpad).to(torch.int32)
    (q,), (head_dim,) = _ready(function, ("q",), (q,))
    head_dim_v = v_read.shape[-1]
    if head_dim % 8:
        (k_read,), _ = _ready(function, ("k_cache",), (k_read,))
    if head_dim_v % 8:
        (v_read,), _ = _ready(function, ("v_cache",), (v_read,))
    result = attention_with_kvcache(q, k_read, v_read, lengths, table, causal=bool(causal),
                                    window_size=window, softcap=softcap,
                                    scale=_scale(softmax_scale, head_dim),
                                    return_lse=bool(return_softmax_lse), num_splits=num_splits,
                                    alibi_slopes=alibi_slopes, q_descale=q_descale,
                                    k_descale=k_descale, v_descale=v_descale)
    return _outputs(result, bool(return_softmax_lse), head_dim_v, probs=False)


# -- flash_attn's conventions -------------------------------------------------


def _refuse_missing_features(function, dropout_p, deterministic):
    """What flash_attn has and attngen not yet: a clear error, not a wrong result."""
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real):
        raise TypeError(f"{function}: dropout_p must be a float, got {dropout_p!r}")
    if dropout_p != 0:
        raise invalid_argument(
            f"{function}: dropout_p = {dropout_p}: attngen has no attention dropout yet; pass "
            "dropout_p=0.0 (flash_attn's value outside training, e.g. "
            "dropout_p=self.dropout if self.training else 0.0)")
    # `deterministic` is the backward's (the forward always is): the dense
    # functions pass it to attention's autograd; the varlen backward is always
    # deterministic.


def _scale(softmax_scale, head_dim):
    """flash_attn's default scale is 1/sqrt of the caller's head dim (before padding)."""
    return head_dim ** -0.5 if softmax_scale is None else softmax_scale


def _window(window_size, causal, seqlen_k):
    """flash_attn's window: a side of seqlen_k or more is unbounded (-1), and
    causal forces the right side to 0. Anything else is checked by attngen."""
    try:
        left, right = window_size
    except (TypeError, ValueError):
        return window_size  # attngen's own check words the error
    if isinstance(seqlen_k, int):
        if isinstance(left, int) and not isinstance(left, bool) and left >= seqlen_k:
            left = -1
        if isinstance(right, int) and not isinstance(right, bool) and right >= seqlen_k:
            right = -1
    if causal is True and isinstance(right, int) and right >= -1:
        right = 0
    return (left, right)


def _outputs(result, with_lse, head_dim, probs):
    """flash_attn's return value: out (head dim padding dropped: `head_dim` is
    v's as the caller gave it), and its LSE,
    +inf where a row sees no key (attngen reports -inf), and with
    return_attn_probs a third output (None: there is no dropout mask)."""
    out, lse = result if with_lse else (result, None)
    if out.shape[-1] != head_dim:
        out = out[..., :head_dim]
    if not with_lse:
        return out
    lse = torch.where(lse == -math.inf, math.inf, lse)
    return (out, lse, None) if probs else (out, lse)


def _ready(function, names, tensors):
    """The tensors as the kernels read them, and the head dims the caller gave
    them: a head dim that is not a multiple of 8 zero-padded (which changes
    no score, and gives v zero columns that _outputs drops), a last dimension
    that is not contiguous or a row stride that is not a multiple of 8
    elements copied, as flash_attn does. q and k share a head dim; v (the
    third) may have its own."""
    require_torch(function)
    for name, t in zip(names, tensors):
        check_is_tensor(function, name, t)
    dims = tuple(t.shape[-1] for t in tensors)
    if max(dims) > _MAX_HEAD_DIM or len(set(dims[:2])) > 1:
        return list(tensors), dims  # attngen's checks word the error
    ready = []
    for t in tensors:
        # FP8 head dims (64, 128, 256) need no padding; attngen words the error
        # for others. Rows start on 16 bytes: 8 elements, 16 of FP8.
        pad = -t.shape[-1] % 8 if t.dtype != _E4M3 else 0
        row = 16 if t.dtype == _E4M3 else 8
        if pad:
            t = torch.nn.functional.pad(t, (0, pad))
        elif t.dim() > 1 and (t.stride(-1) != 1 or any(
                t.stride(i) % row for i in range(t.dim() - 1) if t.shape[i] > 1)):
            t = t.contiguous()
        ready.append(t)
    return ready, dims


def _descales(q_descale, k_descale, v_descale):
    """The FP8 keywords for attention(), only those given: a bf16 call never
    sees them (attngen refuses descales without e4m3 inputs)."""
    given = dict(q_descale=q_descale, k_descale=k_descale, v_descale=v_descale)
    return {name: d for name, d in given.items() if d is not None}


def _unpack(function, name, packed, rank, parts):
    """qkv / kv split along their packing dimension (views, no copy)."""
    require_torch(function)
    check_is_tensor(function, name, packed)
    if packed.dim() != rank or packed.shape[-3] != parts:
        layout = "(batch, seqlen, " if rank == 5 else "(total, "
        raise invalid_argument(f"{function}: {name} must be {rank}-D {layout}{parts}, heads, "
                               f"headdim); got shape {tuple(packed.shape)}")
    return packed.unbind(dim=-3)


# -- KV cache: lengths, rotary, appending, reading ----------------------------


def _can_read_values(t):
    """Whether the host may read `t`'s values now: not while torch.compile
    traces and not under CUDA graph capture."""
    if torch.compiler.is_compiling():
        return False
    return not (t.is_cuda and torch.cuda.is_current_stream_capturing())


def _cache_capacity(function, k_cache, block_table):
    """The keys one sequence's cache can hold."""
    if k_cache.dim() != 4:
        raise invalid_argument(f"{function}: k_cache must be 4-D; got shape "
                               f"{tuple(k_cache.shape)}")
    if block_table is None:
        return k_cache.shape[1]
    check_is_tensor(function, "block_table", block_table)
    if block_table.dim() != 2:
        raise invalid_argument(f"{function}: block_table must be 2-D (batch, max_blocks); got "
                               f"shape {tuple(block_table.shape)}")
    return block_table.shape[1] * k_cache.shape[1]


def _lengths_tensor(function, cache_seqlens, batch, device):
    """cache_seqlens as an int32 (batch,) tensor (an int fills one), or None."""
    if cache_seqlens is None or isinstance(cache_seqlens, torch.Tensor):
        return cache_seqlens
    if isinstance(cache_seqlens, bool) or not isinstance(cache_seqlens, int):
        raise TypeError(f"{function}: cache_seqlens must be None, an int or an int32 tensor, "
                        f"got {cache_seqlens!r}")
    return torch.full((batch,), cache_seqlens, dtype=torch.int32, device=device)


def _check_index_vector(function, name, t, batch):
    check_is_tensor(function, name, t)
    if t.dim() != 1 or t.shape[0] != batch or t.dtype != torch.int32:
        raise invalid_argument(f"{function}: {name} must be an int32 tensor of shape "
                               f"({batch},); got {t.dtype} {tuple(t.shape)}")


def _check_cache_lengths(function, cache_seqlens, seqlen_new, capacity, paged, leftpad):
    """flash_attn's error for lengths its cache cannot hold (a host read)."""
    if cache_seqlens.numel() == 0:
        return
    total = (cache_seqlens.to(torch.int64) + seqlen_new)
    low = cache_seqlens.to(torch.int64) - (leftpad.to(torch.int64) if leftpad is not None else 0)
    longest, shortest = int(total.max()), int(low.min())
    if longest > capacity:
        where, fix = (("the block_table addresses", "give the block_table more pages") if paged
                      else ("k_cache holds", "use a larger cache"))
        raise invalid_argument(f"{function}: a sequence needs {longest} keys (cache_seqlens + "
                               f"seqlen_new) but {where} {capacity}: {fix}")
    if shortest < 0:
        raise invalid_argument(f"{function}: cache_seqlens has a negative length (or one "
                               "below its cache_leftpad)")


def _check_rotary(function, cos, sin, head_dim, capacity):
    for name, t in (("rotary_cos", cos), ("rotary_sin", sin)):
        check_is_tensor(function, name, t)
    if cos.dim() != 2 or tuple(cos.shape) != tuple(sin.shape):
        raise invalid_argument(f"{function}: rotary_cos and rotary_sin must both be (seqlen_ro, "
                               f"rotary_dim / 2); got {tuple(cos.shape)} and {tuple(sin.shape)}")
    rotary_dim = 2 * cos.shape[1]
    if rotary_dim > head_dim or rotary_dim % 16:
        raise invalid_argument(f"{function}: rotary_dim = {rotary_dim} (2 * rotary_cos.shape[1]) "
                               f"must be a multiple of 16 and at most headdim {head_dim}")
    if cos.shape[0] < capacity:
        raise invalid_argument(f"{function}: rotary_cos has {cos.shape[0]} positions but the "
                               f"cache holds {capacity} keys: it needs at least that many")


def _positions(offsets, count, advancing):
    """(batch, count) rotary positions: offsets[b] + i, or offsets[b] for every i."""
    steps = torch.arange(count, device=offsets.device, dtype=torch.int64)
    base = offsets.to(torch.int64)[:, None]
    return base + steps[None] if advancing else base.expand(-1, count)


def _apply_rotary(x, cos, sin, positions, interleaved):
    """x (batch, seqlen, heads, headdim) with its first 2 * cos.shape[1]
    dimensions rotated at `positions` (batch, seqlen), computed in float32:
    pairs (2i, 2i + 1) when interleaved (GPT-J), else halves (GPT-NeoX)."""
    rotary_dim = 2 * cos.shape[1]
    positions = positions.clamp(0, cos.shape[0] - 1)
    c = cos[positions].unsqueeze(2).float()
    s = sin[positions].unsqueeze(2).float()
    part = x[..., :rotary_dim].float()
    if interleaved:
        x1, x2 = part[..., 0::2], part[..., 1::2]
        rotated = torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)
    else:
        x1, x2 = part[..., :rotary_dim // 2], part[..., rotary_dim // 2:]
        rotated = torch.cat((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1)
    return torch.cat((rotated.to(x.dtype), x[..., rotary_dim:]), dim=-1)


def _check_fp8_append(function, k_cache, v_cache, k, v):
    """New keys and values go into an FP8 cache as they are (a copy of
    bytes): e4m3 into e4m3 caches only, and nothing else into them."""
    for name, new, cache_name, cache in (("k", k, "k_cache", k_cache),
                                         ("v", v, "v_cache", v_cache)):
        if _E4M3 is None or (cache.dtype == _E4M3) == (new.dtype == _E4M3):
            continue
        if cache.dtype == _E4M3:
            raise invalid_argument(
                f"{function}: {cache_name} is float8_e4m3fn but the new {name} has dtype "
                f"{new.dtype}: new keys and values are copied into an FP8 cache as they are; "
                f"quantize them with the cache's descale first ({name}8 = ({name} / "
                f"{name}_descale).to(torch.float8_e4m3fn))")
        raise invalid_argument(
            f"{function}: the new {name} is float8_e4m3fn but {cache_name} has dtype "
            f"{cache.dtype}: append keys and values of the cache's dtype")


def _append_to_cache(k_cache, v_cache, k, v, cache_seqlens, block_table=None,
                    cache_batch_idx=None):
    """Writes k / v (batch, seqlen_new, ...) into the caches in place at rows
    cache_seqlens[b] + i of sequence b (its page through block_table, or
    its cache row cache_batch_idx[b]); indices clamped to the cache. FP8
    into FP8 is a copy of bytes (through uint8 views)."""
    if _E4M3 is not None and k_cache.dtype == _E4M3 and k.dtype == _E4M3:
        k_cache, k = k_cache.view(torch.uint8), k.view(torch.uint8)
    if _E4M3 is not None and v_cache.dtype == _E4M3 and v.dtype == _E4M3:
        v_cache, v = v_cache.view(torch.uint8), v.view(torch.uint8)
    batch, seqlen_new = k.shape[:2]
    positions = _positions(cache_seqlens, seqlen_new, True)
    if block_table is not None:
        page_size = k_cache.shape[1]
        table = block_table.to(torch.int64)
        slot = (positions // page_size).clamp(0, table.shape[1] - 1)
        pages = table.gather(1, slot)
        rows = positions % page_size
        k_cache[pages, rows] = k.to(k_cache.dtype)
        v_cache[pages, rows] = v.to(v_cache.dtype)
        return
    rows = positions.clamp(0, k_cache.shape[1] - 1)
    if cache_batch_idx is None:
        sequences = torch.arange(batch, device=k.device, dtype=torch.int64)
    else:
        sequences = cache_batch_idx.to(torch.int64)
    sequences = sequences[:, None].expand(-1, seqlen_new)
    k_cache[sequences, rows] = k.to(k_cache.dtype)
    v_cache[sequences, rows] = v.to(v_cache.dtype)


def _select_cache_rows(k_cache, v_cache, cache_batch_idx):
    """The caches of the sequences cache_batch_idx names: as pages of the
    cache itself (no copy) when each sequence's rows are whole pages of 16
    (of 256 where they divide), else copies of those rows. Returns (k, v,
    block_table or None)."""
    rows = k_cache.shape[1]
    whole_pages = rows % 16 == 0 and rows > 0 and all(
        t.stride(0) == rows * t.stride(1) for t in (k_cache, v_cache))
    if not whole_pages:
        index = cache_batch_idx.long()
        return _rows_of(k_cache, index), _rows_of(v_cache, index), None
    page = next(p for p in (256, 128, 64, 32, 16) if rows % p == 0)
    per_sequence = rows // page
    table = (cache_batch_idx.to(torch.int32)[:, None] * per_sequence +
             torch.arange(per_sequence, dtype=torch.int32, device=k_cache.device)[None])

    def as_pages(t):
        return t.as_strided((t.shape[0] * per_sequence, page, *t.shape[2:]),
                            (page * t.stride(1), *t.stride()[1:]))
    return as_pages(k_cache), as_pages(v_cache), table.contiguous()


def _shift_left(k_cache, v_cache, block_table, leftpad, capacity):
    """Copies of the caches with sequence b's rows from cache_leftpad[b] on
    moved to row 0 (attngen's kernels read a sequence's keys from row 0)."""
    if block_table is not None:  # cache_batch_idx's page view: read the rows back
        pages = block_table.to(torch.int64)
        k_cache = _rows_of(k_cache, pages).flatten(1, 2)
        v_cache = _rows_of(v_cache, pages).flatten(1, 2)
    batch = leftpad.shape[0]
    rows = (torch.arange(capacity, device=leftpad.device, dtype=torch.int64)[None] +
            leftpad.to(torch.int64)[:, None]).clamp(max=capacity - 1)
    sequences = torch.arange(batch, device=leftpad.device, dtype=torch.int64)[:, None]
    return _rows_of(k_cache, sequences, rows), _rows_of(v_cache, sequences, rows)


def _rows_of(t, *index):
    """t[index], FP8 through a uint8 view (a copy of bytes: float8 has few
    torch kernels)."""
    if _E4M3 is not None and t.dtype == _E4M3:
        return t.view(torch.uint8)[index].view(_E4M3)
    return t[index]
