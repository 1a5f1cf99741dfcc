"""attngen.attention for PyTorch tensors: input checks, the torch custom op
attngen::attention (so torch.compile traces it), and the launch. Eager calls
launch directly; traced ones go through the op (see _use_custom_op)."""

import ctypes
import threading

from . import _capi
from . import (_Jit, _causal_align_code, _lib, _make_spec, _normalize_scale, _raise,
               _softcap_value, _window_sides, InvalidInputError)

try:
    import torch
except ImportError:  # compile() works without torch; attention() does not
    torch = None

# (device index, dtype, head_dim, causal, causal_align, scale, softcap, window_left,
#  window_right, varlen) -> attngen_kernel*
_kernels = {}
_kernels_lock = threading.Lock()


def forget_kernels():
    with _kernels_lock:
        _kernels.clear()


def _bad(message):
    raise InvalidInputError(message, "ATTNGEN_ERROR_INVALID_ARGUMENT")


#: The largest head dim asked about at import; the compiler refuses larger.
_HEAD_DIM_LIMIT = 256


def _compiler_check_head_dim(head_dim):
    """The compiler's verdict on a head dim (its error, raised, if it refuses)."""
    spec = _make_spec(head_dim, "bf16", False, None, function="attention")
    status = _lib.attngen_spec_check(ctypes.byref(spec), b"sm_90a")
    if status:
        _raise(status)


def _accepted_head_dims():
    accepted = set()
    for head_dim in range(1, _HEAD_DIM_LIMIT + 1):
        try:
            _compiler_check_head_dim(head_dim)
            accepted.add(head_dim)
        except InvalidInputError:
            pass
    return frozenset(accepted)


# Asked once here: torch.compile traces a set look-up, not a ctypes call.
_HEAD_DIMS = _accepted_head_dims()


def _describe_head_dims(dims):
    ordered = sorted(dims)
    step = ordered[1] - ordered[0] if len(ordered) > 1 else 1
    if ordered == list(range(ordered[0], ordered[-1] + 1, step)):
        return f"{ordered[0]} to {ordered[-1]} in steps of {step}"
    return ", ".join(map(str, ordered))


def _check_head_dim(head_dim):
    if head_dim in _HEAD_DIMS:
        return
    if torch.compiler.is_compiling():
        # No ctypes while tracing: the same facts without the compiler's words.
        _bad(f"head dimension {head_dim} is not supported: attngen takes "
             f"{_describe_head_dims(_HEAD_DIMS)}")
    _compiler_check_head_dim(head_dim)


