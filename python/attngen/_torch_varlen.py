"""attngen.attention_varlen on packed variable-length batches, as
flash_attn_varlen_func takes them: its checks (the values of cu_seqlens
through the runtime's attnrt_check_cu_seqlens), the torch custom op
attngen::attention_varlen (torch.compile, CUDA graphs) and the launch; its
backward: attngen.attention_varlen_backward, the custom op
attngen::attention_varlen_backward and the autograd that calls it."""

import ctypes
from typing import Optional
import math
import numbers

from ._capi import lib
from ._errors import invalid_argument
from ._torch_checks import (TensorLayout, call_options, check_devices, check_int32,
                            check_is_tensor, check_qkv, check_rank, check_tensors,
                            require_torch, torch)
from ._torch_launch import (_strides_4d, check_alibi_slopes, current_stream, forward_args,
                            head_dim_v_of, kernel_for, launch, outputs_like, set_alibi_args,
                            short_sequence_tiles, use_custom_op)
from ._errors import check_status
from ._fp8_args import is_fp8_call
from ._varlen_seqlens import check_seqlen_values
from ._torch_varlen_fp8 import attention_varlen_fp8, check_fp8_pages, check_fp8_varlen
from ._torch_backward import _runs_fused_varlen

_LAYOUT = TensorLayout(
    function="attention_varlen", names=("q", "k", "v"), rank=3,
    dims=" (total_tokens, heads, head_dim), the sequences packed along the rows",
    rank_hint=" (for (batch, seqlen, heads, head_dim) tensors use attngen.attention)",
    row_dims="the tokens and heads dimensions", kv_heads="k/v have")



