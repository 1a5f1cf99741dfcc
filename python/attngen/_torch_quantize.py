"""attngen.quantize_fp8: bfloat16/float16 q, k and v to float8_e4m3fn with the
descales FP8 attention takes, by attngen's generated quantize kernel
(attngen --quantize-fp8): per tensor, per (batch, kv head) or per 128-row
block, optionally with incoherent processing (q and k rotated by one random
Hadamard transform, which leaves q k^T unchanged and spreads outliers), and
v written K-major as the FP8 kernels read it. The custom op
attngen::quantize_e4m3 makes it traceable."""

import ctypes
from typing import Any, NamedTuple, Optional

from . import _capi
from ._capi import lib
from ._errors import check_status, invalid_argument
from ._jit import jit
from ._torch_checks import check_devices, torch
from ._fp8_args import FP8_HEAD_DIMS, fp8_dtype
from ._torch_launch import current_stream, use_custom_op

#: The scale granularities: one per tensor, per (batch, kv head), per 128 rows.
GRANULARITIES = ("tensor", "head", "block")
#: How quantize_fp8 stores v: keys contiguous (the FP8 wgmma's operand layout)
#: or head dim contiguous (transposed in the attention kernel), or "auto": the
#: one whose attention runs faster at the head dim.
V_LAYOUTS = ("auto", "k_major", "row_major")
#: "auto" stores v row-major up to this head dim: there the in-kernel
#: transpose, which also spares P's shuffles, beats a K-major v (docs/PERF.md,
#: "FP8: V's keys in the accumulator's order").
ROW_MAJOR_V_UP_TO = 64
#: Rows per block scale and per CTA of the kernel.
BLOCK_ROWS = 128
#: The random signs' seed of the Hadamard rotation by default.
DEFAULT_HADAMARD_SEED = 0x5EED
#: K-major rows (keys) are padded to 16 bytes, as the FP8 kernels' TMA needs.
_ROW_ALIGN = 16


class QuantizedFp8(NamedTuple):
    """quantize_fp8's result: e4m3 q, k, v ([B, N, H, D]; v K-major, a view of
    a [B, Hkv, D, round_up(Nk, 16)] tensor, or row-major: see v_layout; from
    quantize_fp8_varlen packed [total, H, D], row-major, the descales per
    sequence) and their float32 descales
    (x ~ x8 * descale): (1,) per tensor, (B, Hkv) per head (q's per group of
    query heads, as FlashAttention-3's q_descale), and per block (B, H,
    ceil(N / 128)); 1 where a scope holds only zeros. `descales` is the keywords of attngen.attention. (Fields typed Any:
    the package imports without torch.)"""
    q: Any
    k: Any
    v: Any
    q_descale: Any
    k_descale: Any
    v_descale: Any

    @property
    def descales(self):
        return dict(q_descale=self.q_descale, k_descale=self.k_descale,
                    v_descale=self.v_descale)


def quantize_fp8(q, k, v, granularity="head", hadamard=False,
                 hadamard_seed=DEFAULT_HADAMARD_SEED, v_layout="k_major"):
    """q, k, v (bfloat16 or float16, [B, N, H, D] with H a multiple of Hkv)
    as FP8 attention's inputs: `attngen.attention(x.q, x.k, x.v, **x.descales)`
    for `x = quantize_fp8(q, k, v)`.

    granularity: "tensor", "head" (per batch and kv head) or "block" (q, k
    and v per 128 rows of each head: FlashAttention-3's block quantization;
    the attention kernel moves its P V accumulator from one v block's scale
    to the next). hadamard: rotate
    q and k by the same random Hadamard transform first (incoherent
    processing); the attention result is unchanged up to rounding, with less
    of it. v_layout: "k_major" stores v with its keys contiguous, as the FP8
    wgmma reads it (default); "row_major" stores it as q and k, and the
    attention kernel then transposes each V tile in shared memory
    (attn-transpose-v); "auto" the faster of the two for the head dim:
    row-major at d64, K-major above. One kernel launch per tensor for "block", two for the
    others (the block maxima, then the conversion)."""
    if v_layout not in V_LAYOUTS:
        raise invalid_argument(f"quantize_fp8: v_layout {v_layout!r} is not one of "
                               f"{', '.join(map(repr, V_LAYOUTS))}")
    _check(q, k, v, granularity, hadamard_seed)
    if v_layout == "auto":
        v_layout = "row_major" if v.shape[-1] <= ROW_MAJOR_V_UP_TO else "k_major"
    groups = q.shape[2] // k.shape[2]
    q8, qd = _quantize(q, granularity, groups, hadamard, hadamard_seed, key_major=False)
    k8, kd = _quantize(k, granularity, 1, hadamard, hadamard_seed, key_major=False)
    v8, vd = _quantize(v, granularity, 1, False, hadamard_seed,
                       key_major=v_layout == "k_major")
    return QuantizedFp8(q8, k8, v8, qd, kd, vd)


