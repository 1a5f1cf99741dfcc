"""What the torch front ends share to run a kernel: its look-up for q's
device, dtype and head dim, the outputs, attnrt_forward_args and the launch on
torch's current stream; and their custom ops' plumbing: when a call must go
through its op, the op's fake outputs, and the refused backward pass."""

import ctypes

from . import _capi
from ._capi import lib
from ._errors import check_status, invalid_argument
from ._jit import device_arch, loaded_kernel
from ._spec import KernelSpec
from ._torch_checks import torch


def kernel_for(q, scale, **spec_fields):
    """The kernel for q's device, dtype and head dim and `spec_fields`, loaded
    on first use; `scale` 0.0 is the ops' spelling of None (1/sqrt(head_dim))."""
    spec = KernelSpec(head_dim=q.shape[-1], dtype=str(q.dtype), scale=scale or None,
                      **spec_fields)
    return loaded_kernel(spec, q.device.index, lambda: torch.cuda.device(q.device))


#: Tiles for plain causal calls whose sequences are all short, on sm_90a:
#: head_dim -> (longest sequence, block_m, num_warps). The default tiles are
#: tuned at 8k; d64's 192-row query blocks ran 16-20% slower than 128-row
#: ones at 512 and 1k, level at 2k, 3-9% faster at 4k and 8k (docs/PERF.md,
#: 2026-12-04). The kernel itself has no sequence length, so the call picks.
_SHORT_CAUSAL_TILES = {64: (2048, 128, 8)}
_ARCH_OF_DEVICE = {}


def short_sequence_tiles(q, longest, causal, softcap=0.0, window=(-1, -1), alibi=False):
    """block_m / num_warps overrides for a plain causal call (no soft cap,
    window or ALiBi) whose longest query or key sequence is `longest`: {} to
    keep the default tiles."""
    choice = _SHORT_CAUSAL_TILES.get(q.shape[-1])
    if (not causal or choice is None or longest > choice[0] or softcap or alibi
            or window != (-1, -1) or q.dtype not in (torch.float16, torch.bfloat16)):
        return {}
    index = q.device.index
    if index not in _ARCH_OF_DEVICE:
        with torch.cuda.device(q.device):
            _ARCH_OF_DEVICE[index] = device_arch()
    if _ARCH_OF_DEVICE[index] != "sm_90a":
        return {}
    return dict(block_m=choice[1], num_warps=choice[2])


def outputs_like(q, return_lse, v=None):
    """Empty O shaped as q (with v's head dim when `v` is given; bfloat16 for
    an FP8 q, else q's dtype) and LSE [..., heads, seqlen_q] float32 (or an
    empty one), for a padded (B, Nq, H, D) or packed (total_q, H, D) q: what a
    launch fills and what an op's fake (meta) implementation returns."""
    *batch, seqlen_q, heads, _ = q.shape
    lse = q.new_empty((*batch, heads, seqlen_q) if return_lse else (0,), dtype=torch.float32)
    head_dim_v = q.shape[-1] if v is None else v.shape[-1]
    dtype = torch.bfloat16 if q.dtype == getattr(torch, "float8_e4m3fn", None) else q.dtype
    return q.new_empty((*q.shape[:-1], head_dim_v), dtype=dtype), lse


def head_dim_v_of(q, v):
    """The spec's head_dim_v for v: 0 when v's head dim is q's."""
    return 0 if v.shape[-1] == q.shape[-1] else v.shape[-1]


def forward_args(q, k, v, out, lse, batch, nk):
    """attnrt_forward_args of a launch: the tensors (`lse` None for none), the
    sizes, the dtype, and strides as 4 dims (packed tensors have no batch
    dimension, and its stride is unused)."""
    args = _capi.ForwardArgs()
    args.q, args.k, args.v, args.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()
    args.lse = lse.data_ptr() if lse is not None else None
    args.batch, args.nq, args.nk = batch, q.shape[-3], nk
    args.num_heads, args.num_kv_heads, args.head_dim = q.shape[-2], k.shape[-2], q.shape[-1]
    args.q_strides[:] = _strides_4d(q)
    args.k_strides[:] = _strides_4d(k)
    args.v_strides[:] = _strides_4d(v)
    args.o_strides[:] = _strides_4d(out)
    args.dtype = _capi.DTYPE_BF16 if q.dtype == torch.bfloat16 else _capi.DTYPE_F16
    if q.dtype == getattr(torch, "float8_e4m3fn", None):
        args.dtype = _capi.DTYPE_E4M3
    return args


def check_alibi_slopes(function, slopes, q, batch, heads):
    """ALiBi's slopes as flash_attn takes them: None, or a float32 tensor
    (heads,) or (batch, heads) on q's device whose heads are contiguous."""
    if slopes is None:
        return
    if not isinstance(slopes, torch.Tensor):
        raise TypeError(f"attngen.{function}: alibi_slopes must be a torch.Tensor or None, "
                        f"got {type(slopes).__name__}")
    if slopes.dtype != torch.float32:
        raise invalid_argument(f"alibi_slopes must be float32 (one slope per head, as "
                               f"flash_attn's), got {slopes.dtype}; call .float()")
    if tuple(slopes.shape) not in ((heads,), (batch, heads)):
        raise invalid_argument(f"alibi_slopes has shape {tuple(slopes.shape)}; it must be "
                               f"(heads,) = ({heads},) or (batch, heads) = ({batch}, {heads})")
    if slopes.numel() and slopes.stride()[-1] != 1:
        raise invalid_argument("alibi_slopes must be contiguous in its last dimension; call "
                               ".contiguous()")
    if slopes.device != q.device:
        raise invalid_argument(f"alibi_slopes is on {slopes.device} but q is on {q.device}: "
                               "move it with .to(q.device)")


def set_alibi_args(args, slopes):
    """The slopes' pointer and batch stride (0: one slope per head)."""
    if slopes is None:
        return
    args.alibi_slopes = slopes.data_ptr()
    args.alibi_slopes_stride = slopes.stride()[0] if slopes.dim() == 2 else 0


def _strides_4d(t):
    """`t`'s strides, a 0 batch stride put first for a packed 3-D tensor."""
    return (0,) * (4 - t.dim()) + tuple(t.stride())


def current_stream(device):
    """torch's current stream on `device`: kernels queue behind the caller's work."""
    return torch.cuda.current_stream(device).cuda_stream


def launch(kernel, args, device):
    """Queues `kernel` on torch's current stream of `device`."""
    check_status(lib.attngen_kernel_forward(kernel, ctypes.byref(args), current_stream(device)))


def refuse_backward(op, message):
    """Registers the autograd of custom op `op` as an error that says `message`:
    the kernels compute no gradients, and a backward pass must not silently get
    none."""
    def backward(ctx, grad_out, grad_lse):
        raise NotImplementedError(message)

    def setup_context(ctx, inputs, output):
        pass

    op.register_autograd(backward, setup_context=setup_context)


def _dispatch_mode_active():
    """Whether a TorchDispatchMode (fake tensors, functionalization, make_fx
    proxies) is on the stack: then only the custom op does the right thing."""
    stack_length = getattr(torch._C, "_len_torch_dispatch_stack", None)
    return stack_length is not None and stack_length() > 0


def use_custom_op(*tensors):
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
