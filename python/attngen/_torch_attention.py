"""attngen.attention on (batch, seqlen, heads, head_dim) torch tensors: its
checks, the torch custom op attngen::attention (so torch.compile and
torch.export trace it) and the launch. Eager calls launch directly (see
_torch_launch.use_custom_op)."""

from typing import Optional

from ._errors import invalid_argument
from ._torch_kvcache import _forward as _kvcache_forward, decodes
from ._torch_checks import (TensorLayout, call_options, check_devices, check_qkv,
                            check_tensors, require_torch, torch)
from ._torch_backward import register_attention_autograd
from ._fp8_args import is_fp8_call
from ._torch_fp8 import attention_fp8, check_fp8_arguments
from ._torch_launch import (check_alibi_slopes, forward_args, head_dim_v_of, kernel_for, launch,
                            outputs_like, set_alibi_args, short_sequence_tiles, use_custom_op)

_LAYOUT = TensorLayout(function="attention", names=("q", "k", "v"), rank=4,
                       dims=" (batch, seqlen, heads, head_dim)", rank_hint="",
                       row_dims="the batch, seqlen and heads dimensions", kv_heads="k/v have")


def attention(q, k, v, causal=False, scale=None, return_lse=False, *,
              causal_align="bottom-right", softcap=0.0, window_size=(-1, -1),
              alibi_slopes=None, deterministic=False, q_descale=None, k_descale=None,
              v_descale=None):
    """softmax(scale * q @ k^T [causal mask]) @ v for (batch, seqlen, heads,
    head_dim) tensors; returns out, or (out, lse) with lse (batch, heads,
    seqlen_q) float32 (natural-log log-sum-exp of the scaled scores). v may
    have a head dim of its own (DeepSeek's 192/128: q and k 192, v and out
    128); its backward is not implemented yet.

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
    -1 or 0. alibi_slopes, a float32 tensor (heads,) or (batch, heads) on q's
    device, adds ALiBi's bias -slope * |i + seqlen_k - seqlen_q - j| (the
    diagonal of causal_align; after a soft cap) to the scaled scores, as
    flash_attn's alibi_slopes (differentiable: the slopes get no gradient). A
    call with at most 16
    query rows (decoding) runs the
    KV-cache kernels, which pack the query heads of each key/value head and
    split the keys over CTAs. Registered as the torch op torch.ops.attngen.attention, which
    torch.compile and torch.export trace; eager calls launch directly (the
    op's first call costs seconds of PyTorch set-up).

    FP8 (sm_90a, FlashAttention-3's): q, k and v of dtype torch.float8_e4m3fn
    with float32 descales q_descale, k_descale, v_descale (None: 1.0; one
    element: per tensor; (batch, kv_heads): per batch and key/value head, as
    FA3's) compute softmax(scale * (q_descale q)(k_descale k)^T) (v_descale v)
    into a bfloat16 out. Head dims 64, 128 and 256, causal masks, windows,
    soft caps, ALiBi, GQA; no backward yet. v is read in place either way: a
    K-major v, its keys contiguous (attngen.quantize_fp8's; v =
    vt.permute(0, 3, 1, 2) of a [B, Hkv, D, Nk_pad] vt, Nk_pad a multiple of
    16), by the kernel that reads it so; a row-major v (head dim contiguous)
    by the kernel whose producer warpgroup transposes each tile in shared
    memory (at most 16 query rows over a row-major v: the FP8 decoding
    kernels, as attention_with_kvcache's, without block scales). Any other v
    is made contiguous first."""
    require_torch("attention")
    if not isinstance(deterministic, bool):
        raise TypeError("attngen.attention: deterministic must be a bool")
    descales = (q_descale, k_descale, v_descale)
    if isinstance(q, torch.Tensor) and is_fp8_call(q, descales):
        check_tensors(_LAYOUT, q, k, v)
        options = call_options("attention", causal, scale, causal_align, softcap, window_size,
                               return_lse=return_lse)
        check_fp8_arguments(q, k, v, options, alibi_slopes, descales)
        if alibi_slopes is not None:
            # ALiBi measures its distances from the diagonal even without a mask.
            options = options._replace(causal_align=causal_align)
        return attention_fp8(q, k, v, options, return_lse, descales, alibi_slopes)
    options = _check_arguments(q, k, v, causal, scale, return_lse, causal_align, softcap,
                               window_size, alibi_slopes)
    if use_custom_op(q, k, v):
        # Under autograd the op keeps the LSE, which its backward reads.
        records = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
        out, lse = torch.ops.attngen.attention(q, k, v, options.causal, options.scale,
                                               return_lse or records, options.causal_align,
                                               options.softcap, options.window_left,
                                               options.window_right, alibi_slopes,
                                               deterministic)
    else:
        out, lse = _forward(q, k, v, options.causal, options.scale, return_lse,
                            options.causal_align, options.softcap, options.window_left,
                            options.window_right, alibi_slopes)
    return (out, lse) if return_lse else out