def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                     causal=False, window_size=(-1, -1), softcap=0.0, scale=None,
                     return_lse=False, *, causal_align="bottom-right", check_seqlens=True,
                     alibi_slopes=None, q_descale=None, k_descale=None, v_descale=None,
                     block_table=None):
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
    side unbounded); with causal=True right must be -1 or 0. alibi_slopes, a
    float32 tensor (heads,) or (batch, heads), adds ALiBi's bias per sequence
    as in attention() (differentiable too).

    check_seqlens=True (the default) checks the values of cu_seqlens_q/k
    against the tensors and max_seqlen_q/k before the launch: that copies
    them to the host, a synchronization per call. It is skipped while a CUDA
    graph is being captured and while tracing; pass False once the inputs
    are known to be right (serving loops, benchmarks). The kernel never
    reads or writes outside its tensors either way. Registered as the torch
    op torch.ops.attngen.attention_varlen (torch.compile, CUDA graphs).

    Differentiable: gradients flow to q, k and v through
    attention_varlen_backward's kernels (head dims up to 256;
    deterministic).

    block_table (batch, max_blocks) int32: k and v are a paged KV cache
    (num_blocks, page_size, kv_heads, head_dim), page_size a multiple of 16,
    as flash_attn_varlen_func takes one (chunked prefill): sequence b has
    cu_seqlens_k[b + 1] - cu_seqlens_k[b] keys, key n in row n % page_size
    of page block_table[b, n // page_size]. The kernel reads the pages in
    place (no copy); a sequence's keys are clamped to what its row of the
    table addresses (max_blocks * page_size), which check_seqlens checks.
    Forward only (no gradients through a cache); bf16, f16 and FP8 (pages of
    16, 32, 64, 128 or a multiple of 128 rows).

    FP8 (sm_90a), as attention(): torch.float8_e4m3fn q, k and v with
    float32 q_descale, k_descale, v_descale (None: 1.0; one element: per
    tensor; (batch, kv_heads): per sequence and key/value head; or block
    scales, q_descale (batch, heads, ceil(max_seqlen_q / 128)) and k_descale
    and v_descale (batch, kv_heads, ceil(max_seqlen_k / 128)), one per 128
    rows of each sequence, as attngen.quantize_fp8_varlen makes them) give a
    bfloat16 out; v is read row-major, as k, and transposed in the kernel.
    Forward only."""
    require_torch("attention_varlen")
    cu_q, cu_k, max_q, max_k = cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k
    descales = (q_descale, k_descale, v_descale)
    if isinstance(q, torch.Tensor) and is_fp8_call(q, descales):
        paged = block_table is not None
        if paged:
            _check_paged_tensors(q, k, v)
        else:
            check_tensors(_LAYOUT, q, k, v)
        options = call_options("attention_varlen", causal, scale, causal_align, softcap,
                               window_size, return_lse=return_lse, check_seqlens=check_seqlens)
        _check_cu_seqlens(cu_q, cu_k)
        for name, value in (("max_seqlen_q", max_q), ("max_seqlen_k", max_k)):
            _check_max_seqlen(name, value)
        # One page of k and v stands for packed k and v in the FP8 checks.
        check_fp8_varlen(q, k[0] if paged else k, v[0] if paged else v, cu_q, alibi_slopes,
                         descales, max_q, max_k)
        named = list(zip(_LAYOUT.names + ("cu_seqlens_q", "cu_seqlens_k"),
                         (q, k, v, cu_q, cu_k)))
        if paged:
            check_fp8_pages(k.shape[1])
            _check_block_table(k, v, block_table, cu_q.numel() - 1)
            named.append(("block_table", block_table))
        check_devices(named +
                      ([("alibi_slopes", alibi_slopes)] if alibi_slopes is not None else []) +
                      [(n, d) for n, d in zip(("q_descale", "k_descale", "v_descale"),
                                              descales) if d is not None])
        if alibi_slopes is not None:
            # ALiBi measures its distances from the diagonal even without a mask.
            options = options._replace(causal_align=causal_align)
        return attention_varlen_fp8(q, k, v, cu_q, cu_k, max_q, max_k, options, return_lse,
                                    check_seqlens, descales, alibi_slopes, block_table)
    # Under autograd the op keeps the LSE, which its backward reads.
    records = torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in (q, k, v))
    if records and block_table is not None:
        raise NotImplementedError(
            "attngen.attention_varlen: no gradients through a paged K/V (block_table); a "
            "paged cache is for inference: call it under torch.no_grad(), or pass packed k "
            "and v for training")
    options = _check_arguments(q, k, v, cu_q, cu_k, max_q, max_k, causal, window_size, softcap,
                               scale, return_lse, causal_align, check_seqlens,
                               alibi_slopes=alibi_slopes, block_table=block_table)
    if use_custom_op(q, k, v, cu_q, cu_k, *(() if block_table is None else (block_table,))):
        out, lse = torch.ops.attngen.attention_varlen(
            q, k, v, cu_q, cu_k, max_q, max_k, options.causal, options.scale,
            return_lse or records, options.causal_align, options.softcap,
            options.window_left, options.window_right, check_seqlens, alibi_slopes,
            block_table)
    else:
        out, lse = _forward(q, k, v, cu_q, cu_k, max_q, max_k, options.causal, options.scale,
                            return_lse, options.causal_align, options.softcap,
                            options.window_left, options.window_right, check_seqlens,
                            alibi_slopes, block_table)
    return (out, lse) if return_lse else out


def _check_arguments(q, k, v, cu_q, cu_k, max_q, max_k, causal, window_size, softcap, scale,
                     return_lse, causal_align, check_seqlens, gradients=None,
                     alibi_slopes=None, block_table=None):
    """Everything but the values of cu_seqlens (and the backward's `gradients`
    dout, out, lse), the devices last; returns the options."""
    if block_table is None:
        check_tensors(_LAYOUT, q, k, v)
    else:
        _check_paged_tensors(q, k, v)
    options = call_options("attention_varlen", causal, scale, causal_align, softcap,
                           window_size, return_lse=return_lse, check_seqlens=check_seqlens)
    if block_table is None:
        check_qkv(_LAYOUT, q, k, v, value_head_dim=True)
    else:
        # One page of k and v is a (page_size, kv_heads, head_dim) tensor as
        # packed k and v are: the same dtype, head dim, head and row checks.
        check_qkv(_LAYOUT, q, k[0], v[0], value_head_dim=True)
    _check_cu_seqlens(cu_q, cu_k)
    for name, value in (("max_seqlen_q", max_q), ("max_seqlen_k", max_k)):
        _check_max_seqlen(name, value)
    named = list(zip(_LAYOUT.names + ("cu_seqlens_q", "cu_seqlens_k"), (q, k, v, cu_q, cu_k)))
    if block_table is not None:
        _check_block_table(k, v, block_table, cu_q.numel() - 1)
        named.append(("block_table", block_table))
    if gradients is not None:
        _check_gradient_inputs(*gradients, q, v)
        named += list(zip(("dout", "out", "lse"), gradients))
    check_alibi_slopes("attention_varlen", alibi_slopes, q, cu_q.numel() - 1, q.shape[1])
    if alibi_slopes is not None:
        # ALiBi measures its distances from the diagonal even without a mask.
        options = options._replace(causal_align=causal_align)
    check_devices(named)
    return options


# A page holds whole 16-row MMA k steps (the compiler's rule), up to 2^16.
_PAGE_ROW_MULTIPLE, _MAX_PAGE_SIZE = 16, 1 << 16


def _check_paged_tensors(q, k, v):
    """q packed (total_q, heads, head_dim); k and v a paged cache (num_blocks,
    page_size, kv_heads, head_dim) with at least one page."""
    for name, t in zip(_LAYOUT.names, (q, k, v)):
        check_is_tensor("attention_varlen", name, t)
    check_rank("q", q, 3, _LAYOUT.dims, _LAYOUT.rank_hint)
    for name, t in (("k", k), ("v", v)):
        check_rank(name, t, 4, " (num_blocks, page_size, kv_heads, head_dim): a paged "
                   "KV cache, as block_table addresses it")
    if tuple(k.shape[:3]) != tuple(v.shape[:3]):
        raise invalid_argument(f"k and v must have the same pages and kv_heads (num_blocks, "
                               f"page_size, kv_heads); got k {tuple(k.shape)} and v "
                               f"{tuple(v.shape)}")
    page_size = k.shape[1]
    if (page_size < _PAGE_ROW_MULTIPLE or page_size % _PAGE_ROW_MULTIPLE
            or page_size > _MAX_PAGE_SIZE):
        raise invalid_argument(f"k and v have pages of {page_size} rows (dim 1); attngen "
                               f"needs a multiple of 16 up to {_MAX_PAGE_SIZE}")
    if k.shape[0] < 1:
        raise invalid_argument("the paged k and v hold no page (dim 0 is 0)")


def _check_block_table(k, v, block_table, batch):
    """A (batch, max_blocks) int32 table with contiguous rows, and pages whose
    stride a 16-byte aligned row can use."""
    check_is_tensor("attention_varlen", "block_table", block_table)
    check_rank("block_table", block_table, 2)
    check_int32("block_table", block_table)
    if block_table.shape[0] != batch:
        raise invalid_argument(f"block_table has {block_table.shape[0]} rows but cu_seqlens "
                               f"describe {batch} sequences: one row of page indices per "
                               "sequence")
    if block_table.shape[1] < 1:
        raise invalid_argument("block_table has no columns: a sequence needs at least one page")
    if block_table.shape[1] > 1 and block_table.stride(1) != 1:
        raise invalid_argument(f"block_table has strides {tuple(block_table.stride())}: its "
                               "rows must be contiguous (stride 1 along max_blocks); call "
                               ".contiguous()")
    if block_table.shape[0] > 1 and block_table.stride(0) < block_table.shape[1]:
        raise invalid_argument(f"block_table has strides {tuple(block_table.stride())}: its "
                               "rows must not overlap (row stride >= max_blocks); call "
                               ".contiguous()")
    for name, t in (("k", k), ("v", v)):
        if t.shape[0] > 1 and t.stride(0) % 8:
            raise invalid_argument(f"{name} has strides {tuple(t.stride())}: its page stride "
                                   "must be a multiple of 8 elements (16 bytes); call "
                                   ".contiguous()")


def _check_cu_seqlens(cu_q, cu_k, function="attention_varlen"):
    """Both are contiguous int32 vectors of batch + 1 entries, as flash_attn's."""
    for name, t in (("cu_seqlens_q", cu_q), ("cu_seqlens_k", cu_k)):
        check_is_tensor(function, name, t)
        check_int32(name, t)
        if t.dim() != 1 or t.numel() < 1:
            raise invalid_argument(f"{name} must be 1-D with batch + 1 entries (where each "
                                   "sequence starts, then the total); got shape "
                                   f"{tuple(t.shape)}")
        if t.numel() > 1 and t.stride(0) != 1:
            raise invalid_argument(f"{name} must be contiguous (stride 1); got stride "
                                   f"{t.stride(0)}: call .contiguous()")
    if cu_q.numel() != cu_k.numel():
        raise invalid_argument(f"cu_seqlens_q has {cu_q.numel()} entries but cu_seqlens_k has "
                               f"{cu_k.numel()}: both hold batch + 1 entries, one per sequence "
                               "plus the total")


def _check_max_seqlen(name, value, function="attention_varlen"):
    """An int (a SymInt while tracing) that fits the runtime's int32."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, torch.SymInt)):
        raise TypeError(f"attngen.{function}: {name} must be an int (the longest "
                        f"sequence's length), got {value!r}")
    if not isinstance(value, torch.SymInt) and not 0 <= value < 2**31:
        raise invalid_argument(f"{name} = {value} is out of range: it must be 0 to 2^31 - 1")


def _forward(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, return_lse, causal_align,
             softcap, window_left, window_right, check_seqlens, alibi_slopes=None,
             block_table=None):
    """The op's CUDA implementation and the eager path: the value check where
    the host can read, then the launch."""
    out, lse = outputs_like(q, return_lse, v)
    if check_seqlens and not torch.cuda.is_current_stream_capturing():
        check_seqlen_values(q, k, cu_q, cu_k, max_q, max_k, block_table)
    _launch(q, k, v, cu_q, cu_k, max_q, max_k, out, lse if return_lse else None, causal,
            scale, causal_align, softcap, window_left, window_right, alibi_slopes,
            block_table)
    return out, lse


def _launch(q, k, v, cu_q, cu_k, max_q, max_k, out, lse, causal, scale, causal_align,
            softcap, window_left=-1, window_right=-1, alibi_slopes=None, block_table=None):
    """Runs the varlen kernel into `out` (total_q, H, D) and, unless None, `lse`
    (H, total_q) float32, both contiguous in their last dimension; the inputs
    as _check_arguments accepts them. (gpu/varlen_check.py passes outputs of
    its own, poisoned and guarded.) With a block_table, k and v are pages and
    the kernel's nk is what a row of the table addresses."""
    paged = block_table is not None
    page_size = k.shape[1] if paged else 0
    total_q, batch = q.shape[0], cu_q.numel() - 1
    total_k = block_table.shape[1] * page_size if paged else k.shape[0]
    if batch == 0 or total_q == 0:
        return
    if total_k == 0:
        # Every sequence is without keys: out 0 and lse -inf, no kernel to run.
        out.zero_()
        if lse is not None:
            lse.fill_(-math.inf)
        return
    tiles = short_sequence_tiles(q, max(max_q, max_k), causal, softcap,
                                 (window_left, window_right), alibi_slopes is not None)
    kernel = kernel_for(q, scale, causal=causal, causal_align=causal_align, softcap=softcap,
                        window_size=(window_left, window_right), varlen=True,
                        alibi=alibi_slopes is not None, head_dim_v=head_dim_v_of(q, v),
                        page_size=page_size, **tiles)
    args = forward_args(q, k, v, out, lse, batch, total_k)
    args.cu_seqlens_q, args.cu_seqlens_k = cu_q.data_ptr(), cu_k.data_ptr()
    args.max_seqlen_q, args.max_seqlen_k = max_q, max_k
    if paged:
        args.block_table = block_table.data_ptr()
        args.block_table_stride = block_table.stride(0)
        args.max_blocks, args.num_blocks = block_table.shape[1], k.shape[0]
        args.page_size = page_size
    set_alibi_args(args, alibi_slopes)
    launch(kernel, args, q.device)


if torch is not None:
    @torch.library.custom_op("attngen::attention_varlen", mutates_args=(), device_types="cuda")
    def _attention_varlen_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor,
                             max_seqlen_q: int, max_seqlen_k: int, causal: bool, scale: float,
                             return_lse: bool, causal_align: str, softcap: float,
                             window_left: int, window_right: int,
                             check_seqlens: bool,
                             alibi_slopes: Optional[torch.Tensor] = None,
                             block_table: Optional[torch.Tensor] = None
                             ) -> tuple[torch.Tensor, torch.Tensor]:
        """What traced calls (torch.compile, CUDA graphs, autograd) run."""
        return _forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                        causal, scale, return_lse, causal_align, softcap, window_left,
                        window_right, check_seqlens, alibi_slopes, block_table)

    @_attention_varlen_op.register_fake
    def _attention_varlen_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                               max_seqlen_k, causal, scale, return_lse, causal_align, softcap,
                               window_left, window_right, check_seqlens, alibi_slopes=None,
                               block_table=None):
        """The outputs' shapes, for tracing with fake or meta tensors."""
        return outputs_like(q, return_lse, v)


