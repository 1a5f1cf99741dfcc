"""attngen: FlashAttention-class attention kernels, compiled on demand.

    import attngen
    out = attngen.attention(q, k, v, causal=True)             # torch tensors
    out = attngen.attention(q, k, v, window_size=(256, 0))    # sliding window
    out, lse = attngen.attention(q, k, v, return_lse=True)
    out.sum().backward()                                      # autograd: dq, dk, dv
    dq, dk, dv = attngen.attention_backward(dout, q, k, v, out, lse, causal=True)

    k = attngen.compile(arch="sm_90a", head_dim=128, dtype="bf16")   # no GPU needed
    k.ptx, k.metadata

    # Packed variable-length batches, as flash_attn_varlen_func:
    out = attngen.attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                   max_seqlen_q, max_seqlen_k, causal=True)

    # FP8 (sm_90a): quantize (Hadamard-rotated q and k), then attend
    x = attngen.quantize_fp8(q, k, v, granularity="block", hadamard=True)
    out = attngen.attention(x.q, x.k, x.v, **x.descales)

    # flash_attn's own API, a drop-in (change the import, nothing else):
    from attngen.flash_attn_interface import flash_attn_func, flash_attn_with_kvcache

Tensors are (batch, seqlen, heads, head_dim), fp16 or bf16, on a CUDA device,
with the last dimension contiguous (other strides are free) and head_dim a
multiple of 8 from 8 to 256. K and V may have fewer heads than Q
(grouped-query attention). Kernels are compiled on first
use and cached in memory and on disk (ATTNGEN_CACHE_DIR, default
~/.cache/attngen); ATTNGEN_LOG=1 logs what the cache does.
"""

from . import _capi
from ._errors import AttngenError, InvalidInputError
from ._jit import (CompiledKernel, __version__, cache_dir, clear_memory_cache, compile,
                   compiler_id, device_arch, stats)
from ._torch_attention import attention
from ._torch_backward import attention_backward
from ._torch_kvcache import attention_with_kvcache
from ._torch_quantize import QuantizedFp8, quantize_fp8, quantize_fp8_varlen
from ._torch_varlen import attention_varlen, attention_varlen_backward
from . import flash_attn_interface  # flash_attn's API: attngen.flash_attn_interface

# Private, kept for gpu/'s scripts, which print where the library came from
# (attngen._abi, which they load by path, is a submodule like the others).
_library_path = _capi.library_path

__all__ = ["attention", "attention_backward", "attention_varlen", "attention_varlen_backward",
           "attention_with_kvcache", "compile", "quantize_fp8", "quantize_fp8_varlen",
           "QuantizedFp8", "flash_attn_interface",
           "CompiledKernel", "AttngenError",
           "InvalidInputError", "cache_dir", "stats", "clear_memory_cache", "device_arch",
           "__version__", "compiler_id"]
