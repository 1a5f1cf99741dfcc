"""attngen.attention_varlen for PyTorch tensors: packed variable-length
batches as flash_attn_varlen_func takes them. Input checks (the values of
cu_seqlens through the runtime's attnrt_check_cu_seqlens), the torch custom
op attngen::attention_varlen (torch.compile, CUDA graphs) and the launch."""

import ctypes
import math
import numbers

from . import _capi
from . import (_causal_align_code, _lib, _normalize_scale, _raise, _softcap_value,
               _window_sides, InvalidInputError)
from ._torch_op import (_bad, _check_head_dim, _kernel_for, _refuse_backward, _use_custom_op,
                        torch)

# The runtime's names for the sizes, and what a Python caller passed them as.
_RUNTIME_NAMES = (("args.nq", "q.shape[0]"), ("args.nk", "k.shape[0]"),
                  ("args.max_seqlen_q", "max_seqlen_q"),
                  ("args.max_seqlen_k", "max_seqlen_k"))


def _check_tensor(function, name, t):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"attngen.{function}: {name} must be a torch.Tensor, got "
                        f"{type(t).__name__}")


def _check_inputs(q, k, v, cu_q, cu_k, max_q, max_k, causal, window_size, softcap,
                  return_lse, causal_align, check_seqlens):
    names = ("q", "k", "v")
    for name, t in zip(names, (q, k, v)):
        _check_tensor("attention_varlen", name, t)
        if t.dim() != 3:
            _bad(f"{name} must be 3-D (total_tokens, heads, head_dim), the sequences packed "
                 f"along the rows; got shape {tuple(t.shape)} (for (batch, seqlen, heads, "
                 "head_dim) tensors use attngen.attention)")
    for name, t in (("cu_seqlens_q", cu_q), ("cu_seqlens_k", cu_k)):
        _check_tensor("attention_varlen", name, t)
        if t.dtype != torch.int32:
            _bad(f"{name} has dtype {t.dtype}; it must be torch.int32 (as flash_attn's): "
                 "convert with .to(torch.int32)")
        if t.dim() != 1 or t.numel() < 1:
            _bad(f"{name} must be 1-D with batch + 1 entries (where each sequence starts, then "
                 f"the total); got shape {tuple(t.shape)}")
        if t.numel() > 1 and t.stride(0) != 1:
            _bad(f"{name} must be contiguous (stride 1); got stride {t.stride(0)}: call "
                 ".contiguous()")
    if cu_q.numel() != cu_k.numel():
        _bad(f"cu_seqlens_q has {cu_q.numel()} entries but cu_seqlens_k has {cu_k.numel()}: "
             "both hold batch + 1 entries, one per sequence plus the total")
    for name, value in (("max_seqlen_q", max_q), ("max_seqlen_k", max_k)):
        if isinstance(value, bool) or not isinstance(value, (numbers.Integral, torch.SymInt)):
            raise TypeError(f"attngen.attention_varlen: {name} must be an int (the longest "
                            f"sequence's length), got {value!r}")
        if not isinstance(value, torch.SymInt) and not 0 <= value < 2**31:
            _bad(f"{name} = {value} is out of range: it must be 0 to 2^31 - 1")
    # Everything that needs no GPU comes first, the devices last.
    for name, value in (("causal", causal), ("return_lse", return_lse),
                        ("check_seqlens", check_seqlens)):
        if not isinstance(value, bool):
            raise TypeError(f"attngen.attention_varlen: {name} must be a bool, got {value!r}")
    _window_sides("attention_varlen", window_size)
    _causal_align_code("attention_varlen", causal_align)
    _softcap_value("attention_varlen", softcap)
    for name, t in zip(names, (q, k, v)):
        if t.dtype not in (torch.float16, torch.bfloat16):
            _bad(f"{name} has dtype {t.dtype}; attngen supports torch.float16 and "
                 "torch.bfloat16: convert with .to(torch.bfloat16)")
        if t.dtype != q.dtype:
            _bad(f"{name} has dtype {t.dtype} but q has {q.dtype}: use one dtype")
    if tuple(k.shape) != tuple(v.shape):
        _bad(f"k and v must have the same shape; got k {tuple(k.shape)} and v {tuple(v.shape)}")
    _, h, d = q.shape
    _, hkv, dk = k.shape
    if dk != d:
        _bad(f"q has head_dim {d} but k and v have head_dim {dk}")
    _check_head_dim(d)
    if hkv == 0 or h % hkv != 0:
        _bad(f"q has {h} heads and k/v have {hkv}: the number of q heads must be a multiple "
             "of the number of k/v heads (grouped-query attention)")
    for name, t in zip(names, (q, k, v)):
        strides = t.stride()
        if strides[2] != 1:
            _bad(f"{name} has strides {tuple(strides)}: the last dimension (head_dim) must be "
                 "contiguous (stride 1); call .contiguous()")
        for dim in range(2):
            if t.shape[dim] > 1 and strides[dim] % 8 != 0:
                _bad(f"{name} has strides {tuple(strides)}: the strides of the tokens and heads "
                     "dimensions must be multiples of 8 elements (16 bytes); call .contiguous()")
    for name, t in zip(names + ("cu_seqlens_q", "cu_seqlens_k"), (q, k, v, cu_q, cu_k)):
        if t.device.type != "cuda":
            _bad(f"{name} is on {t.device}; attngen runs on CUDA devices: move the tensors "
                 "with .cuda()")
        if t.device != q.device:
            _bad(f"{name} is on {t.device} but q is on {q.device}: put every tensor on one "
                 "device")