def attention_varlen_backward(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k,
                              max_seqlen_q, max_seqlen_k, causal=False, window_size=(-1, -1),
                              softcap=0.0, scale=None, *, causal_align="bottom-right",
                              deterministic=False, alibi_slopes=None):
    """The gradients (dq, dk, dv) of attention_varlen(q, k, v, cu_seqlens_q,
    ...) given dout = dL/dout (total_q, heads, head_dim), the forward's out
    and its lse ((heads, total_q) float32, as attention_varlen(...,
    return_lse=True) returns it); the other arguments are the forward's. As
    attention_backward: out and lse may come from elsewhere, dk and dv are
    summed per key/value head, and the result is deterministic (but with
    ATTNGEN_FUSED_BACKWARD=1 on sm_80 kernels, where deterministic=False runs
    the one-kernel backward at head dims 64 and 128). Head dims up to 256."""
    require_torch("attention_varlen_backward")
    if not isinstance(deterministic, bool):
        raise TypeError("attngen.attention_varlen_backward: deterministic must be a bool")
    cu_q, cu_k, max_q, max_k = cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k
    options = _check_arguments(q, k, v, cu_q, cu_k, max_q, max_k, causal, window_size, softcap,
                               scale, False, causal_align, True, gradients=(dout, out, lse),
                               alibi_slopes=alibi_slopes)
    return tuple(torch.ops.attngen.attention_varlen_backward(
        dout, q, k, v, out, lse, cu_q, cu_k, max_q, max_k, options.causal, options.scale,
        options.causal_align, options.softcap, options.window_left, options.window_right,
        alibi_slopes, deterministic))


