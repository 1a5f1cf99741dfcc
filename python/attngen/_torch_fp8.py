"""FP8 attention (FlashAttention-3's): attngen.attention on float8_e4m3fn q, k
and v with float32 descales, a bfloat16 output, on sm_90a. Its checks, the
choice of v's layout (K-major, or row-major and transposed in the kernel),
the descales' arguments, the custom op
attngen::attention_fp8 (traced by torch.compile and torch.export) and the
launch."""

from typing import Optional

from ._errors import invalid_argument
from ._torch_checks import check_devices, torch
from ._fp8_args import (check_descale, check_fp8_dtypes, check_fp8_head_dim, fp8_dtype,
                        set_descale_args)
from ._torch_kvcache import _forward as kvcache_forward, decodes
from ._torch_launch import (check_alibi_slopes, forward_args, kernel_for, launch,
                            refuse_backward, set_alibi_args, use_custom_op)

#: Rows per block scale of block quantization.
BLOCK_ROWS = 128
#: TMA rows start on 16 bytes: v's head-dim stride (keys) is padded to it.
_ROW_ALIGN = 16


def check_fp8_arguments(q, k, v, options, alibi_slopes, descales):
    """What the FP8 kernels take: e4m3 q, k and v of one head dim in
    FP8_HEAD_DIMS, whole groups of query heads, no soft cap or ALiBi yet, and
    float32 descales of one element or (batch, kv_heads) on q's device."""
    check_fp8_dtypes("attention", ("q", "k", "v"), (q, k, v))
    batch, seqlen_q, heads, head_dim = q.shape
    kv_batch, seqlen_k, kv_heads, _ = k.shape
    if tuple(k.shape) != tuple(v.shape):
        raise invalid_argument(f"k and v must have the same shape for FP8 attention; got k "
                               f"{tuple(k.shape)} and v {tuple(v.shape)}")
    if k.shape[-1] != head_dim:
        raise invalid_argument(f"q has head_dim {head_dim} but k and v have {k.shape[-1]}")
    check_fp8_head_dim(head_dim)
    if kv_batch != batch:
        raise invalid_argument(f"q has batch {batch} but k and v have batch {kv_batch}")
    if kv_heads == 0 or heads % kv_heads != 0:
        raise invalid_argument(f"q has {heads} heads and k/v have {kv_heads}: the number of q "
                               "heads must be a multiple of the number of k/v heads")
    if seqlen_k == 0 and seqlen_q > 0 and batch > 0:
        raise invalid_argument("k and v have sequence length 0: attention needs at least one "
                               "key")
    check_alibi_slopes("attention", alibi_slopes, q, batch, heads)
    blocks = block_scales(descales)
    if blocks:
        check_block_descales(descales, batch, heads, kv_heads, seqlen_q, seqlen_k)
    else:
        for name, d in zip(("q_descale", "k_descale", "v_descale"), descales):
            check_descale(name, d, batch, kv_heads)
    check_devices([("q", q), ("k", k), ("v", v)] +
                  ([("alibi_slopes", alibi_slopes)] if alibi_slopes is not None else []) +
                  [(n, d) for n, d in zip(("q_descale", "k_descale", "v_descale"), descales)
                   if d is not None])


def block_scales(descales):
    """Whether the descales are block quantization's: q's (or k's) 3-dim."""
    return any(isinstance(d, torch.Tensor) and d.dim() == 3 for d in descales[:2])


