"""The checks of scalar arguments that compile() and the three torch front
ends share, and the kernel spec they build: an argument reaches the C API
unchanged or not at all (flags are bools, ints fit a C int, strings are
whole), while which values are supported stays the compiler's to say. Needs
no torch and no GPU."""

import ctypes
import functools
import math
from typing import NamedTuple, Optional

from . import _capi
from ._capi import lib
from ._errors import check_status, invalid_spec

_DTYPES = {"bf16": _capi.DTYPE_BF16, "bfloat16": _capi.DTYPE_BF16,
           "f16": _capi.DTYPE_F16, "fp16": _capi.DTYPE_F16, "float16": _capi.DTYPE_F16,
           "half": _capi.DTYPE_F16, "e4m3": _capi.DTYPE_E4M3,
           "float8_e4m3fn": _capi.DTYPE_E4M3, "fp8": _capi.DTYPE_E4M3}

# The C API's int fields are 32-bit: ctypes would silently wrap larger values.
_C_INT_MIN, _C_INT_MAX = -2**31, 2**31 - 1

#: The largest head dim asked about; the compiler refuses larger.
_HEAD_DIM_LIMIT = 256


def dtype_code(dtype):
    """`dtype` (a name such as 'bf16', or a torch dtype) as an attnrt_dtype."""
    name = str(dtype)
    if name.startswith("torch."):
        name = name[len("torch."):]
    if name not in _DTYPES:
        raise invalid_spec(f"dtype {dtype!r} is not supported; use 'bf16', 'f16' or 'e4m3' "
                           "(torch.bfloat16, torch.float16, torch.float8_e4m3fn)")
    return _DTYPES[name]


def brief(value):
    """`value` for a message: an int of many digits as its first ones and
    its length, never hundreds of digits."""
    text = repr(value)
    if isinstance(value, int) and len(text) > 24:
        return f"{text[:6]}... (an int of {len(text.lstrip('-'))} digits)"
    return text


def scale_value(scale):
    """`scale` as the C API's double: None -> 0.0 (the library's
    1/sqrt(head_dim)), else a positive finite float."""
    if scale is None:
        return 0.0
    # A string is refused as head_dim's "128" is, not parsed.
    if isinstance(scale, (bool, str, bytes)):
        raise invalid_spec(f"scale must be a number or None, got {scale!r}")
    try:
        value = float(scale)
    except (TypeError, ValueError, OverflowError):
        raise invalid_spec(f"scale must be a number or None, got {brief(scale)}") from None
    if not (value > 0 and math.isfinite(value)):
        raise invalid_spec("scale must be positive and finite (or None for 1/sqrt(head_dim)), "
                           f"got {value}")
    return value


def c_int(name, value):
    """`value` as a C int field: an int (not a bool) that fits 32 bits. Which
    values are supported is the compiler's to say (its INVALID_SPEC error)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_spec(f"{name} must be an int, got {value!r}")
    if not _C_INT_MIN <= value <= _C_INT_MAX:
        raise invalid_spec(f"{name} = {value} is out of range: the C API takes a 32-bit int "
                           f"({_C_INT_MIN} to {_C_INT_MAX})")
    return value


def flag(function, name, value):
    """`value` as a C 0/1 flag: only a bool, so that 'False', 2 or None never
    turn into True."""
    if not isinstance(value, bool):
        raise TypeError(f"attngen.{function}: {name} must be a bool (True or False), got "
                        f"{value!r}")
    return 1 if value else 0


def c_string(function, name, value):
    """`value` as a C string: a str without NUL characters (ctypes would cut it
    at the first one)."""
    if not isinstance(value, str):
        raise TypeError(f"attngen.{function}: {name} must be a str, got {value!r}")
    if "\0" in value:
        raise invalid_spec(f"{name} {value!r} contains a NUL character")
    return value.encode()


def causal_align_code(function, value):
    """`value` as an attngen_causal_align: exactly 'top-left' or 'bottom-right'."""
    if not isinstance(value, str):
        raise TypeError(f"attngen.{function}: causal_align must be a str ('top-left' or "
                        f"'bottom-right'), got {value!r}")
    if value not in _capi.CAUSAL_ALIGN:
        raise invalid_spec(
            f"causal_align {value!r} is not supported; use 'top-left' (query i sees keys "
            "j <= i, as torch's is_causal) or 'bottom-right' (j <= i + seqlen_k - seqlen_q, as "
            "flash_attn)")
    return _capi.CAUSAL_ALIGN[value]


def softcap_value(function, value):
    """`value` as the C API's double softcap: a real number (not a bool). Which
    values are valid (0, or positive and finite) is the compiler's to say."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"attngen.{function}: softcap must be a number (0.0 for none), got "
                        f"{value!r}")
    try:
        return float(value)
    except OverflowError:
        raise invalid_spec(f"softcap {brief(value)} does not fit a double; use a positive finite "
                           "number or 0.0 for none") from None