def _check_gradient_inputs(dout, out, lse, q, v):
    # out and dout have v's head dim (a value head dim of its own).
    out_shape = (*q.shape[:-1], v.shape[-1])
    for name, t in (("dout", dout), ("out", out)):
        check_is_tensor("attention_varlen_backward", name, t)
        if tuple(t.shape) != out_shape or t.dtype != q.dtype:
            raise invalid_argument(f"{name} must have the forward output's shape {out_shape} "
                                   f"and q's dtype {q.dtype}; got {tuple(t.shape)} {t.dtype}")
        if t.stride()[-1] != 1 or any(s % 8 for s in t.stride()[:-1]):
            raise invalid_argument(f"{name} has strides {tuple(t.stride())}: its last "
                                   "dimension must be contiguous and the others multiples of "
                                   "8 elements; call .contiguous()")
    total_q, heads = q.shape[:2]
    if (not isinstance(lse, torch.Tensor) or tuple(lse.shape) != (heads, total_q)
            or lse.dtype != torch.float32):
        raise invalid_argument(
            "lse must be the forward's log-sum-exp: a float32 tensor (heads, total_q) = "
            f"{(heads, total_q)}; get it from attention_varlen(..., return_lse=True)")


def _backward(dout, q, k, v, out, lse, cu_q, cu_k, max_q, max_k, causal, scale, causal_align,
              softcap, window_left, window_right, alibi_slopes=None, deterministic=True):
    """Runs the backward kernels (the deterministic pair, or the one-kernel
    backward where _runs_fused_varlen says): the op's CUDA implementation."""
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    total_q, total_k, batch = q.shape[0], k.shape[0], cu_q.numel() - 1
    if batch == 0 or total_q == 0 or total_k == 0:
        # No query row, or no key anywhere: nothing flows.
        return dq.zero_(), dk.zero_(), dv.zero_()
    dout = dout if dout.stride()[-1] == 1 else dout.contiguous()
    lse = lse.contiguous()
    delta = torch.empty_like(lse)
    fields = dict(causal=causal, causal_align=causal_align, softcap=softcap,
                  window_size=(window_left, window_right), varlen=True,
                  alibi=alibi_slopes is not None, head_dim_v=head_dim_v_of(q, v))
    fused = _runs_fused_varlen(q, v, deterministic)
    parts = ("pre", "fused", "post") if fused else ("dq", "dkdv")
    kernels = [kernel_for(q, scale, backward=part, **fields) for part in parts]
    args = forward_args(q, k, v, out, lse, batch, total_k)
    set_alibi_args(args, alibi_slopes)
    args.cu_seqlens_q, args.cu_seqlens_k = cu_q.data_ptr(), cu_k.data_ptr()
    args.max_seqlen_q, args.max_seqlen_k = max_q, max_k
    args.dout, args.delta = dout.data_ptr(), delta.data_ptr()
    args.dq, args.dk, args.dv = dq.data_ptr(), dk.data_ptr(), dv.data_ptr()
    args.dout_strides[:] = _strides_4d(dout)
    args.dq_strides[:] = _strides_4d(dq)
    args.dk_strides[:] = _strides_4d(dk)
    args.dv_strides[:] = _strides_4d(dv)
    stream = current_stream(q.device)
    if fused:
        # The f32 dQ accumulator, packed as q: the pre kernel zeroes it.
        dq_accum = torch.empty(q.shape, dtype=torch.float32, device=q.device)
        args.dq_accum = dq_accum.data_ptr()
        check_status(lib.attngen_kernel_backward_fused(*kernels, ctypes.byref(args), stream))
    else:
        check_status(lib.attngen_kernel_backward(*kernels, ctypes.byref(args), stream))
    return dq, dk, dv


