"""The runtime's check of a varlen call's cu_seqlens values on host copies,
shared by the 16-bit and the FP8 varlen front ends."""

import ctypes

from . import _capi
from ._capi import lib
from ._errors import invalid_argument

# The runtime's names for the sizes, and what a Python caller passed them as.
_RUNTIME_NAMES = (("args.nq", "q.shape[0]"), ("args.nk", "k.shape[0]"),
                  ("args.max_seqlen_q", "max_seqlen_q"),
                  ("args.max_seqlen_k", "max_seqlen_k"))


def check_seqlen_values(q, k, cu_q, cu_k, max_q, max_k, block_table=None,
                        function="attention_varlen"):
    """attnrt_check_cu_seqlens on host copies of cu_seqlens (a
    synchronization). With a block_table, k is a paged cache and each
    sequence's keys must fit its row of the table."""
    args = _capi.ForwardArgs()
    args.batch, args.nq, args.nk = cu_q.numel() - 1, q.shape[0], k.shape[0]
    if block_table is not None:
        args.block_table = block_table.data_ptr()
        args.page_size, args.max_blocks = k.shape[1], block_table.shape[1]
        args.nk = block_table.shape[1] * k.shape[1]
    args.max_seqlen_q, args.max_seqlen_k = max_q, max_k
    host_q, host_k = cu_q.cpu(), cu_k.cpu()
    pointer = ctypes.POINTER(ctypes.c_int32)
    status = lib.attnrt_check_cu_seqlens(ctypes.byref(args),
                                         ctypes.cast(host_q.data_ptr(), pointer),
                                         ctypes.cast(host_k.data_ptr(), pointer))
    if status:
        message = lib.attnrt_last_error().decode()
        for runtime, python in _RUNTIME_NAMES:
            message = message.replace(runtime, python)
        raise invalid_argument(f"attngen.{function}: {message} (check_seqlens=False "
                               "skips this check)")
    if block_table is not None:
        _check_pages_used(host_k, block_table, k.shape[1], k.shape[0])


def _check_pages_used(host_cu_k, block_table, page_size, num_blocks):
    """The entries of block_table that each sequence's keys use (its first
    ceil(keys / page_size)) name pages of the cache: the kernel would read
    zeros for any other, silently wrong keys."""
    table = block_table.cpu()
    lengths = (host_cu_k[1:] - host_cu_k[:-1]).tolist()
    for b, length in enumerate(lengths):
        used = table[b, :(length + page_size - 1) // page_size]
        bad = ((used < 0) | (used >= num_blocks)).nonzero()
        if bad.numel():
            j = int(bad[0, 0])
            raise invalid_argument(
                f"attngen.attention_varlen: block_table[{b}][{j}] = {int(used[j])} is outside "
                f"[0, {num_blocks}) (the pages of k and v), but sequence {b} uses its first "
                f"{used.numel()} pages ({length} keys): fix the table (check_seqlens=False "
                "skips this check)")