def _check_arguments(q, k, v, causal, scale, return_lse, causal_align, softcap, window_size,
                     alibi_slopes=None):
    """Everything the kernel assumes, the device last; returns the options."""
    check_tensors(_LAYOUT, q, k, v)
    options = call_options("attention", causal, scale, causal_align, softcap, window_size,
                           return_lse=return_lse)
    check_qkv(_LAYOUT, q, k, v, value_head_dim=True)
    batch, seqlen_q = q.shape[:2]
    kv_batch, seqlen_k = k.shape[:2]
    if kv_batch != batch:
        raise invalid_argument(f"q has batch {batch} but k and v have batch {kv_batch}")
    if seqlen_k == 0 and seqlen_q > 0 and batch > 0:
        raise invalid_argument("k and v have sequence length 0: attention needs at least one "
                               "key")
    check_alibi_slopes("attention", alibi_slopes, q, batch, q.shape[2])
    if alibi_slopes is not None:
        # ALiBi measures its distances from the diagonal even without a mask.
        options = options._replace(causal_align=causal_align)
    check_devices(list(zip(_LAYOUT.names, (q, k, v))))
    return options


def _forward(q, k, v, causal, scale, return_lse, causal_align, softcap, window_left,
             window_right, alibi_slopes=None):
    """Runs the kernel: the op's CUDA implementation and the eager path."""
    alibi = alibi_slopes is not None
    head_dim_v = head_dim_v_of(q, v)
    if decodes(q, k, causal, causal_align, window_left, window_right, alibi):
        return _kvcache_forward(q, k, v, None, None, causal, scale, softcap, return_lse, 0,
                                window_left, window_right, alibi_slopes=alibi_slopes)
    out, lse = outputs_like(q, return_lse, v)
    tiles = short_sequence_tiles(q, max(q.shape[1], k.shape[1]), causal, softcap,
                                 (window_left, window_right), alibi)
    kernel = kernel_for(q, scale, causal=causal, causal_align=causal_align, softcap=softcap,
                        window_size=(window_left, window_right), alibi=alibi,
                        head_dim_v=head_dim_v, **tiles)
    args = forward_args(q, k, v, out, lse if return_lse else None, q.shape[0], k.shape[1])
    set_alibi_args(args, alibi_slopes)
    launch(kernel, args, q.device)
    return out, lse


if torch is not None:
    @torch.library.custom_op("attngen::attention", mutates_args=(), device_types="cuda")
    def _attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                      scale: float, return_lse: bool, causal_align: str, softcap: float,
                      window_left: int, window_right: int,
                      alibi_slopes: Optional[torch.Tensor] = None,
                      deterministic: bool = False
                      ) -> tuple[torch.Tensor, torch.Tensor]:
        """What traced calls (torch.compile, export, autograd) run on CUDA tensors
        (`deterministic` is for the backward)."""
        return _forward(q, k, v, causal, scale, return_lse, causal_align, softcap,
                        window_left, window_right, alibi_slopes)

    @_attention_op.register_fake
    def _attention_fake(q, k, v, causal, scale, return_lse, causal_align, softcap,
                        window_left, window_right, alibi_slopes=None, deterministic=False):
        """The outputs' shapes, for tracing with fake or meta tensors."""
        return outputs_like(q, return_lse, v)

    register_attention_autograd(_attention_op)