if torch is not None:
    @torch.library.custom_op("attngen::attention_varlen_backward", mutates_args=(),
                             device_types="cuda")
    def _attention_varlen_backward_op(
            dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
            out: torch.Tensor, lse: torch.Tensor, cu_seqlens_q: torch.Tensor,
            cu_seqlens_k: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int, causal: bool,
            scale: float, causal_align: str, softcap: float, window_left: int,
            window_right: int, alibi_slopes: Optional[torch.Tensor] = None,
            deterministic: bool = True
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The gradients of attngen::attention_varlen (eager, traced, CUDA graphs)."""
        return _backward(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                         max_seqlen_k, causal, scale, causal_align, softcap, window_left,
                         window_right, alibi_slopes, deterministic)

    @_attention_varlen_backward_op.register_fake
    def _attention_varlen_backward_fake(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k,
                                        max_seqlen_q, max_seqlen_k, causal, scale,
                                        causal_align, softcap, window_left, window_right,
                                        alibi_slopes=None, deterministic=True):
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    def _setup_context(ctx, inputs, output):
        (q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, _, causal_align, softcap,
         window_left, window_right, _) = inputs[:15]
        ctx.alibi_slopes = inputs[15] if len(inputs) > 15 else None
        ctx.paged = len(inputs) > 16 and inputs[16] is not None
        out, lse = output
        ctx.save_for_backward(q, k, v, out, lse, cu_q, cu_k)
        ctx.options = (max_q, max_k, causal, scale, causal_align, softcap, window_left,
                       window_right)

    def _autograd_backward(ctx, grad_out, grad_lse):
        if ctx.paged:
            raise NotImplementedError("attngen::attention_varlen: no gradients through a "
                                      "paged K/V (block_table); call it under torch.no_grad()")
        q, k, v, out, lse, cu_q, cu_k = ctx.saved_tensors
        if lse.numel() == 0 and q.numel() > 0:
            raise RuntimeError("attngen.attention_varlen's autograd needs the forward's lse: "
                               "call the op with return_lse=True (attention_varlen does)")
        dq, dk, dv = torch.ops.attngen.attention_varlen_backward(
            grad_out.contiguous(), q, k, v, out, lse, cu_q, cu_k, *ctx.options,
            ctx.alibi_slopes)
        return (dq, dk, dv) + (None,) * 14

    _attention_varlen_op.register_autograd(_autograd_backward, setup_context=_setup_context)