def window_sides(function, value):
    """`value` as (left, right) C ints: a tuple or list of two ints (-1: an
    unbounded side). Which sides are valid (-1 or 0 to 2**31 - 1, right -1 or
    0 with causal) is the compiler's to say."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"attngen.{function}: window_size must be a (left, right) pair of ints "
                        f"(-1 for an unbounded side), got {value!r}")
    for side, name in zip(value, ("left", "right")):
        if isinstance(side, bool) or not isinstance(side, int):
            raise TypeError(f"attngen.{function}: window_size {name} must be an int (-1 for "
                            f"unbounded), got {side!r}")
    return (c_int("window_size left", value[0]), c_int("window_size right", value[1]))


class CallOptions(NamedTuple):
    """A torch front end's scalar options, checked, as its custom op takes them."""
    causal: bool
    scale: float  # 0.0: 1/sqrt(head_dim)
    causal_align: str
    softcap: float
    window_left: int
    window_right: int


def call_options(function, causal, scale, causal_align, softcap, window_size, **flags):
    """Checks the options every torch front end takes, and its own bool
    `flags`, before any tensor is touched (so without a GPU)."""
    for name, value in (("causal", causal),) + tuple(flags.items()):
        flag(function, name, value)
    causal_align_code(function, causal_align)
    softcap = softcap_value(function, softcap)
    left, right = window_sides(function, window_size)
    scale = scale_value(scale)
    if not causal and left < 0 and right < 0:
        # Without a diagonal (no causal mask, no window) the alignment means
        # nothing: one kernel serves both.
        causal_align = "bottom-right"
    return CallOptions(causal, scale, causal_align, softcap, left, right)


@functools.lru_cache(maxsize=256)
def problem_verdict(causal, causal_align, softcap, window_left, window_right, scale):
    """The compiler's message on the problem these checked options describe
    (a default head dim and dtype), or "" when it takes them: what an eager
    call would hear when it compiles, asked before any tensor is touched
    (remembered: an eager call's hot path makes no ctypes call)."""
    spec = KernelSpec(causal=causal, causal_align=causal_align, softcap=softcap,
                      window_size=(window_left, window_right),
                      scale=scale or None).struct("attention")
    if lib.attngen_spec_check(ctypes.byref(spec), b"sm_90a") == 0:
        return ""
    # The arch is the check's, not the caller's: not part of the message.
    return lib.attngen_last_error().decode().removesuffix(" (arch sm_90a)")


