"""attngen.attention_varlen on float8_e4m3fn q, k and v (FlashAttention-3's
FP8 forward over a packed batch): its checks, the custom op
attngen::attention_varlen_fp8 (torch.compile) and the launch. v is read
row-major, as k, and transposed in the kernel."""

import math
from typing import Optional

from ._errors import invalid_argument
from ._torch_checks import torch
from ._fp8_args import check_fp8_dtypes, check_fp8_head_dim, fp8_dtype, set_descale_args
from ._torch_fp8 import block_scales, check_block_descales, is_row_major, v_block_descale
from ._varlen_seqlens import check_seqlen_values
from ._torch_launch import (check_alibi_slopes, forward_args, kernel_for, launch,
                            refuse_backward, set_alibi_args, use_custom_op)


def check_fp8_varlen(q, k, v, cu_q, alibi_slopes, descales, max_q, max_k):
    """e4m3 (total, heads, head_dim) q, k and v of one head dim in
    FP8_HEAD_DIMS, whole groups of query heads, and descales of one element
    or (batch, kv_heads), batch the sequences, or block scales (batch,
    heads, ceil(max_seqlen / 128)) (their devices: the caller's
    check_devices)."""
    check_fp8_dtypes("attention_varlen", ("q", "k", "v"), (q, k, v))
    heads, head_dim = q.shape[1], q.shape[2]
    kv_heads = k.shape[1]
    if tuple(k.shape) != tuple(v.shape):
        raise invalid_argument(f"k and v must have the same shape for FP8 attention; got k "
                               f"{tuple(k.shape)} and v {tuple(v.shape)}")
    if k.shape[-1] != head_dim:
        raise invalid_argument(f"q has head_dim {head_dim} but k and v have {k.shape[-1]}")
    check_fp8_head_dim(head_dim)
    if kv_heads == 0 or heads % kv_heads != 0:
        raise invalid_argument(f"q has {heads} heads and k/v have {kv_heads}: the number of q "
                               "heads must be a multiple of the number of k/v heads")
    batch = cu_q.numel() - 1
    check_alibi_slopes("attention_varlen", alibi_slopes, q, batch, heads)
    for name, d in zip(("q_descale", "k_descale", "v_descale"), descales):
        if d is not None and not isinstance(d, torch.Tensor):
            raise TypeError(f"attngen.attention_varlen: {name} must be a torch.Tensor or "
                            f"None, got {type(d).__name__}")
    if block_scales(descales):
        # Block scales per sequence: block i of sequence b is its rows
        # 128 i .. 128 i + 127 (attngen.quantize_fp8_varlen's).
        check_block_descales(descales, batch, heads, kv_heads, max_q, max_k,
                             seqlen_names=("max_seqlen_q", "max_seqlen_k"),
                             function="attention_varlen")
        return
    for name, d in zip(("q_descale", "k_descale", "v_descale"), descales):
        if d is None:
            continue
        if d.dtype != torch.float32:
            raise invalid_argument(f"{name} must be float32 (a descale: x = x8 * descale), "
                                   f"got {d.dtype}; call .float()")
        if d.numel() != 1 and tuple(d.shape) != (batch, kv_heads):
            raise invalid_argument(
                f"{name} has shape {tuple(d.shape)}; with varlen it must hold one element "
                f"(per tensor), be (batch, kv_heads) = ({batch}, {kv_heads}), one per "
                "sequence and key/value head, or be block scales (batch, heads, "
                "ceil(max_seqlen / 128)) as attngen.quantize_fp8_varlen makes")


#: FP8's key blocks: whole 128-key panels of the transposed V tile.
_FP8_KEY_BLOCK = 128


def check_fp8_pages(page_size):
    """A page an FP8 key block lies in, or that whole pages make up."""
    if _FP8_KEY_BLOCK % page_size and page_size % _FP8_KEY_BLOCK:
        raise invalid_argument(
            f"k and v have pages of {page_size} rows; FP8 attention reads keys in blocks of "
            f"{_FP8_KEY_BLOCK}, which must lie in one page or cover whole pages: use pages of "
            "16, 32, 64, 128 or a multiple of 128 rows")