def _check_inputs(q, k, v, causal, scale, return_lse, causal_align, softcap, window_size):
    names = ("q", "k", "v")
    for name, t in zip(names, (q, k, v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"attngen.attention: {name} must be a torch.Tensor, got "
                            f"{type(t).__name__}")
        if t.dim() != 4:
            _bad(f"{name} must be 4-D (batch, seqlen, heads, head_dim); got shape "
                 f"{tuple(t.shape)}")
    for name, t in zip(names, (q, k, v)):
        if t.device.type != "cuda":
            _bad(f"{name} is on {t.device}; attngen runs on CUDA devices: move the "
                 "tensors with .cuda()")
        if t.device != q.device:
            _bad(f"{name} is on {t.device} but q is on {q.device}: put q, k and v on one device")
        if t.dtype not in (torch.float16, torch.bfloat16):
            _bad(f"{name} has dtype {t.dtype}; attngen supports torch.float16 and "
                 "torch.bfloat16: convert with .to(torch.bfloat16)")
        if t.dtype != q.dtype:
            _bad(f"{name} has dtype {t.dtype} but q has {q.dtype}: use one dtype")
    b, nq, h, d = q.shape
    if tuple(k.shape) != tuple(v.shape):
        _bad(f"k and v must have the same shape; got k {tuple(k.shape)} and v {tuple(v.shape)}")
    bk, nk, hkv, dk = k.shape
    if bk != b:
        _bad(f"q has batch {b} but k and v have batch {bk}")
    if dk != d:
        _bad(f"q has head_dim {d} but k and v have head_dim {dk}")
    # Which head dims are supported is the compiler's to say; ask it before
    # the stride checks, which an unsupported head dim (60) would trip first
    # with a message about strides instead of the head dim.
    _check_head_dim(d)
    if hkv == 0 or h % hkv != 0:
        _bad(f"q has {h} heads and k/v have {hkv}: the number of q heads must be a multiple "
             "of the number of k/v heads (grouped-query attention)")
    if nk == 0 and nq > 0 and b > 0:
        _bad("k and v have sequence length 0: attention needs at least one key")
    for name, t in zip(names, (q, k, v)):
        strides = t.stride()
        if strides[3] != 1:
            _bad(f"{name} has strides {tuple(strides)}: the last dimension (head_dim) must be "
                 "contiguous (stride 1); call .contiguous()")
        for dim in range(3):
            if t.shape[dim] > 1 and strides[dim] % 8 != 0:
                _bad(f"{name} has strides {tuple(strides)}: the strides of the batch, seqlen "
                     "and heads dimensions must be multiples of 8 elements (16 bytes); call "
                     ".contiguous()")
    if not isinstance(causal, bool):
        raise TypeError(f"attngen.attention: causal must be a bool, got {causal!r}")
    if not isinstance(return_lse, bool):
        raise TypeError(f"attngen.attention: return_lse must be a bool, got {return_lse!r}")
    _causal_align_code("attention", causal_align)
    _softcap_value("attention", softcap)
    _window_sides("attention", window_size)


def _kernel_for(device, dtype, head_dim, causal, causal_align, scale, softcap, window_left=-1,
                window_right=-1, varlen=False):
    key = (device.index, dtype, head_dim, causal, causal_align, scale, softcap, window_left,
           window_right, varlen)
    kernel = _kernels.get(key)
    if kernel is not None:
        return kernel
    with _kernels_lock:
        kernel = _kernels.get(key)
        if kernel is None:
            spec = _make_spec(head_dim, str(dtype), causal, scale or None, with_lse=True,
                              function="attention", causal_align=causal_align,
                              softcap=softcap, window_size=(window_left, window_right),
                              varlen=varlen)
            handle = ctypes.c_void_p()
            # The kernel is loaded into the tensor's device's context.
            with torch.cuda.device(device):
                status = _lib.attngen_jit_get_kernel(_Jit.get(), ctypes.byref(spec),
                                                     ctypes.byref(handle))
            if status:
                _raise(status, f"getting the kernel for {dtype}, head_dim {head_dim}, "
                               f"causal={causal}, causal_align={causal_align!r}, "
                               f"softcap={softcap}, "
                               f"window_size=({window_left}, {window_right}), "
                               f"varlen={varlen}")
            kernel = handle.value
            _kernels[key] = kernel
    return kernel


def _forward(q, k, v, causal, scale, return_lse, causal_align, softcap, window_left,
             window_right):
    b, nq, h, d = q.shape
    out = torch.empty((b, nq, h, d), dtype=q.dtype, device=q.device)
    lse = torch.empty((b, h, nq) if return_lse else (0,), dtype=torch.float32, device=q.device)
    kernel = _kernel_for(q.device, q.dtype, d, causal, causal_align, scale, softcap,
                         window_left, window_right)
    args = _capi.ForwardArgs()
    args.q, args.k, args.v, args.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()
    args.lse = lse.data_ptr() if return_lse else None
    args.batch, args.nq, args.nk = b, nq, k.shape[1]
    args.num_heads, args.num_kv_heads, args.head_dim = h, k.shape[2], d
    args.q_strides[:] = q.stride()
    args.k_strides[:] = k.stride()
    args.v_strides[:] = v.stride()
    args.o_strides[:] = out.stride()
    args.dtype = _capi.DTYPE_BF16 if q.dtype == torch.bfloat16 else _capi.DTYPE_F16
    stream = torch.cuda.current_stream(q.device).cuda_stream
    status = _lib.attngen_kernel_forward(kernel, ctypes.byref(args), stream)
    if status:
        _raise(status)
    return out, lse


def _refuse_backward(op, message):
    """Registers the autograd of custom op `op` as an error that says `message`:
    the kernels compute no gradients, and a backward pass must not silently get
    none."""
    def backward(ctx, grad_out, grad_lse):
        raise NotImplementedError(message)

    def setup_context(ctx, inputs, output):
        pass

    op.register_autograd(backward, setup_context=setup_context)


def _outputs_like(q, return_lse):
    """Empty O [B, Nq, H, D] and LSE [B, H, Nq] (or an empty one) for a padded
    batch of queries `q`: what a fake (meta) implementation returns."""
    b, nq, h, _ = q.shape
    lse = q.new_empty((b, h, nq) if return_lse else (0,), dtype=torch.float32)
    return q.new_empty(q.shape), lse


if torch is not None:
    @torch.library.custom_op("attngen::attention", mutates_args=(), device_types="cuda")
    def _attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                      scale: float, return_lse: bool, causal_align: str, softcap: float,
                      window_left: int, window_right: int
                      ) -> tuple[torch.Tensor, torch.Tensor]:
        return _forward(q, k, v, causal, scale, return_lse, causal_align, softcap,
                        window_left, window_right)

    @_attention_op.register_fake
    def _attention_fake(q, k, v, causal, scale, return_lse, causal_align, softcap,
                        window_left, window_right):
        return _outputs_like(q, return_lse)

    _refuse_backward(
        _attention_op,
        "attngen.attention has no backward pass yet: call it under torch.no_grad() or "
        "use torch.nn.functional.scaled_dot_product_attention for training")


