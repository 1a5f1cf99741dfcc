"""The backward pass on (batch, seqlen, heads, head_dim) torch tensors:
attngen.attention_backward (functional: the caller passes out and lse, so a
ring-attention caller can pass the merged global ones), the torch custom op
attngen::attention_backward, and the autograd of attngen::attention that
calls it. deterministic=False (flash_attn's default) on sm_90a at head dim
128 (but not causal over at most 1k keys) and at head dim 64 causal over
more keys runs the one-kernel backward, as FlashAttention-2/3's: pre (delta =
rowsum(dO * O), an f32 dQ accumulator zeroed), fused (dK and dV per
key/value head, and dQ added into the accumulator with TMA reductions, so S
and dP are computed once) and post (dQ from the accumulator); its dQ's sums
vary in order from run to run. ATTNGEN_FUSED_BACKWARD=1 runs it wherever it
applies, =0 never. deterministic=True (or
torch.use_deterministic_algorithms(True)), and every other case, runs the
deterministic pair: dq (delta, then dQ) and
dkdv, each summing in registers in a fixed order."""

import ctypes
import os
from typing import Optional

from ._capi import lib
from ._errors import check_status, invalid_argument
from ._torch_checks import (TensorLayout, call_options, check_devices, check_qkv,
                            check_tensors, require_torch, torch)
from ._jit import device_arch
from ._torch_launch import (_strides_4d, check_alibi_slopes, current_stream, forward_args,
                            head_dim_v_of, kernel_for, set_alibi_args)

_LAYOUT = TensorLayout(function="attention_backward", names=("q", "k", "v"), rank=4,
                       dims=" (batch, seqlen, heads, head_dim)", rank_hint="",
                       row_dims="the batch, seqlen and heads dimensions", kv_heads="k/v have")


def attention_backward(dout, q, k, v, out, lse, causal=False, scale=None, *,
                       causal_align="bottom-right", softcap=0.0, window_size=(-1, -1),
                       deterministic=False, alibi_slopes=None):
    """The gradients (dq, dk, dv) of attngen.attention(q, k, v, ...) given dout
    = dL/dout, the forward's out and its lse ((batch, heads, seqlen_q)
    float32, as attention(..., return_lse=True) returns it). The options are
    the forward's. out and lse may come from elsewhere (a ring of context-
    parallel calls merged into the global ones). dk and dv have k's and v's
    heads: grouped-query gradients are summed per key/value head.
    deterministic=False (flash_attn's default) runs the one-kernel backward
    where it is the faster (sm_90a, head dim 128, but not causal over at most
    1k keys or with fewer k/v heads than q heads; ATTNGEN_FUSED_BACKWARD=1
    adds those and head dim 64, =0 turns it off), whose dq sums in an order that varies;
    deterministic=True (or
    torch.use_deterministic_algorithms(True)) gives bitwise-equal results
    from run to run. alibi_slopes as the forward's. Head dims up to 256."""
    require_torch("attention_backward")
    if not isinstance(deterministic, bool):
        raise TypeError("attngen.attention_backward: deterministic must be a bool")
    options = _check_arguments(dout, q, k, v, out, lse, causal, scale, causal_align, softcap,
                               window_size, alibi_slopes)
    return tuple(torch.ops.attngen.attention_backward(
        dout, q, k, v, out, lse, options.causal, options.scale, options.causal_align,
        options.softcap, options.window_left, options.window_right, alibi_slopes,
        deterministic))


