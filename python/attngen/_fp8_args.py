"""The arguments every FP8 entry point shares (attention, attention_varlen,
attention_with_kvcache): the e4m3 dtype and head dims, the descales'
checks and how the kernel reads them. Below both _torch_fp8 and
_torch_kvcache, so that either can call the other's kernels."""

from ._errors import invalid_argument
from ._torch_checks import torch

#: The head dims the FP8 kernels support.
FP8_HEAD_DIMS = (64, 128, 256)


def fp8_dtype():
    """torch.float8_e4m3fn, or None on a torch without it."""
    return getattr(torch, "float8_e4m3fn", None) if torch is not None else None


def is_fp8_call(q, descales):
    """Whether attention() was called the FP8 way: e4m3 q or any descale."""
    return q.dtype == fp8_dtype() or any(d is not None for d in descales)


def check_fp8_dtypes(function, names, tensors):
    """Every one of `tensors` (q, k, v or the caches) is e4m3: FP8 takes all
    three quantized (and descales only with them)."""
    e4m3 = fp8_dtype()
    listed = f"{', '.join(names[:-1])} and {names[-1]}"
    for name, t in zip(names, tensors):
        if t.dtype != e4m3:
            raise invalid_argument(
                f"{name} has dtype {t.dtype}: FP8 {function} takes torch.float8_e4m3fn "
                f"{listed} (with q_descale, k_descale, v_descale); quantize all three, or "
                "pass bfloat16 tensors without descales")


def check_fp8_head_dim(head_dim):
    """One of FP8_HEAD_DIMS, with how to pad to one."""
    if head_dim not in FP8_HEAD_DIMS:
        raise invalid_argument(
            f"FP8 attention supports head dims {', '.join(map(str, FP8_HEAD_DIMS))}, not "
            f"{head_dim}; pad q, k and v with zero columns to the next one and keep "
            f"scale={head_dim ** -0.5:.6g}")


def check_descale(name, d, batch, kv_heads, function="attention"):
    """None (1.0), one float32 element (per tensor) or (batch, kv_heads)."""
    if d is None:
        return
    if not isinstance(d, torch.Tensor):
        raise TypeError(f"attngen.{function}: {name} must be a torch.Tensor or None, got "
                        f"{type(d).__name__}")
    if d.dtype != torch.float32:
        raise invalid_argument(f"{name} must be float32 (a descale: x = x8 * descale), got "
                               f"{d.dtype}; call .float()")
    if d.numel() != 1 and tuple(d.shape) != (batch, kv_heads):
        raise invalid_argument(
            f"{name} has shape {tuple(d.shape)}; it must hold one element (per tensor) or be "
            f"(batch, kv_heads) = ({batch}, {kv_heads}) (per batch and key/value head, as "
            "FlashAttention-3's)")


def descale_args(d, batch, kv_heads):
    """A descale as the kernel reads it: its tensor (ones when None) and its
    (batch, head) strides, 0 where one value serves; block scales with their
    blocks contiguous."""
    if d is None:
        return None, (0, 0)
    if d.numel() == 1:
        return d, (0, 0)
    if d.dim() == 3 and d.stride(2) != 1:
        d = d.contiguous()
    return d, tuple(d.stride()[:2])


def set_descale_args(args, descales, batch, kv_heads, device):
    """Binds (q_descale, k_descale, v_descale) to attnrt_forward_args `args`:
    each tensor (ones when None) and its (batch, head) strides. Returns the
    tensors the kernel reads, which the caller keeps until the launch."""
    keep, one = [], None
    for prefix, d in zip(("q", "k", "v"), descales):
        tensor, strides = descale_args(d, batch, kv_heads)
        if tensor is None:
            if one is None:
                one = torch.ones(1, dtype=torch.float32, device=device)
            tensor = one
        keep.append(tensor)
        setattr(args, f"{prefix}_descale", tensor.data_ptr())
        getattr(args, f"{prefix}_descale_strides")[:] = strides
    return keep
