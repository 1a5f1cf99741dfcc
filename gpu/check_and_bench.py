#!/usr/bin/env python3
"""Correctness check and benchmark of attngen kernels on a GPU.

Usage (from the repository root, on the GPU machine):

    python3 gpu/check_and_bench.py --lib build-gpu/lib/libattnrt.so \
        --kernels DIR [--json OUT.json] [--quick] [--no-bench]

DIR holds pairs NAME.ptx + NAME.json (metadata, docs/ABI.md) produced by attngen.
Each kernel is loaded through libattnrt (ctypes on runtime/include/attnrt/attnrt.h)
and run on torch tensors in the ABI layout [B, N, H, D]:

* correctness: many shapes (ragged, GQA, strided views), fresh random inputs, O and
  LSE poisoned with NaN beforehand, compared with a float32 reference on the GPU
  (causal masks of both alignments, sliding windows, soft caps, read off the metadata);
* benchmark: the PEERS table shapes (B*N = 16384 tokens, H*D = 2048), ours against
  torch SDPA's FLASH_ATTENTION and CUDNN_ATTENTION backends on the same memory,
  plus one bf16 GEMM 8192^3 as the compute ceiling. A sliding-window kernel counts
  only its visible FLOPs (4 * D * the keys each row sees), has no SDPA peer, and is
  set beside the plain kernel of the same target, dtype and head dim at the same
  shape (the "window cost" table; issue 9's bar: >= 0.9x the plain kernel). A kernel
  whose name ends in _exp2emu<k>o8 (--exp2-emulate) is set beside the same kernel
  without emulation in the "exp2 emulation" table.

Each kernel runs in its own child process (unless --inprocess), so a kernel that
faults (which poisons its CUDA context) or hangs is reported and the others still
run. Exit status: 0 if every check passed, 1 otherwise, 2 for usage errors.
"""

import argparse
import ctypes
import glob
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback

# --------------------------------------------------------------------------------------
# The runtime's C API: its constants, and its structs as the library describes them
# (python/attngen/_abi.py, loaded by path: the package itself needs libattngen).
# --------------------------------------------------------------------------------------

ATTNRT_ABI_VERSION = 2
ATTNRT_OK = 0
ATTNRT_ERROR_INVALID_ARGUMENT = 1
ATTNRT_ERROR_UNSUPPORTED_DEVICE = 5
ATTNRT_DTYPE_F16 = 1
ATTNRT_DTYPE_BF16 = 2
#: attnrt_kernel_info.causal_align values (attnrt_causal_align).
ATTNRT_CAUSAL_ALIGN_TOP_LEFT = 0
ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT = 1