def _dispatch_mode_active():
    """Whether a TorchDispatchMode (fake tensors, functionalization, make_fx
    proxies) is on the stack: then only the custom op does the right thing."""
    stack_length = getattr(torch._C, "_len_torch_dispatch_stack", None)
    return stack_length is not None and stack_length() > 0


def _use_custom_op(*tensors):
    """Whether a call of one of the package's ops with these tensor arguments
    must go through its torch custom op (torch.ops.attngen.attention, ...).

    A plain eager call launches directly: the first call of a torch custom op
    in a process costs seconds of PyTorch's lazy set-up (torch._dynamo, sympy),
    far more than a compile. The op is needed while tracing (torch.compile,
    export: torch.compiler.is_compiling(), a dispatch mode, or tensor
    subclasses such as FakeTensor and FunctionalTensor) and when autograd
    records the call (so .backward() reaches the op's clear error)."""
    if torch.compiler.is_compiling() or _dispatch_mode_active():
        return True
    if any(type(t) is not torch.Tensor for t in tensors):
        return True
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def attention(q, k, v, causal, scale, return_lse, causal_align, softcap, window_size):
    if torch is None:
        raise ImportError("attngen.attention needs PyTorch (pip install torch); "
                          "attngen.compile works without it")
    _check_inputs(q, k, v, causal, scale, return_lse, causal_align, softcap, window_size)
    scale = _normalize_scale(scale)
    softcap = _softcap_value("attention", softcap)
    left, right = _window_sides("attention", window_size)
    # Without a diagonal (no causal mask, no window) the alignment means
    # nothing: one kernel serves both.
    if not causal and left < 0 and right < 0:
        causal_align = "top-left"
    if _use_custom_op(q, k, v):
        out, lse = torch.ops.attngen.attention(q, k, v, causal, scale, return_lse,
                                               causal_align, softcap, left, right)
    else:
        out, lse = _forward(q, k, v, causal, scale, return_lse, causal_align, softcap, left,
                            right)
    return (out, lse) if return_lse else out