def _check_arguments(dout, q, k, v, out, lse, causal, scale, causal_align, softcap,
                     window_size, alibi_slopes=None):
    check_tensors(_LAYOUT, q, k, v)
    options = call_options("attention_backward", causal, scale, causal_align, softcap,
                           window_size)
    check_qkv(_LAYOUT, q, k, v, value_head_dim=True)
    # out and dout have v's head dim (DeepSeek's 192/128: q and k 192, v 128).
    out_shape = (*q.shape[:-1], v.shape[-1])
    for name, t in (("dout", dout), ("out", out)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"attngen.attention_backward: {name} must be a torch.Tensor")
        if tuple(t.shape) != out_shape or t.dtype != q.dtype:
            raise invalid_argument(f"{name} must have the forward output's shape {out_shape} "
                                   f"and q's dtype {q.dtype}; got {tuple(t.shape)} {t.dtype}")
        if t.stride()[-1] != 1 or any(s % 8 for s in t.stride()[:-1]):
            raise invalid_argument(f"{name} has strides {tuple(t.stride())}: its last "
                                   "dimension must be contiguous and the others multiples of "
                                   "8 elements; call .contiguous()")
    batch, seqlen_q, heads = q.shape[:3]
    if (not isinstance(lse, torch.Tensor) or tuple(lse.shape) != (batch, heads, seqlen_q)
            or lse.dtype != torch.float32):
        raise invalid_argument(
            "lse must be the forward's log-sum-exp: a float32 tensor (batch, heads, seqlen_q) = "
            f"{(batch, heads, seqlen_q)}; get it from attention(..., return_lse=True)")
    if k.shape[0] != batch:
        raise invalid_argument(f"q has batch {batch} but k and v have batch {k.shape[0]}")
    check_alibi_slopes("attention_backward", alibi_slopes, q, batch, heads)
    if alibi_slopes is not None:
        # ALiBi measures its distances from the diagonal even without a mask.
        options = options._replace(causal_align=causal_align)
    check_devices([("q", q), ("k", k), ("v", v), ("dout", dout), ("out", out), ("lse", lse)])
    return options


_FUSED_ARCH = {}


def _runs_fused(q, k, causal, deterministic):
    """Whether the one-kernel backward runs: not asked to be deterministic
    (by the call or by torch), sm_90a kernels on q's device (ATTNGEN_ARCH=
    sm_80 runs the sm_80 ones), and head dim 128, where it measured
    1.00-1.10x the deterministic pair on the H200 (docs/PERF.md), grouped
    heads included, except causal at 1k keys (0.97x: short loops); at head
    dim 64 causal over more keys (1.01-1.04x; unmasked the pair is faster).
    ATTNGEN_FUSED_BACKWARD=1 runs it wherever it applies (head dims 64 and
    128, sm_80 kernels included, whose one-kernel backward has not been
    measured yet); =0 runs the pair everywhere."""
    choice = _fused_choice()
    if choice == "0" or deterministic or torch.are_deterministic_algorithms_enabled():
        return False
    if q.shape[-1] not in (64, 128):
        return False
    if choice == "":
        # Causal over short sequences its key-owning CTAs have short loops;
        # at head dim 64 it pays only causal.
        if causal and k.shape[1] <= 1024:
            return False
        if q.shape[-1] == 64 and not causal:
            return False
    return _fused_arch(q) == "sm_90a" or choice == "1"


def _runs_fused_varlen(q, v, deterministic):
    """Whether a packed batch's backward runs the one-kernel backward: only
    sm_80 kernels build it (sm_90a's TMA would load the next sequence's keys
    into its dQ), and only with ATTNGEN_FUSED_BACKWARD=1 until it has been
    measured; head dims 64 and 128, one head dim, not deterministic."""
    if (_fused_choice() != "1" or deterministic
            or torch.are_deterministic_algorithms_enabled()):
        return False
    if q.shape[-1] not in (64, 128) or v.shape[-1] != q.shape[-1]:
        return False
    return _fused_arch(q) == "sm_80"


def _fused_choice():
    """ATTNGEN_FUSED_BACKWARD: "" (unset), "0" or "1"."""
    choice = os.environ.get("ATTNGEN_FUSED_BACKWARD", "")
    if choice not in ("", "0", "1"):
        raise invalid_argument(
            f"ATTNGEN_FUSED_BACKWARD={choice!r}: use 1 (the one-kernel backward wherever it "
            "applies), 0 (the deterministic pair everywhere) or leave it unset (the "
            "one-kernel backward where it is the faster)")
    return choice


def _fused_arch(q):
    """The arch attngen compiles for on q's device (cached per device)."""
    index = q.device.index
    if index not in _FUSED_ARCH:
        with torch.cuda.device(q.device):
            _FUSED_ARCH[index] = device_arch()
    return _FUSED_ARCH[index]