def _load_abi():
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python",
                        "attngen", "_abi.py")
    spec = importlib.util.spec_from_file_location("attngen_abi", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_abi = _load_abi()


def struct_dict(struct):
    """A ctypes struct's members as a dict (strings decoded, arrays as lists)."""
    out = {}
    for name, _ in struct._fields_:
        value = getattr(struct, name)
        if isinstance(value, bytes):
            value = value.decode()
        elif isinstance(value, ctypes.Array):
            value = list(value)
        out[name] = value
    return out


class AttnrtError(RuntimeError):
    def __init__(self, status, name, message):
        super().__init__(f"{name}: {message}")
        self.status = status


class Runtime:
    """The C API of libattnrt through ctypes."""

    def __init__(self, path):
        self.lib = lib = ctypes.CDLL(os.path.abspath(path))
        lib.attnrt_last_error.restype = ctypes.c_char_p
        lib.attnrt_last_error.argtypes = []
        lib.attnrt_status_name.restype = ctypes.c_char_p
        lib.attnrt_status_name.argtypes = [ctypes.c_int]
        lib.attnrt_abi_version.restype = ctypes.c_int
        self.KernelInfo = KernelInfo = _abi.struct_type(lib, "attnrt_kernel_info")
        self.ForwardArgs = ForwardArgs = _abi.struct_type(lib, "attnrt_forward_args")
        lib.attnrt_module_load_files.restype = ctypes.c_int
        lib.attnrt_module_load_files.argtypes = [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.attnrt_module_unload.restype = ctypes.c_int
        lib.attnrt_module_unload.argtypes = [ctypes.c_void_p]
        lib.attnrt_module_info.restype = ctypes.c_int
        lib.attnrt_module_info.argtypes = [ctypes.c_void_p, ctypes.POINTER(KernelInfo)]
        lib.attnrt_forward.restype = ctypes.c_int
        lib.attnrt_forward.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(ForwardArgs), ctypes.c_void_p]
        lib.attnrt_check_forward_args.restype = ctypes.c_int
        lib.attnrt_check_forward_args.argtypes = [
            ctypes.POINTER(KernelInfo), ctypes.POINTER(ForwardArgs)]
        if lib.attnrt_abi_version() != ATTNRT_ABI_VERSION:
            raise RuntimeError(
                f"{path} implements ABI {lib.attnrt_abi_version()}, this script "
                f"ABI {ATTNRT_ABI_VERSION}: update gpu/check_and_bench.py")

    def error(self, status):
        name = self.lib.attnrt_status_name(status).decode()
        return AttnrtError(status, name, self.lib.attnrt_last_error().decode())

    def load(self, ptx_path, json_path):
        handle = ctypes.c_void_p()
        status = self.lib.attnrt_module_load_files(
            ptx_path.encode(), json_path.encode(), ctypes.byref(handle))
        if status != ATTNRT_OK:
            raise self.error(status)
        return Module(self, handle)


class Module:
    """A loaded kernel."""

    def __init__(self, runtime, handle):
        self.rt = runtime
        self.handle = handle
        self.info = runtime.KernelInfo()
        status = runtime.lib.attnrt_module_info(handle, ctypes.byref(self.info))
        if status != ATTNRT_OK:
            raise runtime.error(status)

    def unload(self):
        if self.handle:
            self.rt.lib.attnrt_module_unload(self.handle)
            self.handle = None

    def make_args(self, q, k, v, o, lse):
        """attnrt_forward_args for tensors with logical shape [B, N, H, D]."""
        import torch

        a = self.rt.ForwardArgs()
        a.q, a.k, a.v, a.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr()
        a.lse = lse.data_ptr() if lse is not None else None
        a.batch, a.nq, a.num_heads, a.head_dim = q.shape
        a.nk, a.num_kv_heads = k.shape[1], k.shape[2]
        for field, t in (("q_strides", q), ("k_strides", k), ("v_strides", v), ("o_strides", o)):
            setattr(a, field, (ctypes.c_int64 * 4)(*t.stride()))
        a.dtype = {torch.float16: ATTNRT_DTYPE_F16, torch.bfloat16: ATTNRT_DTYPE_BF16}.get(q.dtype, 0)
        return a

    def launch(self, args, stream):
        """attnrt_forward; raises AttnrtError on failure."""
        status = self.rt.lib.attnrt_forward(self.handle, ctypes.byref(args), ctypes.c_void_p(stream))
        if status != ATTNRT_OK:
            raise self.rt.error(status)

    def forward(self, q, k, v, o, lse):
        import torch

        self.launch(self.make_args(q, k, v, o, lse), torch.cuda.current_stream().cuda_stream)


# --------------------------------------------------------------------------------------
# Test shapes
# --------------------------------------------------------------------------------------

#: (nq, nk) pairs of the correctness sweep: 1-row, ragged tails, nq != nk both ways.
FULL_SHAPES = [(1, 1), (17, 17), (1000, 1000), (4097, 4097), (128, 4097), (1000, 333),
               (333, 1000), (64, 64), (4096, 4096)]
QUICK_SHAPES = [(1, 1), (17, 17), (1000, 333), (333, 1000), (4097, 4097)]
#: (nq, nk) pairs whose key count ends just past 1, 2 and 3 key blocks of 32, 48 or 64
#: rows: the K/V rings' prologue and last fills (sm_80 cp.async rings skip fills past
#: the last block but still commit their group) for every block width, nq != nk both
#: ways.
RING_SHAPES = [(130, 33), (33, 130), (97, 97), (200, 49), (49, 200), (65, 129), (129, 193)]
#: Extra (nq, nk) pairs for bottom-right causal kernels: decode-like (nq << nk, one row
#: sees every key), and nq > nk where whole query blocks (and, at (1000, 17), 983 of the
#: rows) see no key at all and must give O = 0, LSE = -inf.
BOTTOM_RIGHT_SHAPES = [(1, 4097), (17, 1000), (200, 201), (1000, 17), (4097, 128), (129, 1)]
QUICK_BOTTOM_RIGHT_SHAPES = [(1, 4097), (1000, 17), (129, 1)]
#: Extra (nq, nk) pairs for sliding-window kernels (either alignment): windows that end
#: before the keys start or start after they end (rows and whole query blocks that see
#: nothing, both ways: nq > nk and nq < nk), long rows over many blocks, ragged tails.
WINDOW_SHAPES = [(1, 4097), (17, 3000), (3000, 17), (2000, 3001), (3001, 2000), (4097, 128),
                 (129, 1), (1, 1)]
QUICK_WINDOW_SHAPES = [(1, 4097), (3000, 17), (2000, 3001), (129, 1)]

#: Relative Frobenius error bound of O per dtype.
REL_TOL = {"bf16": 1e-2, "f16": 3e-3}
#: LSE bound: |lse - ref| < LSE_TOL * max(1, |ref|).
LSE_TOL = 2e-2
#: Value written around O and LSE to detect stray writes (exact in f16, bf16 and f32).
SENTINEL = 1024.0
#: Elements of guard region after O and LSE.
GUARD = 4096
#: Largest score matrix (elements) of one reference chunk.
REF_CHUNK_ELEMS = 1 << 28


def read_softcap(json_path):
    """The kernel's soft cap from its metadata JSON (0.0: none)."""
    with open(json_path) as f:
        return float(json.load(f).get("softcap", 0.0))


def read_mask(json_path):
    """The kernel's mask from its metadata JSON (docs/ABI.md): a dict of causal
    (bool), bottom_right (bool: the diagonal of a causal mask or window is
    i + nk - nq), window (left, right; -1 unbounded) and softcap (0.0: none).
    attnrt_kernel_info has no room for the window or the soft cap, and reports
    the alignment of causal kernels only, so the reference reads the file."""
    with open(json_path) as f:
        meta = json.load(f)
    return {"causal": bool(meta["causal"]),
            "bottom_right": meta.get("causal_align") == "bottom_right",
            "window": (int(meta.get("window_left", -1)), int(meta.get("window_right", -1))),
            "softcap": float(meta.get("softcap", 0.0))}


def has_window(mask):
    return mask["window"][0] >= 0 or mask["window"][1] >= 0


def visible(i, j, nq, nk, causal=False, bottom_right=False, window=(-1, -1)):
    """Whether query row i sees key column j, elementwise over broadcast index arrays
    (torch or numpy): j in [0, nk), and around the row's diagonal d = i (+ nk - nq
    bottom-right), j <= d when causal, d - left <= j <= d + right for the window's
    bounded sides (flash_attn's window_size)."""
    d = i + (nk - nq if bottom_right else 0)
    left, right = window
    seen = (j >= 0) & (j < nk) & (i >= 0) & (i < nq)
    if causal:
        seen = seen & (j <= d)
    if right >= 0:
        seen = seen & (j <= d + right)
    if left >= 0:
        seen = seen & (j >= d - left)
    return seen


def visible_keys(nq, nk, causal=False, bottom_right=False, window=(-1, -1)):
    """Sum over query rows of the keys each row sees (closed form per row)."""
    off = nk - nq if bottom_right else 0
    left, right = window
    if causal:
        right = 0  # a causal row sees no key right of its diagonal
    total = 0
    for i in range(nq):
        d = i + off
        lo = max(0, d - left) if left >= 0 else 0
        hi = min(nk - 1, d + right) if right >= 0 else nk - 1
        total += max(0, hi - lo + 1)
    return total


def correctness_cases(quick, bottom_right=False, window=False, softcap=False):
    """(B, H, Hkv, nq, nk, layout, with_lse) tuples; `bottom_right` adds the shapes that
    test a bottom-right aligned causal diagonal, `window` those of a sliding window,
    `softcap` the saturated scores of a soft cap (make_saturated_qk)."""
    cases = []
    if softcap:
        cases.append((2, 3, 3, 333, 1000, "saturated", True))
        cases.append((2, 4, 2, 1000, 777, "saturated", True))
    shapes = QUICK_SHAPES if quick else FULL_SHAPES
    if bottom_right:
        shapes = shapes + (QUICK_BOTTOM_RIGHT_SHAPES if quick else BOTTOM_RIGHT_SHAPES)
    if window:
        shapes = shapes + (QUICK_WINDOW_SHAPES if quick else WINDOW_SHAPES)
    combos = [(2, 3)] if quick else [(1, 1), (1, 3), (2, 1), (2, 3)]
    for nq, nk in shapes:
        for b, h in combos:
            cases.append((b, h, h, nq, nk, "contiguous", True))
    for nq, nk in RING_SHAPES:
        cases.append((2, 3, 3, nq, nk, "contiguous", True))
    # A ring's short tail through GQA and a strided view too.
    cases.append((2, 4, 2, 200, 49, "bhnd", True))
    # Grouped-query attention.
    gqa = [(1000, 1000), (333, 1000)] if quick else [(1000, 1000), (333, 1000), (4097, 4097), (17, 17)]
    for nq, nk in gqa:
        cases.append((2, 4, 2, nq, nk, "contiguous", True))
    # Strided views: Q/K/V/O made as (B, H, N, D) and viewed as (B, N, H, D); rows padded.
    cases.append((2, 3, 3, 1000, 333, "bhnd", True))
    cases.append((2, 4, 2, 333, 1000, "padded", True))
    if not quick:
        cases.append((1, 3, 3, 4097, 4097, "bhnd", True))
        cases.append((2, 3, 3, 17, 17, "padded", True))
    # LSE = NULL once.
    cases.append((2, 3, 3, 1000, 1000, "contiguous", False))
    if bottom_right or window:
        # GQA and a strided view with rows that see no key.
        cases.append((2, 4, 2, 1000, 17, "contiguous", True))
        cases.append((2, 3, 3, 1000, 333, "bhnd", False))
    if window:
        cases.append((2, 4, 1, 3001, 2000, "padded", True))
    return cases


def bench_heads(head_dim):
    """Heads of the PEERS shapes: H * D = 2048, rounded to the nearest whole
    head when D does not divide it (d96: 21 heads, H * D = 2016; d192: 11,
    2112; TFLOPS count the heads used)."""
    return max(1, round(2048 / head_dim))


def bench_shapes(head_dim, n_list=None, gqa=False):
    """PEERS table: B*N = 16384 tokens, H*D = 2048 (bench_heads), as
    (B, H, Hkv, N); with `gqa`, also PEERS' grouped-query row at d128: 64
    query heads on 8 KV heads, N = 8k, B = 2."""
    if n_list is None:
        n_list = [1024, 4096, 8192] if head_dim == 128 else [1024, 8192]
    heads = bench_heads(head_dim)
    shapes = [(max(1, 16384 // n), heads, heads, n) for n in n_list]
    if gqa and head_dim == 128:
        shapes.append((2, 64, 8, 8192))
    return shapes


# --------------------------------------------------------------------------------------
# Tensors and reference
# --------------------------------------------------------------------------------------

def make_input(torch, shape, dtype, layout):
    """Random normal tensor of logical shape (B, N, H, D) in the given memory layout."""
    b, n, h, d = shape
    if layout == "bhnd":
        return torch.randn(b, h, n, d, dtype=dtype, device="cuda").transpose(1, 2)
    if layout == "padded":
        return torch.randn(b, n, h, d + 8, dtype=dtype, device="cuda")[..., :d]
    return torch.randn(b, n, h, d, dtype=dtype, device="cuda")


def make_saturated_qk(torch, q_shape, k_shape, dtype):
    """Q and K whose scores leave tanh's linear range: every key shares a positive
    direction, query rows 0, 3, 6, ... point against it (all their scores near -cap),
    rows 1, 4, 7, ... along it (all near +cap), the rest are 30x larger random scores.
    A softmax with a fixed max (attn-bounded-softmax) meets its extreme exponents here."""
    b, nq, h, d = q_shape
    k = torch.randn(k_shape, device="cuda") + 3.0
    q = 30.0 * torch.randn(q_shape, device="cuda")
    q[:, 0::3] = -20.0
    q[:, 1::3] = 20.0
    return q.to(dtype), k.to(dtype)


def make_output(torch, shape, dtype, layout):
    """NaN-filled O of logical shape (B, N, H, D) plus a view of every element around it
    that the kernel must not touch (filled with SENTINEL)."""
    b, n, h, d = shape
    numel = b * n * h * d
    if layout == "padded":
        full = torch.full((b, n, h, d + 8), SENTINEL, dtype=dtype, device="cuda")
        out = full[..., :d]
        out.fill_(float("nan"))
        return out, full[..., d:]
    flat = torch.full((numel + GUARD,), SENTINEL, dtype=dtype, device="cuda")
    flat[:numel].fill_(float("nan"))
    if layout == "bhnd":
        out = flat[:numel].view(b, h, n, d).transpose(1, 2)
    else:
        out = flat[:numel].view(b, n, h, d)
    return out, flat[numel:]


def make_lse(torch, b, h, n):
    """NaN-filled contiguous LSE [B, H, Nq] plus its SENTINEL guard."""
    flat = torch.full((b * h * n + GUARD,), SENTINEL, dtype=torch.float32, device="cuda")
    flat[: b * h * n].fill_(float("nan"))
    return flat[: b * h * n].view(b, h, n), flat[b * h * n:]


def reference(torch, q, k, v, scale, causal, bottom_right=False, softcap=0.0,
              window=(-1, -1)):
    """float32 attention on q's device: O (B, Nq, H, D) and LSE (B, H, Nq), natural log.
    The causal mask is top-left (row i sees columns j <= i) or, with `bottom_right`,
    FlashAttention's j <= i + Nk - Nq; `window` = (left, right) keeps the columns from
    left before to right after that diagonal (-1: unbounded side; see `visible`). A row
    that sees no column gets O = 0 and LSE = -inf. With `softcap` c > 0 the scaled
    scores become c * tanh(s / c) before the mask (LSE of the capped scores)."""
    b, nq, h, d = q.shape
    nk, hkv = k.shape[1], k.shape[2]
    group = h // hkv
    device = q.device
    out = torch.empty(b, nq, h, d, dtype=torch.float32, device=device)
    lse = torch.empty(b, h, nq, dtype=torch.float32, device=device)
    mask = None
    if causal or window[0] >= 0 or window[1] >= 0:
        rows = torch.arange(nq, device=device)[:, None]
        cols = torch.arange(nk, device=device)[None, :]
        mask = visible(rows, cols, nq, nk, causal, bottom_right, window)
    heads_per_chunk = max(1, min(h, REF_CHUNK_ELEMS // max(1, nq * nk)))
    for bi in range(b):
        for h0 in range(0, h, heads_per_chunk):
            h1 = min(h, h0 + heads_per_chunk)
            kv = torch.arange(h0, h1, device=device) // group
            qh = q[bi, :, h0:h1].float().permute(1, 0, 2)            # (hc, Nq, D)
            kh = k[bi][:, kv].float().permute(1, 0, 2)               # (hc, Nk, D)
            vh = v[bi][:, kv].float().permute(1, 0, 2)
            s = torch.matmul(qh, kh.transpose(1, 2)) * scale         # (hc, Nq, Nk)
            if softcap:
                s = softcap * torch.tanh(s / softcap)
            if mask is not None:
                s.masked_fill_(~mask, float("-inf"))
            l = torch.logsumexp(s, dim=-1)
            # Rows with every score -inf: l = -inf, p = 0 (not exp(nan)).
            p = torch.exp(s - torch.where(torch.isinf(l), 0.0, l)[..., None])
            out[bi, :, h0:h1] = torch.matmul(p, vh).permute(1, 0, 2)
            lse[bi, h0:h1] = l
            del s, p
    return out, lse


def lse_error(torch, lse, ref_lse):
    """(|lse - ref| per row, its bound): LSE_TOL * max(1, |ref|), and a -inf reference
    (a row that sees no key) must be matched exactly (bound 0, error 0 only if equal)."""
    matched_inf = (lse == ref_lse) & torch.isinf(ref_lse)
    err = torch.where(matched_inf, torch.zeros_like(lse), (lse - ref_lse).abs())
    bound = torch.where(torch.isinf(ref_lse), torch.zeros_like(ref_lse),
                        LSE_TOL * ref_lse.abs().clamp(min=1.0))
    return err, bound


def rel_error(torch, out, ref):
    ref64 = ref.double()
    denom = ref64.norm().item()
    num = (out.double() - ref64).norm().item()
    return num / denom if denom > 0 else num


# --------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------

def time_ms(torch, fn, warmup, iters):
    """Median time of `fn` in ms from per-call CUDA events. The GPU is first held busy
    with a sleep kernel so that all timed calls are queued before the first one runs:
    the events then time the GPU work alone, not the host's launch overhead."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None:
        sleep(100_000_000)  # ~50 ms of GPU clock cycles
    for i in range(iters):
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    return times[len(times) // 2]


def attention_tflops(b, h, n, d, causal, ms, visible_per_head=None):
    """TFLOPS by the FlashAttention convention, 4 * B * H * N * N * D (halved when
    causal), or with `visible_per_head` (the keys all rows of one head see) the
    visible FLOPs 4 * B * H * D * visible_per_head, as for a sliding window."""
    if visible_per_head is not None:
        flops = 4.0 * b * h * d * visible_per_head
    else:
        flops = 4.0 * b * h * n * n * d
        if causal:
            flops /= 2
    return flops / (ms * 1e-3) / 1e12


# --------------------------------------------------------------------------------------
# One kernel
# --------------------------------------------------------------------------------------

def causal_name(info):
    """How a kernel_info dict's mask reads: no, top-left or bottom-right."""
    if not info["causal"]:
        return "no"
    return "bottom-right" if info["causal_align"] == ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT else "top-left"


def log(name, text):
    print(f"[{name}] {text}", flush=True)


def run_correctness_case(torch, module, name, info, case):
    b, h, hkv, nq, nk, layout, with_lse = case
    dtype = torch.bfloat16 if info["dtype"] == ATTNRT_DTYPE_BF16 else torch.float16
    dname = "bf16" if dtype == torch.bfloat16 else "f16"
    d = info["head_dim"]
    label = f"B={b} H={h} Hkv={hkv} nq={nq} nk={nk} {layout}{'' if with_lse else ' lse=NULL'}"
    result = {"case": label, "B": b, "H": h, "Hkv": hkv, "nq": nq, "nk": nk, "layout": layout,
              "lse": with_lse, "passed": False}
    try:
        if layout == "saturated":
            q, k = make_saturated_qk(torch, (b, nq, h, d), (b, nk, hkv, d), dtype)
            layout = "contiguous"
        else:
            q = make_input(torch, (b, nq, h, d), dtype, layout)
            k = make_input(torch, (b, nk, hkv, d), dtype, layout)
        v = make_input(torch, (b, nk, hkv, d), dtype, layout)
        o, o_guard = make_output(torch, (b, nq, h, d), dtype, layout)
        lse, lse_guard = make_lse(torch, b, h, nq) if with_lse else (None, None)
        torch.cuda.synchronize()
        module.forward(q, k, v, o, lse)
        torch.cuda.synchronize()
        mask = info["mask"]
        ref_o, ref_lse = reference(torch, q, k, v, info["scale"], mask["causal"],
                                   mask["bottom_right"], mask["softcap"], mask["window"])
        rel = rel_error(torch, o, ref_o)
        nan_o = int(torch.isnan(o).sum().item())
        guard_ok = bool((o_guard == SENTINEL).all().item())
        result.update(rel=rel, nan_in_o=nan_o, o_guard_intact=guard_ok, rel_tol=REL_TOL[dname])
        # Rows that see no key (bottom-right causal with nq > nk, windows outside the
        # keys) must be exactly 0.
        empty_rows = torch.isinf(ref_lse).permute(0, 2, 1)           # (B, Nq, H)
        empty_rows_zero = bool((o[empty_rows] == 0).all().item())
        result.update(empty_rows=int(empty_rows.sum().item()), empty_rows_zero=empty_rows_zero)
        ok = (rel < REL_TOL[dname] and nan_o == 0 and guard_ok and math.isfinite(rel)
              and empty_rows_zero)
        if with_lse:
            err, bound = lse_error(torch, lse, ref_lse)
            nan_lse = int(torch.isnan(lse).sum().item())
            lse_ok = nan_lse == 0 and bool((err <= bound).all().item())
            lse_guard_ok = bool((lse_guard == SENTINEL).all().item())
            result.update(lse_max_abs_err=float(err.max().item()) if nan_lse == 0 else float("nan"),
                          nan_in_lse=nan_lse, lse_ok=lse_ok, lse_guard_intact=lse_guard_ok)
            ok = ok and lse_ok and lse_guard_ok
        result["passed"] = ok
        extra = ""
        if with_lse:
            extra = f" lse_err={result['lse_max_abs_err']:.2e}"
        problems = []
        if nan_o:
            problems.append(f"{nan_o} NaN in O (elements never written?)")
        if not guard_ok:
            problems.append("O guard overwritten (stray writes)")
        if not empty_rows_zero:
            problems.append("O is not 0 on rows that see no key")
        if with_lse and result["nan_in_lse"]:
            problems.append(f"{result['nan_in_lse']} NaN in LSE")
        if with_lse and not result["lse_guard_intact"]:
            problems.append("LSE guard overwritten")
        if with_lse and not result["lse_ok"]:
            problems.append("LSE out of tolerance")
        if rel >= REL_TOL[dname]:
            problems.append(f"rel {rel:.2e} >= {REL_TOL[dname]:.0e}")
        log(name, f"{'PASS' if ok else 'FAIL'} {label}: rel={rel:.2e}{extra}"
            + (" -- " + "; ".join(problems) if problems else ""))
        del q, k, v, o, lse, ref_o, ref_lse
    except Exception as e:  # noqa: BLE001 -- reported, the sweep goes on
        result["error"] = f"{type(e).__name__}: {e}"
        log(name, f"FAIL {label}: {result['error']}")
        # A fault kills the CUDA context: later cases of this kernel cannot run.
        result["fatal"] = is_fatal(e)
    return result


def run_child_process(cmd, timeout):
    """Runs the child check `cmd` under `timeout` seconds: None when it ran to
    its end (exit 0 or 1: passed or failed, its result file says which), else
    what went wrong (a crash or a hang, e.g. a wrong mbarrier phase)."""
    try:
        proc = subprocess.run(cmd, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout} s (kernel hang?)"
    if proc.returncode not in (0, 1):
        return f"child process exited with status {proc.returncode} (crash?)"
    return None


def is_fatal(e):
    """Whether an exception means the CUDA context is unusable (a kernel faulted)."""
    text = str(e)
    return ("CUDA error" in text or "CUDA_ERROR_ILLEGAL" in text or "CUDA_ERROR_LAUNCH_FAILED" in text
            or "CUDA_ERROR_MISALIGNED" in text or "CUDA_ERROR_LAUNCH_TIMEOUT" in text
            or "unspecified launch failure" in text)


def run_api_checks(torch, module, name, info):
    """Cheap calls that must be refused or be no-ops on a real GPU."""
    results = []
    dtype = torch.bfloat16 if info["dtype"] == ATTNRT_DTYPE_BF16 else torch.float16
    d = info["head_dim"]

    def record(label, ok, detail):
        results.append({"case": label, "passed": ok, "detail": detail})
        log(name, f"{'PASS' if ok else 'FAIL'} {label}: {detail}")

    # nq == 0 launches nothing.
    q = torch.empty(2, 0, 3, d, dtype=dtype, device="cuda")
    kv = torch.randn(2, 5, 3, d, dtype=dtype, device="cuda")
    o = torch.empty(2, 0, 3, d, dtype=dtype, device="cuda")
    try:
        module.forward(q, kv, kv, o, None)
        torch.cuda.synchronize()
        record("api: nq == 0 is a no-op", True, "ATTNRT_OK")
    except Exception as e:  # noqa: BLE001
        record("api: nq == 0 is a no-op", False, str(e))
    # Host memory is refused by the pointer check.
    qh = torch.randn(1, 4, 1, d, dtype=dtype)
    kd = torch.randn(1, 4, 1, d, dtype=dtype, device="cuda")
    od = torch.empty(1, 4, 1, d, dtype=dtype, device="cuda")
    try:
        module.forward(qh, kd, kd, od, None)
        torch.cuda.synchronize()
        record("api: host pointer refused", False, "the runtime launched on host memory")
    except AttnrtError as e:
        record("api: host pointer refused", e.status == ATTNRT_ERROR_INVALID_ARGUMENT, str(e))
    # A stride that is not a multiple of 8 is refused before launch.
    buf = torch.randn(4 * (d + 4), dtype=dtype, device="cuda")
    qs = buf.as_strided((1, 4, 1, d), (4 * (d + 4), d + 4, d + 4, 1))  # q_stride_n = D + 4
    try:
        module.forward(qs, kd, kd, od, None)
        torch.cuda.synchronize()
        record("api: stride not a multiple of 8 refused", False, "launched")
    except AttnrtError as e:
        record("api: stride not a multiple of 8 refused",
               e.status == ATTNRT_ERROR_INVALID_ARGUMENT and "multiple of 8" in str(e), str(e))
    return results


def run_bench(torch, module, name, info, args):
    import torch.nn.functional as F

    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # pragma: no cover - old torch
        SDPBackend = sdpa_kernel = None
    dtype = torch.bfloat16 if info["dtype"] == ATTNRT_DTYPE_BF16 else torch.float16
    d = info["head_dim"]
    mask = info["mask"]
    causal = mask["causal"]
    window = has_window(mask)
    scale = info["scale"]
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    n_list = [int(x) for x in args.bench_n.split(",")] if args.bench_n else None
    if window and n_list is None:
        n_list = [8192]  # issue 9's window rows: N = 8k beside the plain kernel
    for b, h, hkv, n in bench_shapes(d, n_list, args.bench_gqa):
        heads = f"H={h}" if hkv == h else f"H={h}/{hkv}"
        label = " causal" if causal else ""
        if window:
            label += " window=({},{})".format(*mask["window"])
        row = {"B": b, "H": h, "Hkv": hkv, "N": n, "D": d, "causal": causal,
               "window": list(mask["window"]), "case": f"B={b} {heads} N={n} D={d}{label}"}
        # A window counts the FLOPs of the keys its rows see (per head).
        seen = (visible_keys(n, n, causal, mask["bottom_right"], mask["window"])
                if window else None)
        row["visible_fraction"] = seen / (n * n) if window else (0.5 if causal else 1.0)
        try:
            q = torch.randn(b, n, h, d, dtype=dtype, device="cuda")
            k = torch.randn(b, n, hkv, d, dtype=dtype, device="cuda")
            v = torch.randn(b, n, hkv, d, dtype=dtype, device="cuda")
            o = torch.empty(b, n, h, d, dtype=dtype, device="cuda")
            lse = torch.empty(b, h, n, dtype=torch.float32, device="cuda")
            fargs = module.make_args(q, k, v, o, lse)
            handle = module.handle
            launch = module.rt.lib.attnrt_forward
            pargs = ctypes.byref(fargs)
            pstream = ctypes.c_void_p(stream)

            def ours():
                status = launch(handle, pargs, pstream)
                if status != ATTNRT_OK:
                    raise module.rt.error(status)

            ms = time_ms(torch, ours, args.warmup, args.iters)
            row["ours_ms"] = ms
            row["ours_tflops"] = attention_tflops(b, h, n, d, causal, ms, seen)
            # SDPA takes (B, H, N, D): transposed views of the same memory. Its flash
            # and cuDNN backends take no sliding window: no peer for window kernels
            # (the window cost table sets them beside our plain kernel instead).
            qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            peers = () if window else (("flash", "FLASH_ATTENTION"), ("cudnn", "CUDNN_ATTENTION"))
            for label, backend in peers:
                try:
                    if sdpa_kernel is None:
                        raise RuntimeError("torch.nn.attention.sdpa_kernel is unavailable")
                    be = getattr(SDPBackend, backend)

                    def sdpa():
                        with sdpa_kernel(be):
                            return F.scaled_dot_product_attention(
                                qt, kt, vt, is_causal=causal, scale=scale,
                                **({"enable_gqa": True} if hkv != h else {}))

                    ref = sdpa()
                    torch.cuda.synchronize()
                    ms_b = time_ms(torch, sdpa, args.warmup, args.iters)
                    row[f"{label}_ms"] = ms_b
                    row[f"{label}_tflops"] = attention_tflops(b, h, n, d, causal, ms_b)
                    if label == "flash" and not info.get("softcap"):
                        # Cross-check at bench size: ours vs flash, both in low precision
                        # (SDPA has no soft cap: not for soft-capped kernels).
                        ours()
                        torch.cuda.synchronize()
                        rel = rel_error(torch, o, ref.transpose(1, 2))
                        dname = "bf16" if dtype == torch.bfloat16 else "f16"
                        row["crosscheck_rel_vs_flash"] = rel
                        row["crosscheck_passed"] = (rel < 2 * REL_TOL[dname]
                                                    and not torch.isnan(o).any().item())
                    del ref
                except Exception as e:  # noqa: BLE001 -- a backend may refuse
                    row[f"{label}_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
            parts = [f"ours {row['ours_tflops']:.1f} TFLOPS ({ms:.3f} ms)"]
            for label in () if window else ("flash", "cudnn"):
                if f"{label}_tflops" in row:
                    parts.append(f"{label} {row[label + '_tflops']:.1f}")
                else:
                    parts.append(f"{label} refused ({row.get(label + '_error', '?')[:80]})")
            if window:
                parts.append(f"visible FLOPs only ({100 * row['visible_fraction']:.1f}% of N^2)")
            if "crosscheck_rel_vs_flash" in row:
                parts.append(f"rel vs flash {row['crosscheck_rel_vs_flash']:.2e}")
            log(name, "BENCH " + row["case"] + ": " + ", ".join(parts))
            del q, k, v, o, lse
        except Exception as e:  # noqa: BLE001
            row["error"] = f"{type(e).__name__}: {e}"
            log(name, f"BENCH {row['case']}: error {row['error']}")
            if is_fatal(e):
                rows.append(row)
                raise
        rows.append(row)
        torch.cuda.empty_cache()
    return rows


def run_kernel(args, name, ptx_path, json_path):
    """Everything for one kernel; returns its result dict (never raises)."""
    result = {"name": name, "ptx": ptx_path, "json": json_path, "cases": [], "api_checks": [],
              "bench": [], "error": None, "skipped": False}
    try:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False  # float32 reference in full precision
        torch.backends.cudnn.allow_tf32 = False
        torch.manual_seed(args.seed)
        torch.zeros(1, device="cuda")  # make the primary context current first
        rt = Runtime(args.lib)
        try:
            module = rt.load(ptx_path, json_path)
        except AttnrtError as e:
            if e.status == ATTNRT_ERROR_UNSUPPORTED_DEVICE:
                result["skipped"] = True
            raise
        info = struct_dict(module.info)
        # The soft cap and the window change nothing at launch, so attnrt_kernel_info
        # lacks them: the reference takes the mask from the metadata file.
        info["mask"] = read_mask(json_path)
        info["softcap"] = info["mask"]["softcap"]
        result["info"] = info
        window = "({},{})".format(*info["mask"]["window"]) if has_window(info["mask"]) else "none"
        log(name, f"loaded: {info['arch']} {'bf16' if info['dtype'] == ATTNRT_DTYPE_BF16 else 'f16'} "
                  f"d={info['head_dim']} causal={causal_name(info)} "
                  f"window={window} "
                  f"align={'bottom-right' if info['mask']['bottom_right'] else 'top-left'} "
                  f"softcap={info['softcap']} block_m={info['block_m']} "
                  f"threads={info['num_threads']} smem={info['smem_bytes']} tma={info['uses_tma']} "
                  f"regs={info['num_regs']} local(spill)={info['local_bytes']}B "
                  f"on device {info['device']} (cc {info['cc_major']}.{info['cc_minor']})")
        expected_scale = 1.0 / math.sqrt(info["head_dim"])
        if abs(info["scale"] - expected_scale) > 1e-6 * expected_scale:
            log(name, f"note: metadata scale {info['scale']} != 1/sqrt(D) = {expected_scale}; "
                      "the reference uses the metadata's")
        try:
            bottom_right = info["mask"]["bottom_right"]
            for case in correctness_cases(args.quick, bottom_right, has_window(info["mask"]),
                                          info["mask"]["softcap"] > 0):
                case_result = run_correctness_case(torch, module, name, info, case)
                result["cases"].append(case_result)
                if case_result.get("fatal"):
                    cause = case_result["error"].splitlines()[0]
                    raise FatalCudaError(f"stopped at {case_result['case']}: {cause}")
                torch.cuda.empty_cache()
            result["api_checks"] = run_api_checks(torch, module, name, info)
            if not args.no_bench:
                result["bench"] = run_bench(torch, module, name, info, args)
        finally:
            module.unload()
    except Exception as e:  # noqa: BLE001 -- reported, other kernels go on
        result["error"] = f"{type(e).__name__}: {e}"
        log(name, ("SKIP" if result["skipped"] else "ERROR") + f": {result['error']}")
        if not isinstance(e, (AttnrtError, FatalCudaError)):
            traceback.print_exc()
    return result


# --------------------------------------------------------------------------------------
# Driver: one child process per kernel
# --------------------------------------------------------------------------------------

def find_kernels(directory):
    pairs = []
    for json_path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        stem = json_path[: -len(".json")]
        if os.path.exists(stem + ".ptx"):
            pairs.append((os.path.basename(stem), stem + ".ptx", json_path))
    return pairs


def run_child(args, name):
    """Runs this script for one kernel in a fresh process; returns its result."""
    fd, out_path = tempfile.mkstemp(prefix=f"attn-{name}-", suffix=".json")
    os.close(fd)
    cmd = [sys.executable, os.path.abspath(__file__), "--lib", args.lib, "--kernels", args.kernels,
           "--only", name, "--child-json", out_path, "--seed", str(args.seed),
           "--warmup", str(args.warmup), "--iters", str(args.iters)]
    if args.quick:
        cmd.append("--quick")
    if args.no_bench:
        cmd.append("--no-bench")
    if args.bench_n:
        cmd += ["--bench-n", args.bench_n]
    if args.bench_gqa:
        cmd.append("--bench-gqa")
    error = run_child_process(cmd, args.timeout)
    try:
        with open(out_path) as f:
            result = json.load(f)
        if error:
            result["error"] = result.get("error") or error
    except (OSError, ValueError):
        result = {"name": name, "cases": [], "api_checks": [], "bench": [], "skipped": False,
                  "error": error or "child process wrote no result"}
        print(f"[{name}] ERROR: {result['error']}", flush=True)
    finally:
        try:
            os.unlink(out_path)
        except OSError:
            pass
    return result


def measure_gemm(args):
    """bf16 GEMM 8192^3 through torch.matmul: the practical compute ceiling."""
    try:
        import torch

        a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
        b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
        ms = time_ms(torch, lambda: torch.matmul(a, b), args.warmup, args.iters)
        tflops = 2.0 * 8192 ** 3 / (ms * 1e-3) / 1e12
        print(f"[gemm] bf16 8192^3: {tflops:.1f} TFLOPS ({ms:.3f} ms)", flush=True)
        return {"ms": ms, "tflops": tflops}
    except Exception as e:  # noqa: BLE001
        print(f"[gemm] error: {e}", flush=True)
        return {"error": str(e)}


def kernel_passed(r):
    if r.get("skipped"):
        return True
    if r.get("error"):
        return False
    checks = r.get("cases", []) + r.get("api_checks", [])
    bench_ok = all(b.get("crosscheck_passed", True) for b in r.get("bench", []))
    return bool(checks) and all(c.get("passed") for c in checks) and bench_ok


def fmt(x, spec=".1f"):
    if isinstance(x, (int, float)) and math.isinf(x):
        return "nan/inf"
    return format(x, spec) if isinstance(x, (int, float)) and math.isfinite(x) else "-"


def print_tables(results, gemm):
    print("\n=== Benchmark (TFLOPS; causal counts half the FLOPs) ===")
    if gemm and "tflops" in gemm:
        print(f"bf16 GEMM 8192^3 ceiling: {gemm['tflops']:.1f} TFLOPS")
    header = ["kernel", "case", "ours", "flash", "cudnn", "ours/flash", "ours/cudnn"]
    rows = []
    for r in results:
        for b in r.get("bench", []):
            ours, fl, cu = b.get("ours_tflops"), b.get("flash_tflops"), b.get("cudnn_tflops")
            rows.append([r["name"], b["case"], fmt(ours), fmt(fl), fmt(cu),
                         fmt(ours / fl, ".2f") if ours and fl else "-",
                         fmt(ours / cu, ".2f") if ours and cu else "-"])
    print_table(header, rows)
    print_window_costs(results)
    print_exp2_emulation(results)
    print("\n=== Correctness ===")
    header = ["kernel", "passed", "failed", "worst rel", "worst lse err", "status"]
    rows = []
    for r in results:
        checks = r.get("cases", []) + r.get("api_checks", [])
        passed = sum(1 for c in checks if c.get("passed"))
        # NaN compares false with everything: rank it above any number.
        rels = [c["rel"] if math.isfinite(c["rel"]) else math.inf
                for c in r.get("cases", []) if isinstance(c.get("rel"), float)]
        lses = [c["lse_max_abs_err"] for c in r.get("cases", [])
                if isinstance(c.get("lse_max_abs_err"), float)]
        bench_bad = sum(1 for b in r.get("bench", []) if not b.get("crosscheck_passed", True))
        status = "skipped" if r.get("skipped") else ("ok" if kernel_passed(r) else "FAILED")
        if r.get("error"):
            status += ": " + r["error"][:100]
        elif bench_bad:
            status += f" ({bench_bad} bench cross-checks off)"
        rows.append([r["name"], str(passed), str(len(checks) - passed),
                     fmt(max(rels), ".2e") if rels else "-",
                     fmt(max(lses), ".2e") if lses else "-", status])
    print_table(header, rows)


#: The sliding-window part of a kernel name: _window_l<L>_r<R> (each side optional), and
#: _br when bottom-right aligned.
WINDOW_NAME = re.compile(r"_window(_l\d+)?(_r\d+)?(_br)?")


def window_costs(results):
    """Rows (kernel, case, window TFLOPS, plain TFLOPS, ratio) pairing each window
    kernel's bench rows with the plain kernel of the same name less the window
    (same target, dtype, head dim, schedule) at the same (B, H, N): issue 9's bar is
    ratio >= 0.9 (a window costs at most 10% per visible FLOP)."""
    plain = {}
    for r in results:
        kernel = r.get("info", {}).get("kernel", "")
        if kernel and not WINDOW_NAME.search(kernel):
            for b in r.get("bench", []):
                plain[(kernel, b["B"], b["H"], b["N"])] = b.get("ours_tflops")
    rows = []
    for r in results:
        kernel = r.get("info", {}).get("kernel", "")
        if not WINDOW_NAME.search(kernel):
            continue
        base = WINDOW_NAME.sub("", kernel)
        for b in r.get("bench", []):
            ours, ref = b.get("ours_tflops"), plain.get((base, b["B"], b["H"], b["N"]))
            rows.append([r["name"], b["case"], ours, base, ref,
                         ours / ref if ours and ref else None])
    return rows


def print_window_costs(results):
    rows = window_costs(results)
    if not rows:
        return
    print("\n=== Window cost (visible FLOPs; bar: window/plain >= 0.9) ===")
    header = ["kernel", "case", "window", "plain kernel", "plain", "window/plain", "bar"]
    print_table(header, [[k, c, fmt(w), p, fmt(pl) if pl else "(not in this run)",
                          fmt(x, ".2f") if x else "-",
                          ("met" if x >= 0.9 else "MISSED") if x else "-"]
                         for k, c, w, p, pl, x in rows])


#: The exp2-emulation part of a kernel name: _exp2emu<k>o8 (k eighths of the score
#: exponentials on the FMA pipe, --exp2-emulate).
EXP2EMU_NAME = re.compile(r"_exp2emu(\d+)o8")
#: The soft-cap part of a kernel name: _softcap<c> ('.' spelled 'p').
SOFTCAP_NAME = re.compile(r"_softcap[0-9pm]+")


def exp2_emulation_costs(results):
    """Rows (kernel, case, eighths, TFLOPS, base kernel, base TFLOPS, ratio, cuDNN)
    pairing each _exp2emu<k>o8 kernel's bench rows with the kernel of the same name
    less the suffix (the MUFU-only kernel) at the same (B, H, N): the gain (or loss)
    of moving k/8 of the exponentials to the FMA pipe, measured in one run."""
    base_tflops = {}
    for r in results:
        kernel = r.get("info", {}).get("kernel", "")
        if kernel and not EXP2EMU_NAME.search(kernel):
            for b in r.get("bench", []):
                base_tflops[(kernel, b["B"], b["H"], b["N"])] = b.get("ours_tflops")
    rows = []
    for r in results:
        kernel = r.get("info", {}).get("kernel", "")
        match = EXP2EMU_NAME.search(kernel)
        if not match:
            continue
        base = EXP2EMU_NAME.sub("", kernel)
        for b in r.get("bench", []):
            ours, ref = b.get("ours_tflops"), base_tflops.get((base, b["B"], b["H"], b["N"]))
            # A soft-capped kernel also against the plain kernel (no cap, no
            # emulation): the soft cap's bar is >= 0.9x of it.
            plain = (base_tflops.get((SOFTCAP_NAME.sub("", base), b["B"], b["H"], b["N"]))
                     if SOFTCAP_NAME.search(base) else None)
            rows.append([r["name"], b["case"], int(match.group(1)), ours, base, ref,
                         ours / ref if ours and ref else None, b.get("cudnn_tflops"),
                         ours / plain if ours and plain else None])
    return rows


def print_exp2_emulation(results):
    rows = exp2_emulation_costs(results)
    if not rows:
        return
    print("\n=== exp2 emulation (k/8 of the score exponentials on the FMA pipe) ===")
    header = ["kernel", "case", "emulated", "TFLOPS", "MUFU-only kernel", "MUFU-only",
              "emulated/MUFU-only", "cudnn", "emulated/cudnn", "softcap/plain (bar 0.9)"]
    print_table(header, [[k, c, f"{e}/8", fmt(t), base, fmt(ref) if ref else "(not in this run)",
                          fmt(x, ".3f") if x else "-", fmt(cu),
                          fmt(t / cu, ".2f") if t and cu else "-",
                          (fmt(p, ".2f") + (" met" if p >= 0.9 else " MISSED")) if p else "-"]
                         for k, c, e, t, base, ref, x, cu, p in rows])


def print_table(header, rows):
    if not rows:
        print("(none)")
        return
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = " | ".join(h.ljust(w) for h, w in zip(header, widths))
    print(line)
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(str(x).ljust(w) for x, w in zip(row, widths)))


def environment():
    env = {"python": platform.python_version(), "host": platform.node()}
    try:
        import torch

        env["torch"] = torch.__version__
        env["cuda"] = torch.version.cuda
        env["cudnn"] = torch.backends.cudnn.version()
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            env["device"] = p.name
            env["capability"] = f"{p.major}.{p.minor}"
            env["sms"] = p.multi_processor_count
    except Exception as e:  # noqa: BLE001
        env["torch_error"] = str(e)
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", required=True, help="path of libattnrt.so")
    parser.add_argument("--kernels", required=True, help="directory of NAME.ptx + NAME.json pairs")
    parser.add_argument("--json", help="write all results to this JSON file")
    parser.add_argument("--quick", action="store_true", help="fewer correctness shapes")
    parser.add_argument("--no-bench", action="store_true", help="skip the benchmark")
    parser.add_argument("--bench-n", help="comma-separated sequence lengths to benchmark "
                                          "(default: PEERS table)")
    parser.add_argument("--bench-gqa", action="store_true",
                        help="also time d128 kernels on 64 query heads over 8 KV heads (N = 8k)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls before timing")
    parser.add_argument("--iters", type=int, default=30, help="timed calls (median reported)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=int, default=300, help="seconds per kernel (child)")
    parser.add_argument("--inprocess", action="store_true",
                        help="run every kernel in this process (a faulting kernel stops the rest)")
    parser.add_argument("--only", help=argparse.SUPPRESS)
    parser.add_argument("--child-json", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if not os.path.exists(args.lib):
        print(f"error: --lib {args.lib} does not exist", file=sys.stderr)
        return 2
    kernels = find_kernels(args.kernels)
    if args.only:
        kernels = [k for k in kernels if k[0] == args.only]
    if not kernels:
        print(f"error: no NAME.ptx + NAME.json pairs in {args.kernels}", file=sys.stderr)
        return 2

    if args.child_json:  # child: one kernel
        result = run_kernel(args, *kernels[0])
        with open(args.child_json, "w") as f:
            json.dump(result, f, indent=1, default=str)
        return 0 if kernel_passed(result) else 1

    started = time.time()
    print(f"attngen check_and_bench: {len(kernels)} kernel(s) in {args.kernels}, lib {args.lib}",
          flush=True)
    results = []
    for name, ptx, js in kernels:
        if args.inprocess:
            results.append(run_kernel(args, name, ptx, js))
        else:
            results.append(run_child(args, name))
    gemm = measure_gemm(args) if not args.no_bench else None
    env = environment()
    print_tables(results, gemm)
    ok = all(kernel_passed(r) for r in results)
    summary = {"passed": ok, "environment": env, "gemm_bf16_8192": gemm, "kernels": results,
               "quick": args.quick, "seconds": time.time() - started,
               "tolerances": {"rel": REL_TOL, "lse": LSE_TOL}}
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1, default=str)
        print(f"\nresults written to {args.json}")
    print(f"\n{'ALL PASSED' if ok else 'SOME CHECKS FAILED'} in {time.time() - started:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