def quantize_fp8_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                        granularity="head", hadamard=False,
                        hadamard_seed=DEFAULT_HADAMARD_SEED, check_seqlens=True):
    """quantize_fp8 for a packed batch, as attention_varlen takes one: q
    (total_q, H, D), k and v (total_k, Hkv, D) bfloat16 or float16, and
    flash_attn's cu_seqlens_q / cu_seqlens_k (int32, batch + 1) and
    max_seqlen_q / max_seqlen_k. Returns a QuantizedFp8 of e4m3 q, k and v
    in the same packed shapes (v row-major: FP8 varlen attention transposes
    it in the kernel) and descales per sequence: (1,) per tensor, (batch,
    Hkv) per head, or per block (batch, H, ceil(max_seqlen / 128)) over
    each sequence's own 128-row blocks, so that
    `attngen.attention_varlen(x.q, x.k, x.v, cu_seqlens_q, ..., **x.descales)`
    runs FP8 attention. check_seqlens=True checks cu_seqlens against the
    tensors and the max_seqlens on the host (a synchronization; a longer
    sequence would be left partly unquantized), as attention_varlen does; it
    is skipped while a CUDA graph is captured or torch.compile traces.

    One kernel launch per tensor for "block", two for the others (the block
    maxima, then the conversion), as quantize_fp8."""
    from ._torch_varlen import _check_cu_seqlens, _check_max_seqlen
    _check_cu_seqlens(cu_seqlens_q, cu_seqlens_k, "quantize_fp8_varlen")
    for name, value in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
        _check_max_seqlen(name, value, "quantize_fp8_varlen")
    _check(q, k, v, granularity, hadamard_seed, packed=True)
    check_devices([("q", q), ("k", k), ("v", v), ("cu_seqlens_q", cu_seqlens_q),
                   ("cu_seqlens_k", cu_seqlens_k)])
    # The values of cu_seqlens are checked where the quantize op runs (so
    # also when torch.compile's graph runs): q's with q, k's with k (v has
    # k's rows and offsets).
    groups = q.shape[1] // k.shape[1]
    q8, qd = _quantize(q, granularity, groups, hadamard, hadamard_seed, False,
                       packed=(cu_seqlens_q, max_seqlen_q, "q" if check_seqlens else ""))
    k8, kd = _quantize(k, granularity, 1, hadamard, hadamard_seed, False,
                       packed=(cu_seqlens_k, max_seqlen_k, "k" if check_seqlens else ""))
    v8, vd = _quantize(v, granularity, 1, False, hadamard_seed, False,
                       packed=(cu_seqlens_k, max_seqlen_k, ""))
    return QuantizedFp8(q8, k8, v8, qd, kd, vd)


def _check(q, k, v, granularity, seed, packed=False):
    """What both entry points take: bf16/f16 CUDA tensors of one dtype and
    head dim in FP8_HEAD_DIMS, k and v alike, q's heads whole groups of
    k's; [B, N, H, D] or, packed, [total, H, D]."""
    function = "quantize_fp8_varlen" if packed else "quantize_fp8"
    if granularity not in GRANULARITIES:
        raise invalid_argument(f"{function}: granularity {granularity!r} is not one of "
                               f"{', '.join(map(repr, GRANULARITIES))}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 63:
        raise invalid_argument(f"{function}: hadamard_seed must be an int in [0, 2^63), got "
                               f"{seed!r}")
    layout = "[total, heads, head_dim]" if packed else "[batch, seqlen, heads, head_dim]"
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"attngen.{function}: {name} must be a torch.Tensor, got "
                            f"{type(t).__name__}")
        if t.dtype not in (torch.bfloat16, torch.float16):
            raise invalid_argument(f"{function}: {name} has dtype {t.dtype}; it quantizes "
                                   "bfloat16 or float16 tensors")
        if t.dim() != (3 if packed else 4):
            raise invalid_argument(f"{function}: {name} must be {layout}, got shape "
                                   f"{tuple(t.shape)}")
    if fp8_dtype() is None:
        raise invalid_argument(f"{function} needs a torch with torch.float8_e4m3fn (2.1 or "
                               "newer)")
    head_dim = q.shape[-1]
    if head_dim not in FP8_HEAD_DIMS or k.shape[-1] != head_dim or v.shape[-1] != head_dim:
        raise invalid_argument(
            f"{function}: head dims q {q.shape[-1]}, k {k.shape[-1]}, v {v.shape[-1]}; FP8 "
            f"attention takes one head dim of {', '.join(map(str, FP8_HEAD_DIMS))} for all three")
    if tuple(k.shape) != tuple(v.shape):
        raise invalid_argument(f"{function}: k {tuple(k.shape)} and v {tuple(v.shape)} must "
                               "have the same shape")
    heads, kv_heads = q.shape[-2], k.shape[-2]
    if (not packed and k.shape[0] != q.shape[0]) or kv_heads == 0 or heads % kv_heads:
        raise invalid_argument(f"{function}: q {tuple(q.shape)} and k {tuple(k.shape)} need "
                               + ("" if packed else "one batch, and ") +
                               "q's heads a multiple of k's")
    if q.dtype != k.dtype or k.dtype != v.dtype:
        raise invalid_argument(f"{function}: q, k and v have dtypes {q.dtype}, {k.dtype}, "
                               f"{v.dtype}; use one")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.device.type != "cuda":
            raise invalid_argument(f"{function}: {name} is on {t.device}; it runs on CUDA "
                                   "tensors")
    check_devices([("q", q), ("k", k), ("v", v)])