def _backward(dout, q, k, v, out, lse, causal, scale, causal_align, softcap, window_left,
              window_right, alibi_slopes=None, deterministic=False):
    """Runs the kernels: the op's CUDA implementation."""
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    batch, seqlen_q = q.shape[:2]
    if batch == 0 or seqlen_q == 0 or k.shape[1] == 0:
        # No query row (or no key): nothing flows; the kernels launch nothing.
        return dq.zero_(), dk.zero_(), dv.zero_()
    lse = lse.contiguous()
    delta = torch.empty_like(lse)
    fields = dict(causal=causal, causal_align=causal_align, softcap=softcap,
                  window_size=(window_left, window_right), alibi=alibi_slopes is not None,
                  head_dim_v=head_dim_v_of(q, v))
    # The one-kernel backward has one head dim.
    fused = _runs_fused(q, k, causal, deterministic) and fields["head_dim_v"] == 0
    if fused:
        kernels = [kernel_for(q, scale, backward=part, **fields)
                   for part in ("pre", "fused", "post")]
    else:
        kernels = [kernel_for(q, scale, backward=part, **fields) for part in ("dq", "dkdv")]
    args = forward_args(q, k, v, out, lse, batch, k.shape[1])
    set_alibi_args(args, alibi_slopes)
    args.dout, args.delta = dout.data_ptr(), delta.data_ptr()
    args.dq, args.dk, args.dv = dq.data_ptr(), dk.data_ptr(), dv.data_ptr()
    args.dout_strides[:] = _strides_4d(dout)
    args.dq_strides[:] = _strides_4d(dq)
    args.dk_strides[:] = _strides_4d(dk)
    args.dv_strides[:] = _strides_4d(dv)
    stream = current_stream(q.device)
    if fused:
        # The f32 dQ accumulator, shaped as dq: the pre kernel zeroes it.
        dq_accum = torch.empty(q.shape, dtype=torch.float32, device=q.device)
        args.dq_accum = dq_accum.data_ptr()
        check_status(lib.attngen_kernel_backward_fused(*kernels, ctypes.byref(args), stream))
    else:
        check_status(lib.attngen_kernel_backward(*kernels, ctypes.byref(args), stream))
    return dq, dk, dv


if torch is not None:
    @torch.library.custom_op("attngen::attention_backward", mutates_args=(),
                             device_types="cuda")
    def _attention_backward_op(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                               v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
                               causal: bool, scale: float, causal_align: str, softcap: float,
                               window_left: int, window_right: int,
                               alibi_slopes: Optional[torch.Tensor] = None,
                               deterministic: bool = False
                               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The gradients of attngen::attention (eager, traced and in CUDA graphs)."""
        return _backward(dout.contiguous() if dout.stride()[-1] != 1 else dout, q, k, v, out,
                         lse, causal, scale, causal_align, softcap, window_left, window_right,
                         alibi_slopes, deterministic)

    @_attention_backward_op.register_fake
    def _attention_backward_fake(dout, q, k, v, out, lse, causal, scale, causal_align,
                                 softcap, window_left, window_right, alibi_slopes=None,
                                 deterministic=False):
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def register_attention_autograd(op):
    """attngen::attention's autograd: save q, k, v, out and lse, and run the
    backward kernels on dout. The lse output is not differentiated (as
    flash_attn's): its gradient must be unused."""
    def setup_context(ctx, inputs, output):
        q, k, v, causal, scale, _, causal_align, softcap, window_left, window_right = inputs[:10]
        ctx.alibi_slopes = inputs[10] if len(inputs) > 10 else None
        ctx.deterministic = bool(inputs[11]) if len(inputs) > 11 else False
        out, lse = output
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.options = (causal, scale, causal_align, softcap, window_left, window_right)

    def backward(ctx, grad_out, grad_lse):
        q, k, v, out, lse = ctx.saved_tensors
        if lse.numel() == 0 and q.numel() > 0:
            raise RuntimeError("attngen.attention's autograd needs the forward's lse: call "
                               "the op with return_lse=True (attngen.attention does)")
        dq, dk, dv = torch.ops.attngen.attention_backward(
            grad_out.contiguous(), q, k, v, out, lse, *ctx.options, ctx.alibi_slopes,
            ctx.deterministic)
        return dq, dk, dv, None, None, None, None, None, None, None, None, None

    op.register_autograd(backward, setup_context=setup_context)