def check_block_descales(descales, batch, heads, kv_heads, seqlen_q, seqlen_k,
                         seqlen_names=("seqlen", "seqlen"), function="attention"):
    """Block quantization: q_descale (B, H, ceil(Nq / 128)), k_descale and
    v_descale (B, Hkv, ceil(Nk / 128)), one per 128 rows; a v_descale of one
    element or (B, Hkv) serves every key block of its head. A packed batch's
    are per sequence, Nq and Nk its max_seqlen_q and max_seqlen_k."""
    q_descale, k_descale, v_descale = descales
    key_blocks = (batch, kv_heads, -(-seqlen_k // BLOCK_ROWS))
    expected = [("q_descale", q_descale, (batch, heads, -(-seqlen_q // BLOCK_ROWS)),
                 seqlen_names[0]),
                ("k_descale", k_descale, key_blocks, seqlen_names[1])]
    if isinstance(v_descale, torch.Tensor) and v_descale.dim() == 3:
        expected.append(("v_descale", v_descale, key_blocks, seqlen_names[1]))
    for name, d, shape, rows in expected:
        if not isinstance(d, torch.Tensor) or d.dtype != torch.float32 or tuple(d.shape) != shape:
            got = (f"{type(d).__name__}" if not isinstance(d, torch.Tensor)
                   else f"{d.dtype} {tuple(d.shape)}")
            raise invalid_argument(
                f"block scales: {name} must be float32 of shape {shape} (batch, heads, "
                f"ceil({rows} / {BLOCK_ROWS})), one per {BLOCK_ROWS} rows of each head, got "
                f"{got}; q_descale and k_descale are per block together (attngen.quantize_fp8"
                "(..., granularity=\"block\") makes them, and v_descale per key block)")
    if len(expected) == 2:
        check_descale("v_descale", v_descale, batch, kv_heads, function)


def _is_key_major(v):
    """Whether v is a view the K-major kernel's TMA reads as is: keys
    contiguous, the other strides and the address 16-byte aligned."""
    strides = v.stride()
    return (strides[1] == 1 and all(s % _ROW_ALIGN == 0 for s in (strides[0], strides[2],
                                                                  strides[3]))
            and v.data_ptr() % _ROW_ALIGN == 0)


def is_row_major(v):
    """Whether v is a view the row-major kernel's TMA reads as is: head dim
    contiguous, the other strides and the address 16-byte aligned."""
    strides = v.stride()
    return (strides[3] == 1 and all(s % _ROW_ALIGN == 0 for s in strides[:3])
            and v.data_ptr() % _ROW_ALIGN == 0)


#: The largest head dim whose row-major v the kernel transposes itself; above
#: it (d256) the in-kernel transpose costs more than a copy of v into the
#: K-major layout (docs/PERF.md, "FP8: V transposed in the kernel").
TRANSPOSE_IN_KERNEL_UP_TO = 128


def v_layout(v):
    """(v, row_major): how the FP8 kernel reads v ([B, Nk, Hkv, D], e4m3).
    A K-major v (attngen.quantize_fp8's) goes to the kernel that reads it
    so; a row-major one (head dim contiguous) up to TRANSPOSE_IN_KERNEL_UP_TO
    to the kernel that transposes each tile in shared memory
    (attn-transpose-v), with no copy; any other is made contiguous first,
    or above that head dim copied K-major."""
    if _is_key_major(v):
        return v, False
    if v.shape[-1] > TRANSPOSE_IN_KERNEL_UP_TO:
        return key_major(v), False
    if is_row_major(v):
        return v, True
    return v.contiguous(), True


def key_major(v):
    """v ([B, Nk, Hkv, D], e4m3) as the K-major FP8 kernel reads it: its
    keys contiguous and each head-dim row 16-byte aligned. A v already so
    (a view of a [B, Hkv, D, Nk_pad] tensor) is used as is; any other is
    copied into that layout (one pass over v)."""
    batch, seqlen_k, kv_heads, head_dim = v.shape
    if _is_key_major(v):
        return v
    padded = -(-seqlen_k // _ROW_ALIGN) * _ROW_ALIGN
    vt = torch.empty((batch, kv_heads, head_dim, padded), dtype=v.dtype, device=v.device)
    vt[..., :seqlen_k].copy_(v.permute(0, 2, 3, 1))
    return vt[..., :seqlen_k].permute(0, 3, 1, 2)


def v_block_descale(d, batch, kv_heads, seqlen_k, device):
    """A block-scale kernel's v_descale, (B, Hkv, ceil(Nk / 128)) with its
    blocks contiguous: a per-block one as is, one per tensor or (batch, kv
    head) repeated over the key blocks."""
    if d is not None and d.dim() == 3:
        return d
    blocks = max(1, -(-seqlen_k // BLOCK_ROWS))
    if d is None:
        return torch.ones((batch, kv_heads, blocks), dtype=torch.float32, device=device)
    d = d.reshape(-1, 1) if d.numel() == 1 else d
    return d.reshape(*d.shape, 1).expand(batch, kv_heads, blocks).contiguous()


def fp8_forward(q, k, v, causal, scale, return_lse, causal_align, window_left, window_right,
                q_descale=None, k_descale=None, v_descale=None, softcap=0.0, alibi_slopes=None):
    """Runs the FP8 kernel: the op's CUDA implementation and the eager path."""
    batch, seqlen_q, heads, head_dim = q.shape
    kv_heads = k.shape[2]
    out = torch.empty((batch, seqlen_q, heads, head_dim), dtype=torch.bfloat16, device=q.device)
    lse = torch.empty((batch, heads, seqlen_q) if return_lse else (0,), dtype=torch.float32,
                      device=q.device)
    if out.numel() == 0:
        return out, lse
    # A few query rows over a row-major v take the FP8 decoding kernels, as
    # bf16's do (their tiles pack the query heads of a key/value head and
    # split the keys over CTAs); a K-major v stays with the dense kernel,
    # which reads it in place.
    if (not block_scales((q_descale, k_descale)) and is_row_major(k) and is_row_major(v)
            and decodes(q, k, causal, causal_align, window_left, window_right,
                        alibi_slopes is not None)):
        return kvcache_forward(q, k, v, None, None, causal, scale, softcap, return_lse, 0,
                               window_left, window_right, alibi_slopes=alibi_slopes,
                               q_descale=q_descale, k_descale=k_descale, v_descale=v_descale)
    vk, row_major = v_layout(v)
    kernel = kernel_for(q, scale, causal=causal, causal_align=causal_align,
                        window_size=(window_left, window_right), softcap=softcap,
                        alibi=alibi_slopes is not None,
                        block_scales=block_scales((q_descale, k_descale)),
                        v_row_major=row_major)
    args = forward_args(q, k, vk, out, lse if return_lse else None, batch, k.shape[1])
    if block_scales((q_descale, k_descale)):
        v_descale = v_block_descale(v_descale, batch, kv_heads, k.shape[1], q.device)
    keep = set_descale_args(args, (q_descale, k_descale, v_descale), batch, kv_heads,
                            q.device)
    set_alibi_args(args, alibi_slopes)
    launch(kernel, args, q.device)
    del keep  # the launch is queued: the allocator reuses them in stream order
    return out, lse


def attention_fp8(q, k, v, options, return_lse, descales, alibi_slopes=None):
    """attention() on e4m3 tensors once checked: through the custom op when
    tracing (or when autograd would record it), else launched directly."""
    q_descale, k_descale, v_descale = descales
    if use_custom_op(q, k, v):
        out, lse = torch.ops.attngen.attention_fp8(
            q, k, v, options.causal, options.scale, return_lse, options.causal_align,
            options.window_left, options.window_right, q_descale, k_descale, v_descale,
            options.softcap, alibi_slopes)
    else:
        out, lse = fp8_forward(q, k, v, options.causal, options.scale, return_lse,
                               options.causal_align, options.window_left, options.window_right,
                               q_descale, k_descale, v_descale, options.softcap, alibi_slopes)
    return (out, lse) if return_lse else out


if torch is not None and fp8_dtype() is not None:
    @torch.library.custom_op("attngen::attention_fp8", mutates_args=(), device_types="cuda")
    def _attention_fp8_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                          scale: float, return_lse: bool, causal_align: str,
                          window_left: int, window_right: int,
                          q_descale: Optional[torch.Tensor] = None,
                          k_descale: Optional[torch.Tensor] = None,
                          v_descale: Optional[torch.Tensor] = None, softcap: float = 0.0,
                          alibi_slopes: Optional[torch.Tensor] = None
                          ) -> tuple[torch.Tensor, torch.Tensor]:
        """What traced FP8 calls (torch.compile, export) run on CUDA tensors."""
        return fp8_forward(q, k, v, causal, scale, return_lse, causal_align, window_left,
                           window_right, q_descale, k_descale, v_descale, softcap, alibi_slopes)

    @_attention_fp8_op.register_fake
    def _attention_fp8_fake(q, k, v, causal, scale, return_lse, causal_align, window_left,
                            window_right, q_descale=None, k_descale=None, v_descale=None,
                            softcap=0.0, alibi_slopes=None):
        """The outputs' shapes, for tracing with fake or meta tensors."""
        batch, seqlen_q, heads, head_dim = q.shape
        lse = q.new_empty((batch, heads, seqlen_q) if return_lse else (0,),
                          dtype=torch.float32)
        return q.new_empty((batch, seqlen_q, heads, head_dim), dtype=torch.bfloat16), lse

    refuse_backward(_attention_fp8_op,
                    "attngen.attention: FP8 attention is forward-only (inference); train with "
                    "bfloat16 q, k and v")
