"""The tensor checks the torch front ends share (types, ranks, dtypes,
shapes, head dims, strides, devices), each front end describing its q, k and
v in a TensorLayout. The device check comes last, so that every other check
runs on CPU tensors, without a GPU. Holds the package's one optional
`import torch`: compile() works without torch, the front ends say they need it."""

from typing import NamedTuple

from ._errors import invalid_argument, invalid_spec
from ._spec import call_options as _scalar_options
from ._spec import (check_head_dim_with_compiler, describe_head_dims, problem_verdict,
                    supported_head_dims)

try:
    import torch
except ImportError:
    torch = None

# Asked once, at import: torch.compile traces a set look-up, not a ctypes call.
_HEAD_DIMS = supported_head_dims()

def call_options(function, causal, scale, causal_align, softcap, window_size, **flags):
    """The torch front ends' scalar options (_spec.call_options), checked by
    the compiler too: softcap nan, a window side of -2 or a causal alignment
    without a diagonal fail here, eagerly and under fake tensors (dispatch
    modes), before any tensor is touched."""
    options = _scalar_options(function, causal, scale, causal_align, softcap, window_size,
                              **flags)
    # Not while dynamo traces (torch.compile, export): a ctypes call breaks
    # the graph, and marking the verdict a constant fails on torch 2.11 with
    # dynamic shapes; there the kernel's compile still refuses at run time.
    if torch is None or not torch.compiler.is_compiling():
        verdict = problem_verdict(options.causal, options.causal_align, options.softcap,
                                  options.window_left, options.window_right, options.scale)
        if verdict:
            raise invalid_spec(verdict)
    return options


class TensorLayout(NamedTuple):
    """A front end's q, k and v: what its checks need and its messages say."""
    function: str
    names: tuple  # of q, k and v
    rank: int
    dims: str  # the dimensions in words, after the rank
    rank_hint: str  # where to go with a tensor of another rank
    row_dims: str  # the dimensions whose strides must be multiples of 8
    kv_heads: str  # "q has H heads and <kv_heads> Hkv"


def require_torch(function):
    """Raises ImportError, saying what works without it, when torch is missing."""
    if torch is None:
        raise ImportError(f"attngen.{function} needs PyTorch (pip install torch); "
                          "attngen.compile works without it")


def check_is_tensor(function, name, t):
    """A TypeError for anything but a torch.Tensor."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"attngen.{function}: {name} must be a torch.Tensor, got "
                        f"{type(t).__name__}")


def check_rank(name, t, rank, dims="", hint=""):
    """`t` has `rank` dimensions (`dims` names them in the message)."""
    if t.dim() != rank:
        raise invalid_argument(f"{name} must be {rank}-D{dims}; got shape {tuple(t.shape)}{hint}")


def check_int32(name, t):
    """An index tensor is int32, as flash_attn's."""
    if t.dtype != torch.int32:
        raise invalid_argument(f"{name} has dtype {t.dtype}; it must be torch.int32 (as "
                               "flash_attn's): convert with .to(torch.int32)")


def check_tensors(layout, q, k, v):
    """q, k and v are tensors of the layout's rank: what every later check reads."""
    for name, t in zip(layout.names, (q, k, v)):
        check_is_tensor(layout.function, name, t)
        check_rank(name, t, layout.rank, layout.dims, layout.rank_hint)


def check_head_dim(head_dim):
    """The head dim is one the compiler takes; while tracing (no ctypes) the
    same facts without the compiler's words."""
    if head_dim in _HEAD_DIMS:
        return
    if torch.compiler.is_compiling():
        raise invalid_argument(f"head dimension {head_dim} is not supported: attngen takes "
                               f"{describe_head_dims(_HEAD_DIMS)}")
    check_head_dim_with_compiler(head_dim)