def _check_seqlen_values(q, k, cu_q, cu_k, max_q, max_k):
    """The runtime's check of cu_seqlens on host copies (a synchronization)."""
    args = _capi.ForwardArgs()
    args.batch, args.nq, args.nk = cu_q.numel() - 1, q.shape[0], k.shape[0]
    args.max_seqlen_q, args.max_seqlen_k = max_q, max_k
    host_q, host_k = cu_q.cpu(), cu_k.cpu()
    pointer = ctypes.POINTER(ctypes.c_int32)
    status = _lib.attnrt_check_cu_seqlens(ctypes.byref(args),
                                          ctypes.cast(host_q.data_ptr(), pointer),
                                          ctypes.cast(host_k.data_ptr(), pointer))
    if status:
        message = _lib.attnrt_last_error().decode()
        for runtime, python in _RUNTIME_NAMES:
            message = message.replace(runtime, python)
        raise InvalidInputError(f"attngen.attention_varlen: {message} (check_seqlens=False "
                                "skips this check)", "ATTNGEN_ERROR_INVALID_ARGUMENT")


def _forward(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, return_lse, causal_align,
             softcap, window_left, window_right, check_seqlens):
    total_q, h, d = q.shape
    out = torch.empty((total_q, h, d), dtype=q.dtype, device=q.device)
    lse = torch.empty((h, total_q) if return_lse else (0,), dtype=torch.float32,
                      device=q.device)
    if check_seqlens and not torch.cuda.is_current_stream_capturing():
        _check_seqlen_values(q, k, cu_q, cu_k, max_q, max_k)
    _launch(q, k, v, cu_q, cu_k, max_q, max_k, out, lse if return_lse else None, causal,
            scale, causal_align, softcap, window_left, window_right)
    return out, lse