def _quantize(x, granularity, groups, hadamard, seed, key_major, packed=None):
    """(x8, descale) for one tensor: x8 [B, N, H, D] (K-major if asked), or
    with packed = (cu_seqlens, max_seqlen, checked name) x8 [total, H, D] and
    the descales per sequence (cu_seqlens checked against x when the name is
    not empty)."""
    if packed is None:
        batch, rows, heads, _ = x.shape
    else:
        heads, batch, rows = x.shape[1], packed[0].numel() - 1, packed[1]
    blocks = -(-rows // BLOCK_ROWS)
    if x.numel() == 0 or batch == 0 or rows == 0:
        if packed is not None and packed[2] and not use_custom_op(x, packed[0]):
            _check_offsets(x, packed[0], rows, packed[2])  # no launch to check it
        x8 = (_as_view(_empty_output(x, key_major), rows, key_major) if packed is None
              else torch.zeros(x.shape, dtype=fp8_dtype(), device=x.device))
        shape = {"tensor": (1,), "head": (batch, heads // groups),
                 "block": (batch, heads, blocks)}[granularity]
        return x8, torch.ones(shape, dtype=torch.float32, device=x.device)
    op = _quantize_op if use_custom_op(x) else _quantize_e4m3
    cu, longest, name = packed if packed is not None else (None, 0, "")
    if granularity == "block":
        stored, descale = op(x, None, key_major, "block", hadamard, seed, cu, longest, name)
        # A block of zeros (descale 0): any descale dequantizes it, and 0
        # would make the kernel's scores 0 * -inf where they are masked.
        return _as_view(stored, rows, key_major), torch.where(descale > 0, descale,
                                                                torch.ones_like(descale))
    # The block maxima first (as descales), then the conversion with their
    # maximum per tensor or per (batch, group of heads).
    _, maxima = op(x, None, False, "amax", hadamard, seed, cu, longest, name)
    if granularity == "tensor":
        descale = maxima.amax().reshape(1)
    else:
        descale = maxima.reshape(batch, heads // groups, groups * blocks).amax(dim=2)
    # A tensor (or head) of zeros: any descale dequantizes it; 0 would not
    # invert.
    descale = torch.where(descale > 0, descale, torch.ones_like(descale))
    per_head = (descale.expand(batch, heads) if granularity == "tensor"
                else descale.repeat_interleave(groups, dim=1))
    stored, _ = op(x, per_head, key_major, "given", hadamard, seed, cu, longest, "")
    return _as_view(stored, rows, key_major), descale


def _empty_output(x, key_major):
    """The e4m3 tensor the kernel writes: [B, N, H, D], or K-major [B, H, D,
    round_up(N, 16)] whose padding rows it fills with zeros."""
    if x.dim() == 3:
        return x.new_empty(x.shape, dtype=fp8_dtype())
    batch, rows, heads, head_dim = x.shape
    if key_major:
        padded = -(-rows // _ROW_ALIGN) * _ROW_ALIGN
        return x.new_empty((batch, heads, head_dim, padded), dtype=fp8_dtype())
    return x.new_empty((batch, rows, heads, head_dim), dtype=fp8_dtype())


def _as_view(stored, rows, key_major):
    """The [B, N, H, D] view of what _empty_output made."""
    return stored[..., :rows].permute(0, 3, 1, 2) if key_major else stored


def _check_offsets(x, cu_seqlens, max_seqlen, name):
    """cu_seqlens on the host (a synchronization; skipped while a CUDA graph
    is captured): from 0 to x's rows, never decreasing, no sequence longer
    than max_seqlen (the kernel's grid covers that many rows of each)."""
    if torch.compiler.is_compiling() or torch.cuda.is_current_stream_capturing():
        return
    cu = cu_seqlens.cpu().tolist()
    side = "q" if name == "q" else "k"
    where = f"attngen.quantize_fp8_varlen: cu_seqlens_{side}"
    fix = " (check_seqlens=False skips this check)"
    if cu[0] != 0 or cu[-1] != x.shape[0]:
        raise invalid_argument(f"{where} runs from {cu[0]} to {cu[-1]} but {name} has "
                               f"{x.shape[0]} rows: it must start at 0 and end at the total"
                               + fix)
    for b in range(len(cu) - 1):
        length = cu[b + 1] - cu[b]
        if length < 0 or length > max_seqlen:
            raise invalid_argument(f"{where}: sequence {b} has {length} rows, outside [0, "
                                   f"max_seqlen_{side} = {max_seqlen}]" + fix)


def _quantize_e4m3(x, descale, key_major, mode, hadamard, seed, cu_seqlens=None,
                   max_seqlen=0, check_name=""):
    """One launch: mode "block" (block scales, written), "amax" (only the
    block scales) or "given" (descale (B, H), read). Returns the e4m3 tensor
    (empty for "amax") and the block descales (empty for "given"). With
    cu_seqlens, x is a packed [total, H, D] batch of max_seqlen rows at
    most per sequence, stored row-major, its descales per sequence;
    check_name (the tensor's name, "" for none) checks cu_seqlens first."""
    packed = cu_seqlens is not None
    if packed and check_name:
        _check_offsets(x, cu_seqlens, max_seqlen, check_name)
    if packed:
        (_, heads, head_dim), batch, rows = x.shape, cu_seqlens.numel() - 1, max_seqlen
    else:
        batch, rows, heads, head_dim = x.shape
    if x.stride(-1) != 1 or any(s % 8 for s in x.stride()[:-1]) or x.data_ptr() % 16:
        x = x.contiguous()
    args = _capi.QuantizeArgs()
    args.src = x.data_ptr()
    args.src_strides[:] = (0,) + x.stride() if packed else x.stride()
    args.batch, args.n, args.num_heads, args.head_dim = batch, rows, heads, head_dim
    args.src_dtype = _capi.DTYPE_BF16 if x.dtype == torch.bfloat16 else _capi.DTYPE_F16
    if packed:
        args.cu_seqlens = cu_seqlens.data_ptr()
    stored = x.new_empty((0,), dtype=fp8_dtype())
    if mode != "amax":
        stored = _empty_output(x, key_major)
        args.dst = stored.data_ptr()
        s = stored.stride()
        args.dst_strides[:] = ((0,) + s if packed else (s[0], 1, s[1], s[2]) if key_major
                               else s)
    maxima = x.new_empty((0,), dtype=torch.float32)
    if mode == "given":
        if descale.device != x.device or descale.dtype != torch.float32:
            raise invalid_argument("quantize_fp8: the descale must be float32 on the tensor's "
                                   "device")
        args.descale_in = descale.data_ptr()
        args.descale_in_strides[:] = descale.stride()
    else:
        maxima = x.new_empty((batch, heads, -(-rows // BLOCK_ROWS)), dtype=torch.float32)
        args.descale_out = maxima.data_ptr()
    with torch.cuda.device(x.device):
        check_status(lib.attngen_quantize_fp8(jit(), ctypes.byref(args), int(bool(hadamard)),
                                              seed, current_stream(x.device)))
    return stored, maxima


if torch is not None and fp8_dtype() is not None:
    @torch.library.custom_op("attngen::quantize_e4m3", mutates_args=(), device_types="cuda")
    def _quantize_op(x: torch.Tensor, descale: Optional[torch.Tensor], key_major: bool,
                     mode: str, hadamard: bool, seed: int,
                     cu_seqlens: Optional[torch.Tensor] = None,
                     max_seqlen: int = 0,
                     check_name: str = "") -> tuple[torch.Tensor, torch.Tensor]:
        """What traced quantize_fp8 calls run on CUDA tensors."""
        return _quantize_e4m3(x, descale, key_major, mode, hadamard, seed, cu_seqlens,
                              max_seqlen, check_name)

    @_quantize_op.register_fake
    def _quantize_fake(x, descale, key_major, mode, hadamard, seed, cu_seqlens=None,
                       max_seqlen=0, check_name=""):
        if cu_seqlens is not None:
            batch, rows, heads = cu_seqlens.shape[0] - 1, max_seqlen, x.shape[1]
        else:
            batch, rows, heads, _ = x.shape
        stored = (x.new_empty((0,), dtype=fp8_dtype()) if mode == "amax"
                  else _empty_output(x, key_major))
        maxima = (x.new_empty((0,), dtype=torch.float32) if mode == "given"
                  else x.new_empty((batch, heads, -(-rows // BLOCK_ROWS)), dtype=torch.float32))
        return stored, maxima
else:
    _quantize_op = None