def check_qkv(layout, q, k, v, value_head_dim=False):
    """What the kernels assume of q, k and v whatever the front end: one
    float16/bfloat16 dtype, k and v alike (v may have a head dim of its own
    with `value_head_dim`: head_dim_v, DeepSeek's 192/128), a
    supported head dim shared by q and k, whole groups of query heads per
    key/value head, and strides a 16-byte aligned row can use."""
    named = list(zip(layout.names, (q, k, v)))
    _check_dtypes(named)
    k_name, v_name = layout.names[1:]
    same = (tuple(k.shape[:-1]) == tuple(v.shape[:-1]) if value_head_dim
            else tuple(k.shape) == tuple(v.shape))
    if not same:
        raise invalid_argument(f"{k_name} and {v_name} must have the same shape"
                               f"{' but for the head dim' if value_head_dim else ''}; got "
                               f"{k_name} {tuple(k.shape)} and {v_name} {tuple(v.shape)}")
    heads, head_dim = q.shape[-2:]
    kv_heads, kv_head_dim = k.shape[-2:]
    if kv_head_dim != head_dim:
        names = k_name if value_head_dim else f"{k_name} and {v_name}"
        raise invalid_argument(f"q has head_dim {head_dim} but {names} "
                               f"{'has' if value_head_dim else 'have'} head_dim {kv_head_dim}")
    # Before the stride checks, which an unsupported head dim (60) would trip
    # first with a message about strides instead of the head dim.
    check_head_dim(head_dim)
    if v.shape[-1] != head_dim:
        check_head_dim(v.shape[-1])
    if kv_heads == 0 or heads % kv_heads != 0:
        raise invalid_argument(
            f"q has {heads} heads and {layout.kv_heads} {kv_heads}: the number of q heads must "
            "be a multiple of the number of k/v heads (grouped-query attention)")
    check_strides(layout, named)


def _check_dtypes(named):
    """Every tensor is float16 or bfloat16, and all share q's (the first's)."""
    q_dtype = named[0][1].dtype
    for name, t in named:
        if t.dtype == getattr(torch, "float8_e4m3fn", None):
            raise invalid_argument(f"{name} has dtype {t.dtype}: FP8 has the forward of "
                                   "attngen.attention, attention_varlen and "
                                   "attention_with_kvcache only (with q_descale, k_descale, "
                                   "v_descale), not this function yet; use bfloat16 here")
        if t.dtype not in (torch.float16, torch.bfloat16):
            raise invalid_argument(f"{name} has dtype {t.dtype}; attngen supports "
                                   "torch.float16 and torch.bfloat16: convert with "
                                   ".to(torch.bfloat16)")
        if t.dtype != q_dtype:
            raise invalid_argument(f"{name} has dtype {t.dtype} but q has {q_dtype}: use one "
                                   "dtype")


def check_strides(layout, named):
    """Rows are contiguous and start on 16 bytes: the kernels load them whole
    (8 elements of 16-bit dtypes, 16 of FP8's)."""
    for name, t in named:
        strides = t.stride()
        if strides[-1] != 1:
            raise invalid_argument(f"{name} has strides {tuple(strides)}: the last dimension "
                                   "(head_dim) must be contiguous (stride 1); call .contiguous()")
        row = max(1, 16 // t.element_size())
        for dim in range(t.dim() - 1):
            if t.shape[dim] > 1 and strides[dim] % row != 0:
                raise invalid_argument(
                    f"{name} has strides {tuple(strides)}: the strides of {layout.row_dims} "
                    f"must be multiples of {row} elements (16 bytes); call .contiguous()")


def check_devices(named):
    """Every tensor of `named` ((name, tensor or None), q first) is on q's CUDA
    device: checked last, so that the other checks need no GPU."""
    q = named[0][1]
    for name, t in named:
        if t is None:
            continue
        if t.device.type != "cuda":
            raise invalid_argument(f"{name} is on {t.device}; attngen runs on CUDA devices: "
                                   "move the tensors with .cuda()")
        if t.device != q.device:
            raise invalid_argument(f"{name} is on {t.device} but q is on {q.device}: put every "
                                   "tensor on one device")