class KernelSpec(NamedTuple):
    """One kernel as its caller asked for it: hashable, so that it keys the
    cache of loaded kernels; `struct` checks it into the C attngen_spec."""
    head_dim: int = 128
    dtype: str = "bf16"
    causal: bool = False
    causal_align: str = "bottom-right"
    scale: Optional[float] = None
    softcap: float = 0.0
    window_size: tuple = (-1, -1)
    with_lse: bool = True
    varlen: bool = False
    kv_cache: bool = False
    page_size: int = 0
    split_kv: bool = False
    head_pack: int = 1
    block_m: int = 0
    block_n: int = 0
    num_warps: int = 0
    backward: str = "none"
    max_smem: int = 0
    alibi: bool = False
    head_dim_v: int = 0
    block_scales: bool = False
    v_row_major: bool = False

    def struct(self, function):
        """The C attngen_spec, each field checked on the way in; `function`
        names the caller in the errors."""
        spec = _capi.Spec()
        lib.attngen_spec_init_sized(ctypes.byref(spec), ctypes.sizeof(spec))
        spec.head_dim = c_int("head_dim", self.head_dim)
        spec.block_m = c_int("block_m", self.block_m)
        spec.block_n = c_int("block_n", self.block_n)
        spec.num_warps = c_int("num_warps", self.num_warps)
        spec.max_smem = c_int("max_smem", self.max_smem)
        spec.alibi = flag(function, "alibi", self.alibi)
        spec.head_dim_v = c_int("head_dim_v", self.head_dim_v)
        spec.block_scales = flag(function, "block_scales", self.block_scales)
        spec.v_row_major = flag(function, "v_row_major", self.v_row_major)
        spec.dtype = dtype_code(self.dtype)
        spec.causal = flag(function, "causal", self.causal)
        spec.causal_align = causal_align_code(function, self.causal_align)
        spec.softcap = softcap_value(function, self.softcap)
        spec.window_left, spec.window_right = window_sides(function, self.window_size)
        spec.scale = scale_value(self.scale)
        spec.with_lse = flag(function, "with_lse", self.with_lse)
        spec.varlen = flag(function, "varlen", self.varlen)
        spec.kv_cache = flag(function, "kv_cache", self.kv_cache)
        spec.split_kv = flag(function, "split_kv", self.split_kv)
        spec.page_size = c_int("page_size", self.page_size)
        spec.head_pack = c_int("head_pack", self.head_pack)
        if self.backward not in _capi.BACKWARD:
            raise invalid_spec(f"backward {self.backward!r} is not a kernel of the backward "
                               "pass; use 'dq' or 'dkdv' (the deterministic pair), 'pre', "
                               "'fused' or 'post' (the one-kernel backward), or 'none' for a "
                               "forward kernel")
        spec.backward = _capi.BACKWARD[self.backward]
        return spec

    def describe(self):
        """Its dtype, head dim and the fields set away from their defaults: what
        an error about this kernel names."""
        changed = "".join(f", {name}={value!r}" for name, value in self._asdict().items()
                          if name not in ("dtype", "head_dim")
                          and value != self._field_defaults[name])
        return f"{self.dtype}, head_dim {self.head_dim}{changed}"


def _head_dim_status(head_dim):
    """The compiler's verdict (0: taken) on a default spec of `head_dim`."""
    spec = KernelSpec(head_dim=head_dim).struct("attention")
    return lib.attngen_spec_check(ctypes.byref(spec), b"sm_90a")


def check_head_dim_with_compiler(head_dim):
    """Raises the compiler's own error for a head dim it refuses: its words
    say how to pad the head dim."""
    check_status(_head_dim_status(head_dim))


def supported_head_dims():
    """Every head dim the compiler takes, asked once so that a check can be a
    set look-up (which torch.compile traces, unlike a ctypes call)."""
    return frozenset(head_dim for head_dim in range(1, _HEAD_DIM_LIMIT + 1)
                     if _head_dim_status(head_dim) == 0)


def describe_head_dims(dims):
    """`dims` in words: a range with its step where it is one, else a list."""
    ordered = sorted(dims)
    step = ordered[1] - ordered[0] if len(ordered) > 1 else 1
    if ordered == list(range(ordered[0], ordered[-1] + 1, step)):
        return f"{ordered[0]} to {ordered[-1]} in steps of {step}"
    return ", ".join(map(str, ordered))