def _launch(q, k, v, cu_q, cu_k, max_q, max_k, out, lse, causal, scale, causal_align,
            softcap, window_left=-1, window_right=-1):
    """Runs the varlen kernel into `out` (total_q, H, D) and, unless None, `lse`
    (H, total_q) float32, both contiguous in their last dimension; the inputs
    as _check_inputs accepts them. (gpu/varlen_check.py passes outputs of its
    own, poisoned and guarded.)"""
    total_q, h, d = q.shape
    total_k, hkv, _ = k.shape
    batch = cu_q.numel() - 1
    if batch == 0 or total_q == 0:
        return
    if total_k == 0:
        # Every sequence is without keys: out 0 and lse -inf, no kernel to run.
        out.zero_()
        if lse is not None:
            lse.fill_(-math.inf)
        return
    kernel = _kernel_for(q.device, q.dtype, d, causal, causal_align, scale, softcap,
                         window_left, window_right, varlen=True)
    args = _capi.ForwardArgs()
    args.q, args.k, args.v, args.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()
    args.lse = lse.data_ptr() if lse is not None else None
    args.batch, args.nq, args.nk = batch, total_q, total_k
    args.num_heads, args.num_kv_heads, args.head_dim = h, hkv, d
    # Packed tensors have no batch dimension (its stride is unused).
    args.q_strides[:] = (0,) + tuple(q.stride())
    args.k_strides[:] = (0,) + tuple(k.stride())
    args.v_strides[:] = (0,) + tuple(v.stride())
    args.o_strides[:] = (0,) + tuple(out.stride())
    args.dtype = _capi.DTYPE_BF16 if q.dtype == torch.bfloat16 else _capi.DTYPE_F16
    args.cu_seqlens_q, args.cu_seqlens_k = cu_q.data_ptr(), cu_k.data_ptr()
    args.max_seqlen_q, args.max_seqlen_k = max_q, max_k
    stream = torch.cuda.current_stream(q.device).cuda_stream
    status = _lib.attngen_kernel_forward(kernel, ctypes.byref(args), stream)
    if status:
        _raise(status)


if torch is not None:
    @torch.library.custom_op("attngen::attention_varlen", mutates_args=(), device_types="cuda")
    def _attention_varlen_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor,
                             max_seqlen_q: int, max_seqlen_k: int, causal: bool, scale: float,
                             return_lse: bool, causal_align: str, softcap: float,
                             window_left: int, window_right: int,
                             check_seqlens: bool) -> tuple[torch.Tensor, torch.Tensor]:
        return _forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                        causal, scale, return_lse, causal_align, softcap, window_left,
                        window_right, check_seqlens)

    @_attention_varlen_op.register_fake
    def _attention_varlen_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                               max_seqlen_k, causal, scale, return_lse, causal_align, softcap,
                               window_left, window_right, check_seqlens):
        total_q, h, d = q.shape
        out = q.new_empty((total_q, h, d))
        lse = q.new_empty((h, total_q) if return_lse else (0,), dtype=torch.float32)
        return out, lse

    _refuse_backward(
        _attention_varlen_op,
        "attngen.attention_varlen has no backward pass yet: call it under torch.no_grad() "
        "or use flash_attn_varlen_func for training")


def attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal, window_size, softcap, scale,
                     return_lse, causal_align, check_seqlens):
    if torch is None:
        raise ImportError("attngen.attention_varlen needs PyTorch (pip install torch); "
                          "attngen.compile works without it")
    _check_inputs(q, k, v, cu_q, cu_k, max_q, max_k, causal, window_size, softcap,
                  return_lse, causal_align, check_seqlens)
    scale = _normalize_scale(scale)
    softcap = _softcap_value("attention_varlen", softcap)
    left, right = _window_sides("attention_varlen", window_size)
    # Without a diagonal (no causal mask, no window) the alignment means
    # nothing: one kernel serves both.
    if not causal and left < 0 and right < 0:
        causal_align = "top-left"
    if _use_custom_op(q, k, v, cu_q, cu_k):
        out, lse = torch.ops.attngen.attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k,
                                                      causal, scale, return_lse,
                                                      causal_align, softcap, left, right,
                                                      check_seqlens)
    else:
        out, lse = _forward(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, return_lse,
                            causal_align, softcap, left, right, check_seqlens)
    return (out, lse) if return_lse else out