def fp8_varlen_forward(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, return_lse,
                       causal_align, window_left, window_right, check_seqlens,
                       q_descale=None, k_descale=None, v_descale=None, softcap=0.0,
                       alibi_slopes=None, block_table=None):
    """The op's CUDA implementation and the eager path: bf16 out
    (total_q, H, D) and lse (H, total_q) float32 (or an empty one). With a
    block_table, k and v are pages (num_blocks, page_size, Hkv, D)."""
    paged = block_table is not None
    total_q, heads, head_dim = q.shape
    kv_heads, batch = k.shape[-2], cu_q.numel() - 1
    page_size = k.shape[1] if paged else 0
    total_k = block_table.shape[1] * page_size if paged else k.shape[0]
    out = torch.empty((total_q, heads, head_dim), dtype=torch.bfloat16, device=q.device)
    lse = torch.empty((heads, total_q) if return_lse else (0,), dtype=torch.float32,
                      device=q.device)
    if check_seqlens and not torch.cuda.is_current_stream_capturing():
        check_seqlen_values(q, k, cu_q, cu_k, max_q, max_k, block_table)
    if batch == 0 or total_q == 0:
        return out, lse
    if total_k == 0 or max_k == 0:
        # Every sequence is without keys (pages or not; block scales then
        # have no key block to read): out 0 and lse -inf, no kernel to run.
        out.zero_()
        lse.fill_(-math.inf)
        return out, lse
    if not is_row_major(v if paged else v.unsqueeze(0)):
        v = v.contiguous()
    blocks = block_scales((q_descale, k_descale))
    kernel = kernel_for(q, scale, causal=causal, causal_align=causal_align,
                        window_size=(window_left, window_right), softcap=softcap,
                        alibi=alibi_slopes is not None, varlen=True, v_row_major=True,
                        block_scales=blocks, page_size=page_size)
    args = forward_args(q, k, v, out, lse if return_lse else None, batch, total_k)
    args.cu_seqlens_q, args.cu_seqlens_k = cu_q.data_ptr(), cu_k.data_ptr()
    args.max_seqlen_q, args.max_seqlen_k = max_q, max_k
    if paged:
        args.block_table = block_table.data_ptr()
        args.block_table_stride = block_table.stride(0)
        args.max_blocks, args.num_blocks = block_table.shape[1], k.shape[0]
        args.page_size = page_size
    if blocks:
        v_descale = v_block_descale(v_descale, batch, kv_heads, max_k, q.device)
    keep = set_descale_args(args, (q_descale, k_descale, v_descale), batch, kv_heads,
                            q.device)
    set_alibi_args(args, alibi_slopes)
    launch(kernel, args, q.device)
    del keep  # the launch is queued: the allocator reuses them in stream order
    return out, lse


def attention_varlen_fp8(q, k, v, cu_q, cu_k, max_q, max_k, options, return_lse,
                         check_seqlens, descales, alibi_slopes=None, block_table=None):
    """attention_varlen() on e4m3 tensors once checked: through the custom op
    when tracing, else launched directly."""
    q_descale, k_descale, v_descale = descales
    call = (torch.ops.attngen.attention_varlen_fp8 if use_custom_op(q, k, v, cu_q, cu_k)
            else fp8_varlen_forward)
    out, lse = call(q, k, v, cu_q, cu_k, max_q, max_k, options.causal, options.scale,
                    return_lse, options.causal_align, options.window_left,
                    options.window_right, check_seqlens, q_descale, k_descale, v_descale,
                    options.softcap, alibi_slopes, block_table)
    return (out, lse) if return_lse else out


if torch is not None and fp8_dtype() is not None:
    @torch.library.custom_op("attngen::attention_varlen_fp8", mutates_args=(),
                             device_types="cuda")
    def _attention_varlen_fp8_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor,
                                 max_seqlen_q: int, max_seqlen_k: int, causal: bool,
                                 scale: float, return_lse: bool, causal_align: str,
                                 window_left: int, window_right: int, check_seqlens: bool,
                                 q_descale: Optional[torch.Tensor] = None,
                                 k_descale: Optional[torch.Tensor] = None,
                                 v_descale: Optional[torch.Tensor] = None,
                                 softcap: float = 0.0,
                                 alibi_slopes: Optional[torch.Tensor] = None,
                                 block_table: Optional[torch.Tensor] = None
                                 ) -> tuple[torch.Tensor, torch.Tensor]:
        """What traced FP8 varlen calls (torch.compile, export) run."""
        return fp8_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                  max_seqlen_k, causal, scale, return_lse, causal_align,
                                  window_left, window_right, check_seqlens, q_descale,
                                  k_descale, v_descale, softcap, alibi_slopes, block_table)

    @_attention_varlen_fp8_op.register_fake
    def _attention_varlen_fp8_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                   max_seqlen_k, causal, scale, return_lse, causal_align,
                                   window_left, window_right, check_seqlens, q_descale=None,
                                   k_descale=None, v_descale=None, softcap=0.0,
                                   alibi_slopes=None, block_table=None):
        """The outputs' shapes, for tracing with fake or meta tensors."""
        total_q, heads, head_dim = q.shape
        lse = q.new_empty((heads, total_q) if return_lse else (0,), dtype=torch.float32)
        return q.new_empty((total_q, heads, head_dim), dtype=torch.bfloat16), lse

    refuse_backward(_attention_varlen_fp8_op,
                    "attngen.attention_varlen: FP8 attention is forward-only (inference); "
                    "train with bfloat16 q, k and v")
