#!/usr/bin/env python3
"""attngen.quantize_fp8 (bf16/f16 q, k, v to e4m3 with descales, optionally
Hadamard-rotated) on sm_90a on a GPU: its outputs against a float64
reference, FP8 attention on them, FlashAttention-3's accuracy table with
block quantization and incoherent processing, and the kernel's bandwidth.

    ATTNGEN_LIBRARY=.../libattngen.so PYTHONPATH=python:gpu \\
        python3 gpu/quantize_check.py [--json OUT.json] [--cases N] [--first I] [--seed S] \\
                                      [--no-bench] [--sanitize]
    python3 gpu/quantize_check.py --self-test      # the reference and the verdicts, CPU

* Correctness: random ragged cases (N rarely a multiple of 16 or 128, Nq !=
  Nk, B 1-3, Hkv 1-4 with 1-4 query heads each, d64/128/256, bf16 and f16,
  every granularity with and without the Hadamard transform (three seeds),
  magnitudes that vary by head and by 64 rows (q's a quarter), outliers, some heads or whole
  tensors of zeros; inputs contiguous, (B, H, N, D)-transposed, a slice along
  N or of a wider head dim (the storage around them NaN) or with the head dim
  not innermost). The outputs go into blocks filled with e4m3 NaN first. The
  reference is float64: y = x, or x rotated by the explicit matrix diag(s) H /
  sqrt(D) (H Sylvester's, s the splitmix64 signs of the seed); descale =
  amax(|y|) / 448 over the granularity's scope (tensor: all; head: a batch's
  kv head, q's over the query heads that share it; block: 128 rows of one
  head), 1 where a tensor's or head's values are all 0 (a block's: 0). Pass:
  the descales' shapes and values (rel 1e-5; 1e-3 with the rotation, which
  sums in another order), every element |x8 * descale - y| <= 0.07 |y| +
  descale * 2^-9 (half an e4m3 step, and a subnormal step; rotated, plus the
  float32 rotation's rounding, 2^-23 log2(D) |x_row|_1 / sqrt(D)), exactly 0
  where y is, no NaN, q and k contiguous, v K-major (a view of [B, Hkv, D,
  round_up(Nk, 16)], N stride 1) with its padding keys 0.
  Then attngen.attention(x.q, x.k, x.v, **x.descales) (causal in a quarter of
  the cases), no NaN, and max |O - ref| <= 2 x that of fp8_check's emulation
  of the FP8 math + 1e-3 for two references: float64 attention on the
  dequantized (rotated) tensors, the emulation on them too (the kernel's
  arithmetic and descales), and float64 attention on the original inputs,
  the emulation on the reference's quantization of them (the rotation must
  keep q k^T). A refusal (block descales, say) is a failed row with its error.
* sm_80: under ATTNGEN_ARCH=sm_80 quantize_fp8 raises an error naming sm_90a
  or FP8.
* Accuracy (FA3 paper, Table 3: B 2, H 16, N 2048, d128, non-causal; N(0, 1)
  with 0.1% outliers N(0, 10), and plain N(0, 1)): RMSE of attention on
  quantize_fp8's outputs against float64 on the bf16 inputs, per tensor, per
  head and per block, each with and without the Hadamard transform, beside
  attngen bf16 and each row's emulation (an FP8 row must stay within 2x its
  emulation's). The bar: block + Hadamard below FA3's 9.1e-3 on the outliers.
* Bandwidth (skipped by --no-bench): the one-launch block kernel (row-major,
  with and without the rotation; K-major, v's), the two-launch per-tensor path
  and quantize_fp8 on q, k, v, on large bf16 tensors, against HBM's nominal
  4.8 TB/s and a torch copy of the same bytes. The bar: the rotated block
  kernel at >= 70% of HBM.

--sanitize runs five fixed cases only (compute-sanitizer's run,
gpu/quantize.sh). Exit status 0 when every check passed (the two bars are
reported, not judged).
"""

import argparse
import collections
import functools
import math
import os
import random
import re
import subprocess
import sys

import torch
import torch.nn.functional as F

import fp8_check
import harness

attngen = None
DEVICE = "cuda"
FP8 = torch.float8_e4m3fn

E4M3_MAX = 448.0
#: e4m3fn's NaN byte: what the output blocks hold before the kernel writes them.
E4M3_NAN_BYTE = 0x7F
BLOCK_ROWS = 128
#: A K-major v's keys are padded to a multiple of this (16 bytes, for TMA).
ROW_ALIGN = 16
DEFAULT_SEED = 0x5EED
#: The Hadamard seeds drawn: the default, a small one, one past 2^62 (each is
#: a kernel of its own, per head dim and dtype).
SEEDS = (DEFAULT_SEED, DEFAULT_SEED, DEFAULT_SEED, 1, 2 ** 62 + 12345)
GRANULARITIES = ("tensor", "head", "block")
#: (granularity, hadamard): the cases cycle through them.
COMBOS = tuple((g, h) for h in (False, True) for g in GRANULARITIES)
#: Per element: |x8 * descale - y| <= REL_BOUND * |y| + descale * SUBNORMAL_STEP.
#: e4m3 rounds to 3 mantissa bits (half a step: 2^-4 relative); its subnormal step
#: is 2^-9.
REL_BOUND = 0.07
SUBNORMAL_STEP = 2.0 ** -9
#: With the rotation, the kernel's float32 butterflies may be off the float64 y by up to
#: log2(D) roundings of partial sums bounded by the row's L1 norm, over sqrt(D): that
#: much more absolute slack, ROTATION_EPS * log2(D) * |x_row|_1 / sqrt(D).
ROTATION_EPS = 2.0 ** -23
#: The descales' relative tolerance without and with the rotation.
DESCALE_TOL = {False: 1e-5, True: 1e-3}
#: End to end: max |O - ref| <= 2 x the emulation's + E2E_SLACK.
E2E_SLACK = fp8_check.ABS_SLACK
LENGTHS = (1, 17, 129, 300, 1000, 2049)
#: Input layouts: "bhnd" a [B, H, N, D] tensor viewed back; "nslice" rows 3..3+N of a
#: taller tensor; "padded" the first D of D + 8 columns; "dlast" a [B, N, D, H] tensor
#: viewed back (head dim not innermost: the package copies it). Storage outside the
#: view is NaN.
LAYOUTS = ("contiguous", "contiguous", "bhnd", "nslice", "padded", "dlast")
#: Zeros: none, or a kv head (and q's heads of it) of batch 0; case 3 has all zeros.
ZEROS = ("none",) * 4 + ("head",)
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}

#: Accuracy table rows: (name, granularity or None for attngen bf16, hadamard).
ACCURACY_ROWS = (("attngen bf16", None, False),
                 ("FP8 per-tensor", "tensor", False), ("FP8 per-head", "head", False),
                 ("FP8 block", "block", False),
                 ("FP8 per-tensor + Hadamard", "tensor", True),
                 ("FP8 per-head + Hadamard", "head", True),
                 ("FP8 block + Hadamard", "block", True))
#: FA3 paper, Table 3 (its 16-bit row is FP16).
PAPER_RMSE = {"attngen bf16": 1.9e-4, "FP8 per-tensor": 2.4e-2, "FP8 block + Hadamard": 9.1e-3}
ACCURACY_BAR = ("FP8 block + Hadamard", "outliers", 9.1e-3)

#: Bandwidth: bf16 tensors [B, N, H, D] (B*N*H*D = 128M or 64M elements).
BENCH_SHAPES = ((4, 8192, 32, 128), (2, 8192, 16, 256), (8, 8192, 16, 64))
#: The H200's nominal HBM3e bandwidth, GB/s.
HBM_GBPS = 4800.0
BANDWIDTH_BAR = 0.70

# --------------------------------------------------------------------------------------
# The reference: signs, rotation, descales
# --------------------------------------------------------------------------------------

_U64 = (1 << 64) - 1


def mix(x):
    """splitmix64's finalizer, mod 2^64."""
    x = (x + 0x9E3779B97F4A7C15) & _U64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _U64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _U64
    return x ^ (x >> 31)


def sign_negative(seed, column):
    """Whether column `column` of the rotation's diag(s) is -1."""
    return bool(mix((seed * 0x100000001B3 + column) & _U64) & 1)


def sign_words(head_dim, seed):
    """The signs as the kernel holds them: one 32-bit word per 32 columns, bit c % 32
    of word c // 32 set where column c is negative (for the self-test)."""
    return [sum(sign_negative(seed, c) << (c % 32) for c in range(w, w + 32))
            for w in range(0, head_dim, 32)]


@functools.lru_cache(maxsize=None)
def _rotation_cpu(head_dim, seed):
    idx = torch.arange(head_dim)
    both = idx[:, None] & idx[None, :]
    parity = torch.zeros_like(both)
    for bit in range(head_dim.bit_length()):
        parity ^= (both >> bit) & 1
    sylvester = (1 - 2 * parity).double()               # H[i][j] = (-1)^popcount(i & j)
    signs = torch.tensor([-1.0 if sign_negative(seed, j) else 1.0 for j in range(head_dim)],
                         dtype=torch.float64)
    return signs[:, None] * sylvester / math.sqrt(head_dim)


def rotation(head_dim, seed, device):
    """A (D, D) float64, y = x @ A for rows x: y = H diag(s) x / sqrt(D) with H
    symmetric, so A = diag(s) H / sqrt(D)."""
    return _rotation_cpu(head_dim, seed).to(device)


def rotated(x, hadamard, seed):
    """x [B, N, H, D] in float64, rotated along the head dim when asked."""
    y = x.double()
    return y @ rotation(x.shape[-1], seed, x.device) if hadamard else y


def descale_shape(granularity, b, n, h, groups):
    return {"tensor": (1,), "head": (b, h // groups),
            "block": (b, h, -(-n // BLOCK_ROWS))}[granularity]


def reference_descale(y, granularity, groups):
    """amax(|y|) / 448 over each scope (float64): (1,), (B, H / groups) or (B, H,
    blocks); 1 where the scope holds only zeros."""
    b, n, h, d = y.shape
    a = y.abs()
    if granularity == "tensor":
        m = a.amax().reshape(1)
    elif granularity == "head":
        m = a.reshape(b, n, h // groups, groups, d).amax(dim=(1, 3, 4))
    else:
        blocks = -(-n // BLOCK_ROWS)
        a = F.pad(a, (0, 0, 0, 0, 0, blocks * BLOCK_ROWS - n))
        m = a.reshape(b, blocks, BLOCK_ROWS, h, d).amax(dim=(2, 4)).transpose(1, 2)
    descale = m / E4M3_MAX
    return torch.where(descale > 0, descale, torch.ones_like(descale))


def expand_descale(descale, granularity, shape, groups):
    """Each row's descale, [B, N, H, 1] float64."""
    b, n, h, _ = shape
    d = descale.double()
    if granularity == "tensor":
        return d.reshape(1, 1, 1, 1).expand(b, n, h, 1)
    if granularity == "head":
        return d.repeat_interleave(groups, dim=1)[:, None, :, None].expand(b, n, h, 1)
    return d.repeat_interleave(BLOCK_ROWS, dim=2)[:, :, :n].transpose(1, 2)[..., None]


def to_e4m3(x):
    return x.clamp(-E4M3_MAX, E4M3_MAX).to(FP8)


def emulate_quantize(x, granularity, groups, hadamard, seed, key_major):
    """What the kernel should return, in PyTorch (the self-test's stand-in):
    (x8, float32 descale); x8 K-major (zero padding) when asked."""
    y = rotated(x, hadamard, seed)
    descale = reference_descale(y, granularity, groups).float()
    ds = expand_descale(descale, granularity, y.shape, groups)
    x8 = to_e4m3(torch.where(ds > 0, y / ds.clamp(min=1e-300), torch.zeros_like(y))).contiguous()
    if key_major:
        b, n, h, d = x8.shape
        stored = torch.zeros((b, h, d, -(-n // ROW_ALIGN) * ROW_ALIGN), dtype=torch.uint8,
                             device=x.device)
        stored[..., :n] = x8.view(torch.uint8).permute(0, 2, 3, 1)
        x8 = stored.view(FP8)[..., :n].permute(0, 3, 1, 2)
    return x8, descale


# --------------------------------------------------------------------------------------
# The verdict on one quantized tensor
# --------------------------------------------------------------------------------------


def check_tensor(name, x8, descale, x, granularity, groups, hadamard, seed, key_major):
    """(problems, figures) of one output of quantize_fp8 for the input x:
    problems a list of strings (empty: passed), figures its worst ratios."""
    b, n, h, d = x.shape
    problems, fig = [], {}
    if not isinstance(x8, torch.Tensor) or x8.dtype != FP8 or tuple(x8.shape) != (b, n, h, d):
        return [f"{name}: got {getattr(x8, 'dtype', type(x8))} "
                f"{tuple(getattr(x8, 'shape', ()))}, want float8_e4m3fn {(b, n, h, d)}"], fig
    want = descale_shape(granularity, b, n, h, groups)
    if (not isinstance(descale, torch.Tensor) or descale.dtype != torch.float32
            or tuple(descale.shape) != want):
        return [f"{name}_descale: got {getattr(descale, 'dtype', type(descale))} "
                f"{tuple(getattr(descale, 'shape', ()))}, want float32 {want}"], fig
    if key_major:
        padded = -(-n // ROW_ALIGN) * ROW_ALIGN
        s = tuple(x8.stride())
        strides = (h * d * padded, 1, d * padded, padded)
        if s != strides or x8.data_ptr() % ROW_ALIGN:
            problems.append(f"{name}: strides {s}, address % 16 = {x8.data_ptr() % 16}; want "
                            f"K-major {strides} of [B, Hkv, D, {padded}], 16-byte aligned")
        else:
            pad = x8.as_strided((b, h, d, padded), (s[0], s[2], s[3], 1))[..., n:]
            nonzero = int(((pad.view(torch.uint8) & 0x7F) != 0).sum().item())
            if nonzero:
                problems.append(f"{name}: {nonzero} padding bytes (keys {n}..{padded - 1}) "
                                "not 0")
    elif not x8.is_contiguous():
        problems.append(f"{name}: strides {tuple(x8.stride())}, want contiguous")
    y = rotated(x, hadamard, seed)
    got = x8.float().double()
    nan = int(torch.isnan(got).sum().item())
    if nan:
        problems.append(f"{name}: {nan} NaN")
    ref = reference_descale(y, granularity, groups)
    dd = descale.double()
    diff = (dd - ref).abs()
    bad = ~(diff <= DESCALE_TOL[hadamard] * ref)          # NaN counts as bad
    fig["descale_rel"] = (diff / ref.clamp(min=1e-300)).max().item() if diff.numel() else 0.0
    if bad.any():
        i = tuple(int(v) for v in bad.nonzero()[0])
        problems.append(f"{name}_descale: {int(bad.sum().item())} of {bad.numel()} off, "
                        f"e.g. {i}: {dd[i].item():.6g} vs {ref[i].item():.6g}")
    ds = expand_descale(descale, granularity, x.shape, groups)
    err = (got * ds - y).abs()
    bound = REL_BOUND * y.abs() + ds * SUBNORMAL_STEP
    if hadamard:
        bound = bound + (ROTATION_EPS * math.log2(d) / math.sqrt(d)) * x.double().abs().sum(
            dim=-1, keepdim=True)
    over = ~(err <= bound)
    ratio = err / bound                                   # 0/0 (a zero block): NaN
    ratio[(bound == 0) & (err == 0)] = 0.0
    fig["element_ratio"] = ratio.nan_to_num(math.inf).max().item() if ratio.numel() else 0.0
    if over.any():
        i = tuple(int(v) for v in over.nonzero()[0])
        problems.append(f"{name}: {int(over.sum().item())} of {over.numel()} elements off, e.g. "
                        f"{i}: {got[i].item():.6g} * {ds[i[:3]].item():.6g} vs {y[i].item():.6g}")
    zeros = int(((y == 0) & (got != 0)).sum().item())
    if zeros:
        problems.append(f"{name}: {zeros} elements not 0 where the input is")
    return problems, fig


def check_quantized(x, q, k, v, granularity, hadamard, seed):
    """(problems, figures) of a quantize_fp8 result for q, k, v."""
    groups = q.shape[2] // k.shape[2]
    if not hasattr(x, "descales"):
        return [f"quantize_fp8 returned {type(x).__name__}, not a QuantizedFp8"], {}
    problems, figures = [], {}
    for name, x8, d, t, g, rot, km in (
            ("q", x.q, x.q_descale, q, groups, hadamard, False),
            ("k", x.k, x.k_descale, k, 1, hadamard, False),
            ("v", x.v, x.v_descale, v, 1, False, True)):
        p, fig = check_tensor(name, x8, d, t, granularity, g, rot, seed,
                              km)
        problems += p
        figures.update({f"{name}_{key}": val for key, val in fig.items()})
    given = x.descales
    if (sorted(given) != ["k_descale", "q_descale", "v_descale"]
            or any(given[key] is not getattr(x, key) for key in given)):
        problems.append(f"descales is {sorted(given)}, not the three descales")
    return problems, figures


# --------------------------------------------------------------------------------------
# Inputs, poisoned output blocks
# --------------------------------------------------------------------------------------


def values(b, n, h, d, outliers, magnitude=1.0):
    """Float32 N(0, 1) times 2^U(-0.75, 0.75) per batch and head and 2^U(-1, 1)
    per 64 rows (blocks and heads get scales of their own), a fraction
    `outliers` of the entries N(0, 10) instead, all times `magnitude`."""
    x = torch.randn(b, n, h, d, device=DEVICE)
    per_head = 2.0 ** torch.empty(b, 1, h, 1, device=DEVICE).uniform_(-0.75, 0.75)
    chunks = -(-n // 64)
    per_rows = 2.0 ** torch.empty(b, chunks, 1, 1, device=DEVICE).uniform_(-1.0, 1.0)
    x = x * per_head * per_rows.repeat_interleave(64, dim=1)[:, :n]
    if outliers:
        x = torch.where(torch.rand_like(x) < outliers, 10.0 * torch.randn_like(x), x)
    return x * magnitude


def placed(t, layout):
    """t [B, N, H, D] in `layout` (LAYOUTS), the storage outside the view NaN."""
    b, n, h, d = t.shape
    if layout == "contiguous":
        return t.contiguous()
    if layout == "bhnd":
        return t.transpose(1, 2).contiguous().transpose(1, 2)
    if layout == "dlast":
        return t.transpose(2, 3).contiguous().transpose(2, 3)
    if layout == "nslice":
        s = torch.full((b, n + 8, h, d), math.nan, dtype=t.dtype, device=t.device)
        s[:, 3:3 + n] = t
        return s[:, 3:3 + n]
    if layout == "padded":
        s = torch.full((b, n, h, d + 8), math.nan, dtype=t.dtype, device=t.device)
        s[..., :d] = t
        return s[..., :d]
    raise ValueError(f"unknown layout {layout!r}")


def case_inputs(c):
    """q, k, v of a case (its torch seed set first)."""
    torch.manual_seed(c["torch_seed"])
    b, nq, nk, h, hkv, d = (c[key] for key in ("b", "nq", "nk", "h", "hkv", "d"))
    dtype = DTYPES[c["dtype"]]
    # q smaller: the scores' spread stays a few units, so that attention is not an
    # argmax that the quantization's rounding flips (the end-to-end check would
    # then measure little).
    q, k, v = (values(b, n, heads, d, c["outliers"], magnitude)
               for n, heads, magnitude in ((nq, h, 0.25), (nk, hkv, 1.0), (nk, hkv, 1.0)))
    if c["zeros"] == "head":
        q[0, :, :h // hkv] = 0
        k[0, :, 0] = 0
        v[0, :, 0] = 0
    elif c["zeros"] == "all":
        for t in (q, k, v):
            t.zero_()
    return tuple(placed(t.to(dtype), layout) for t, layout in zip((q, k, v), c["layouts"]))


def output_bytes(q, k):
    """The bytes of the e4m3 q, k and (K-major, padded) v quantize_fp8 allocates."""
    b, nk, hkv, d = k.shape
    return [q.numel(), k.numel(), b * hkv * d * (-(-nk // ROW_ALIGN) * ROW_ALIGN)]


def poison_blocks(sizes):
    """Blocks of these byte sizes filled with e4m3 NaN, then freed: the caching
    allocator hands them to the next allocations of those sizes, so an element
    the kernel never writes reads NaN. Returns their (start, end) ranges."""
    baits = [torch.full((max(1, s),), E4M3_NAN_BYTE, dtype=torch.uint8, device=DEVICE)
             for s in sizes]
    ranges = [(t.data_ptr(), t.data_ptr() + t.numel()) for t in baits]
    torch.cuda.synchronize()
    del baits
    return ranges


def in_poisoned(tensors, ranges):
    """Whether each tensor's bytes lie in the poisoned blocks (adjacent ones merge
    when freed, so in their union)."""
    merged = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    for t in tensors:
        lo = t.data_ptr()
        hi = lo + t.untyped_storage().nbytes()
        if not any(a <= lo and hi <= z for a, z in merged):
            return False
    return True


# --------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------


def draw_length(rng):
    return rng.choice(LENGTHS) if rng.random() < 0.6 else rng.randint(1, 2100)


def cases(count, seed):
    """`count` random ragged cases, cycling through COMBOS; each holds its own
    torch seed, so --first reruns a case exactly."""
    rng = random.Random(seed)
    drawn = []
    for index in range(count):
        granularity, hadamard = COMBOS[index % len(COMBOS)]
        hkv, groups = rng.randint(1, 4), rng.randint(1, 4)
        nq = draw_length(rng)
        nk = draw_length(rng)
        while nk == nq and rng.random() < 0.9:
            nk = draw_length(rng)
        zeros = rng.choice(ZEROS)
        if index in (3, 10):  # one of each kind early, whatever the draw
            zeros = "all" if index == 3 else "head"
        b = rng.randint(1, 3)
        if index % 10 == 9:
            # A large batch: thousands of 128-row blocks, several waves.
            b, hkv, groups = 4, 4, 4
            nq, nk = rng.randint(2000, 4200), rng.randint(2000, 4200)
        drawn.append(dict(
            index=index, d=rng.choice((64, 128, 256)), b=b, h=hkv * groups,
            hkv=hkv, nq=nq, nk=nk, dtype=rng.choice(tuple(DTYPES)), granularity=granularity,
            hadamard=hadamard, seed=rng.choice(SEEDS) if hadamard else DEFAULT_SEED,
            layouts=tuple(rng.choice(LAYOUTS) for _ in "qkv"), zeros=zeros,
            outliers=rng.choice((0.0, 1e-3, 1e-2)), causal=rng.random() < 0.25,
            torch_seed=rng.randrange(1 << 31)))
    return drawn


def sanitize_cases():
    """Four tiny ragged cases for compute-sanitizer (tails of 128 and 16 rows,
    GQA, every layout and granularity, the rotation at d128 and d256) and one
    with more blocks than the GPU holds CTAs at once."""
    base = dict(b=2, outliers=1e-2, zeros="none", causal=False, torch_seed=1, seed=DEFAULT_SEED)
    return [dict(base, index=0, d=128, h=8, hkv=2, nq=77, nk=45, dtype="bf16",
                 granularity="block", hadamard=True, layouts=("nslice", "padded", "bhnd")),
            dict(base, index=1, d=64, h=3, hkv=3, nq=130, nk=200, dtype="f16",
                 granularity="head", hadamard=False, layouts=("bhnd", "dlast", "contiguous")),
            dict(base, index=2, d=256, h=2, hkv=1, nq=33, nk=161, dtype="bf16",
                 granularity="tensor", hadamard=True, layouts=("padded", "contiguous", "nslice"),
                 zeros="head"),
            dict(base, index=3, b=1, d=128, h=4, hkv=2, nq=1, nk=1, dtype="f16",
                 granularity="block", hadamard=False, layouts=("contiguous",) * 3),
            # More blocks than the GPU holds CTAs at once (two waves at d256).
            dict(base, index=4, d=256, h=4, hkv=2, nq=4000, nk=2999, dtype="bf16",
                 granularity="block", hadamard=True, layouts=("contiguous", "padded", "bhnd"))]


def describe(c):
    rot = ""
    if c["hadamard"]:
        rot = "+H" + ("" if c["seed"] == DEFAULT_SEED else f"(seed {c['seed']:#x})")
    notes = [f"zeros {c['zeros']}" if c["zeros"] != "none" else "",
             f"outliers {c['outliers']:g}" if c["outliers"] else "",
             "causal" if c["causal"] else ""]
    return (f"#{c['index']} d{c['d']} b{c['b']} {c['nq']}x{c['nk']} h{c['h']}/{c['hkv']} "
            f"{c['dtype']} {c['granularity']}{rot} q/k/v {'/'.join(c['layouts'])}"
            f"{''.join(' ' + n for n in notes if n)}")


def max_abs(a, b):
    return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0


def reference_quantized(q, k, v, granularity, hadamard, seed):
    """q, k, v as quantize_fp8 should make them (emulate_quantize), dequantized:
    float32, q and k rotated when asked."""
    groups = q.shape[2] // k.shape[2]
    return tuple(fp8_check.dequantize(*emulate_quantize(t, granularity, g, rot,
                                                        seed, False))
                 for n, t, g, rot in (("q", q, groups, hadamard), ("k", k, 1, hadamard),
                                      ("v", v, 1, False)))


def check_attention(x, q, k, v, c):
    """attngen.attention on quantize_fp8's tensors against float64 attention
    (1) on the dequantized tensors, beside fp8_check's emulation of the FP8 math
    on them (the kernel's arithmetic and its descales, block ones too), and (2)
    on the original inputs, beside the emulation on the reference's quantization
    of them (so a rotation that does not keep q k^T fails here too)."""
    b, nq, h, d = q.shape
    nk = k.shape[1]
    scale = 1.0 / math.sqrt(d)
    out = attngen.attention(x.q, x.k, x.v, causal=c["causal"], **x.descales)
    if tuple(out.shape) != (b, nq, h, d) or out.dtype != torch.bfloat16:
        return dict(attention_ok=False,
                    attention_error=f"out {out.dtype} {list(out.shape)}; want bfloat16 "
                                    f"{[b, nq, h, d]}")
    mask = harness.visibility_mask(nq, nk, c["causal"], True, harness.NO_WINDOW, DEVICE)
    r = dict(out_nan=int(torch.isnan(out).sum().item()))
    for key, (emulated_inputs, ref_inputs) in (
            ("deq", (fp8_check.dequantized(x),) * 2),
            ("orig", (reference_quantized(q, k, v, c["granularity"], c["hadamard"], c["seed"]),
                      (q, k, v)))):
        emulated = fp8_check.emulate_fp8(*emulated_inputs, scale, mask)
        ref, _ = harness.reference(*ref_inputs, scale, c["causal"], True,
                                   compute_dtype=torch.float64)
        r[f"err_{key}"] = max_abs(out, ref)
        r[f"emu_{key}"] = max_abs(emulated, ref)
        del ref, emulated
    r["attention_ok"] = (r["out_nan"] == 0 and all(
        r[f"err_{key}"] <= 2 * r[f"emu_{key}"] + E2E_SLACK for key in ("orig", "deq")))
    return r


def run_case(c):
    """One case: its row (quantize_ok, attention_ok, ok, their figures or errors)."""
    row = dict(c)
    q, k, v = case_inputs(c)
    ranges = poison_blocks(output_bytes(q, k))
    try:
        x = attngen.quantize_fp8(q, k, v, granularity=c["granularity"], hadamard=c["hadamard"],
                                 hadamard_seed=c["seed"], v_layout="k_major")
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 -- reported in the row
        return dict(row, ok=False, quantize_ok=False, attention_ok=False,
                    error=harness.short_error(e), fatal=harness.is_fatal(e))
    row["poisoned"] = in_poisoned((x.q, x.k, x.v), ranges)
    try:
        problems, figures = check_quantized(x, q, k, v, c["granularity"], c["hadamard"],
                                            c["seed"])
    except Exception as e:  # noqa: BLE001 -- an output the checks cannot even read
        problems, figures = [f"checking the outputs raised {harness.short_error(e)}"], {}
    row.update(figures, quantize_ok=not problems, problems=problems)
    try:
        row.update(check_attention(x, q, k, v, c))
    except Exception as e:  # noqa: BLE001 -- a refusal is a failed row, not a crash
        row.update(attention_ok=False, attention_error=harness.short_error(e),
                   fatal=harness.is_fatal(e))
    row["ok"] = row["quantize_ok"] and row["attention_ok"]
    return row


def print_case(r, seed):
    i = r["index"]
    rerun = "" if r["ok"] else f" (rerun: --seed {seed} --first {i} --cases {i + 1})"
    head = f"{'ok  ' if r['ok'] else 'FAIL'} {describe(r)}"
    if "error" in r:
        print(f"{head}: quantize_fp8 raised {r['error']}{rerun}", flush=True)
        return
    worst = max((r.get(f"{n}_element_ratio", 0.0) for n in "qkv"), default=0.0)
    rel = max((r.get(f"{n}_descale_rel", 0.0) for n in "qkv"), default=0.0)
    text = f"descales rel {rel:.1e}, elements {worst:.2f} of the bound"
    if "attention_error" in r:
        text += f"; attention: {r['attention_error']}"
    elif "err_orig" in r:
        text += (f"; attention err {r['err_orig']:.2e} (emulation's {r['emu_orig']:.2e}), vs "
                 f"dequantized {r['err_deq']:.2e} ({r['emu_deq']:.2e})")
        if r["out_nan"]:
            text += f", {r['out_nan']} NaN in O"
    if not r.get("poisoned", True):
        text += "; outputs not in the poisoned blocks"
    print(f"{head}: {text}{rerun}", flush=True)
    for p in r.get("problems", [])[:6]:
        print(f"     {p}", flush=True)


def run_correctness(drawn, seed):
    results = []
    for c in drawn:
        r = run_case(c)
        results.append(r)
        print_case(r, seed)
        if r.get("fatal"):
            print("the CUDA context is lost: the remaining checks do not run", flush=True)
            break
    return results


def correctness_summary(results):
    """Counts per (granularity, hadamard): cases, quantize ok, attention ok, and
    the attention errors seen (refusals)."""
    table = []
    for granularity, hadamard in COMBOS:
        rows = [r for r in results
                if r["granularity"] == granularity and r["hadamard"] == hadamard]
        errors = collections.Counter(r["attention_error"] for r in rows
                                     if "attention_error" in r)
        table.append(dict(granularity=granularity, hadamard=hadamard, cases=len(rows),
                          quantize_ok=sum(r["quantize_ok"] for r in rows),
                          attention_ok=sum(r["attention_ok"] for r in rows),
                          attention_errors=dict(errors)))
    return table


def print_correctness(results, table):
    print(f"\nquantize correctness: {sum(r['quantize_ok'] for r in results)}/{len(results)} "
          f"quantized right, {sum(r['attention_ok'] for r in results)}/{len(results)} "
          "attended right")
    harness.print_table(
        ["granularity", "hadamard", "cases", "quantize ok", "attention ok"],
        [[t["granularity"], t["hadamard"], t["cases"], t["quantize_ok"], t["attention_ok"]]
         for t in table])
    for t in table:
        for why, count in t["attention_errors"].items():
            print(f"  {t['granularity']}{' + Hadamard' if t['hadamard'] else ''}: attention "
                  f"raised {count}x: {why}")
    ratios = [r.get(f"{n}_element_ratio") for r in results for n in "qkv"]
    rels = [r.get(f"{n}_descale_rel") for r in results for n in "qkv"]
    print(f"  worst element error {harness.fmt(harness.worst_rel(ratios), '.2f')} of the bound, "
          f"descale rel {harness.fmt(harness.worst_rel(rels), '.1e')}")


# --------------------------------------------------------------------------------------
# sm_80 refusal, accuracy
# --------------------------------------------------------------------------------------


def run_sm80_refusal():
    """Under ATTNGEN_ARCH=sm_80 quantize_fp8 must raise an error that names sm_90a
    or FP8. In a fresh process: the package picks a device's arch once."""
    code = ("import torch, attngen\n"
            "x = torch.randn(1, 64, 2, 128, device='cuda', dtype=torch.bfloat16)\n"
            "attngen.quantize_fp8(x, x, x)\n"
            "torch.cuda.synchronize()\n")
    env = dict(os.environ, ATTNGEN_ARCH="sm_80")
    try:
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=120)
    except subprocess.TimeoutExpired:
        print("FAIL ATTNGEN_ARCH=sm_80 quantize_fp8: no answer in 120 s", flush=True)
        return dict(ok=False, why="timed out")
    message = (run.stderr.strip().splitlines() or ["(no output)"])[-1]
    ok = run.returncode != 0 and bool(re.search(r"sm_90a|fp8", message, re.I))
    why = "no error" if run.returncode == 0 else message[:300]
    print(f"{'ok  ' if ok else 'FAIL'} ATTNGEN_ARCH=sm_80 refuses quantize_fp8: {why}",
          flush=True)
    return dict(ok=ok, why=why)


def accuracy():
    """FA3's Table 3 with quantize_fp8: RMSE against float64 attention on the bf16
    inputs; each FP8 row beside its emulation's (fp8_check.emulate_fp8 on the
    dequantized, rotated, inputs) and judged: RMSE <= 2x the emulation's."""
    b, h, n, d = 2, 16, 2048, 128
    scale = 1.0 / math.sqrt(d)
    rows = {name: dict(method=name, granularity=g, hadamard=rot, paper=PAPER_RMSE.get(name))
            for name, g, rot in ACCURACY_ROWS}
    for dist in ("outliers", "normal"):
        torch.manual_seed(3)
        q, k, v = (fp8_check.fa3_input((b, n, h, d), dist == "outliers") for _ in range(3))
        ref, _ = harness.reference(q, k, v, scale, compute_dtype=torch.float64)
        for name, granularity, hadamard in ACCURACY_ROWS:
            row = rows[name]
            try:
                if granularity is None:
                    row[dist] = fp8_check.rmse(attngen.attention(q, k, v), ref)
                    continue
                x = attngen.quantize_fp8(q, k, v, granularity=granularity, hadamard=hadamard)
                out = attngen.attention(x.q, x.k, x.v, **x.descales)
                row[dist] = fp8_check.rmse(out, ref)
                row[dist + "_emulated"] = fp8_check.rmse(
                    fp8_check.emulate_fp8(*fp8_check.dequantized(x), scale, None), ref)
            except Exception as e:  # noqa: BLE001 -- reported in the table
                row.setdefault("error", harness.short_error(e))
                if harness.is_fatal(e):
                    row["fatal"] = True
                    break
        if any(r.get("fatal") for r in rows.values()):
            break
    for row in rows.values():
        row["ok"] = "error" not in row and all(
            row.get(dist) is not None and (row["granularity"] is None
                                           or row[dist] <= 2 * row[dist + "_emulated"])
            for dist in ("outliers", "normal"))
    return list(rows.values())


def accuracy_bar(rows):
    """(value, met) of the bar: block + Hadamard on the outliers below FA3's."""
    name, dist, bar = ACCURACY_BAR
    value = next((r.get(dist) for r in rows if r["method"] == name), None)
    return value, value is not None and value < bar


def print_accuracy(rows):
    print("\naccuracy (FA3 Table 3: B2 H16 N2048 d128 non-causal; RMSE vs float64 on the "
          "unquantized bf16 inputs; FP8 rows from attngen.quantize_fp8)")
    harness.print_table(
        ["method", "N(0,1)+0.1% N(0,10)", "emulated", "N(0,1)", "emulated", "FA3 paper", "ok"],
        [[r["method"], harness.fmt(r.get("outliers"), ".2e"),
          harness.fmt(r.get("outliers_emulated"), ".2e"), harness.fmt(r.get("normal"), ".2e"),
          harness.fmt(r.get("normal_emulated"), ".2e"), harness.fmt(r["paper"], ".1e"),
          "yes" if r["ok"] else "NO"] for r in rows])
    for r in rows:
        if "error" in r:
            print(f"  {r['method']}: {r['error']}")
    value, met = accuracy_bar(rows)
    name, dist, bar = ACCURACY_BAR
    print(f"  bar: {name} on the outliers {harness.fmt(value, '.2e')} < {bar:.1e} (FA3): "
          f"{'met' if met else 'MISSED'}")


# --------------------------------------------------------------------------------------
# Bandwidth
# --------------------------------------------------------------------------------------


def bench_shape(shape, quantize_module):
    """One bf16 tensor: the quantize calls and a torch copy timed interleaved."""
    b, n, h, d = shape
    x = torch.randn(shape, device=DEVICE, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    one_launch = quantize_module._quantize_e4m3
    two_launch = quantize_module._quantize
    seed = DEFAULT_SEED
    calls = {
        "block": lambda: one_launch(x, None, False, "block", False, seed),
        "block + Hadamard": lambda: one_launch(x, None, False, "block", True, seed),
        "block K-major": lambda: one_launch(x, None, True, "block", False, seed),
        "tensor (2 launches)": lambda: two_launch(x, "tensor", 1, False, seed, False),
        "tensor + Hadamard (2 launches)": lambda: two_launch(x, "tensor", 1, True, seed, False),
        "quantize_fp8 q,k,v block + Hadamard":
            lambda: attngen.quantize_fp8(x, x, x, granularity="block", hadamard=True),
        "torch copy": lambda: y.copy_(x),
    }
    ms, errors = fp8_check.time_interleaved(calls)
    elems = x.numel()
    blocks = b * h * -(-n // BLOCK_ROWS)
    # Read 2 B and write 1 B per element, plus the descales (written or read).
    one = 3 * elems + 4 * blocks
    nbytes = {name: one for name in calls}
    nbytes["quantize_fp8 q,k,v block + Hadamard"] = 3 * one
    nbytes["torch copy"] = 4 * elems
    rows = []
    for name in calls:
        t = ms.get(name)
        rate = harness.gbps(nbytes[name], t) if t else None
        rows.append(dict(shape=list(shape), call=name, ms=t, bytes=nbytes[name], gbps=rate,
                         error=errors.get(name)))
    copy = next(r["gbps"] for r in rows if r["call"] == "torch copy")
    for r in rows:
        r["of_hbm"] = r["gbps"] / HBM_GBPS if r["gbps"] else None
        r["of_copy"] = r["gbps"] / copy if r["gbps"] and copy else None
    print(f"bench {tuple(shape)}: " + ", ".join(
        f"{r['call']} {harness.fmt(r['gbps'], '.0f')} GB/s" for r in rows)
        + "".join(f"; {k}: {v}" for k, v in errors.items()), flush=True)
    return rows


def bandwidth_bar(rows):
    """(the lowest fraction of HBM of the rotated block kernel over the shapes, met)."""
    values = [r["of_hbm"] for r in rows if r["call"] == "block + Hadamard"]
    if not values or any(v is None for v in values):
        return None, False
    return min(values), min(values) >= BANDWIDTH_BAR


def print_bandwidth(rows):
    print(f"\nbandwidth (bf16 in; bytes = 2 B read + 1 B written per element + the descales; "
          f"the two-launch path reads x twice but is counted so too; % of HBM's nominal "
          f"{HBM_GBPS / 1000:.1f} TB/s and of a torch copy's GB/s, 4 B per element)")
    harness.print_table(
        ["shape", "call", "ms", "GB/s", "% HBM", "% copy"],
        [["x".join(map(str, r["shape"])), r["call"], harness.fmt(r["ms"], ".3f"),
          harness.fmt(r["gbps"], ".0f"),
          harness.fmt(100 * r["of_hbm"], ".0f") if r["of_hbm"] else "-",
          harness.fmt(100 * r["of_copy"], ".0f") if r["of_copy"] else "-"] for r in rows])
    for r in rows:
        if r["error"]:
            print(f"  {r['call']} {tuple(r['shape'])}: {r['error']}")
    value, met = bandwidth_bar(rows)
    print(f"  bar: block + Hadamard >= {100 * BANDWIDTH_BAR:.0f}% of HBM on every shape: "
          f"{harness.fmt(100 * value, '.0f') if value else '-'}%, "
          f"{'met' if met else 'MISSED'}")


# --------------------------------------------------------------------------------------
# Summary, main
# --------------------------------------------------------------------------------------


def print_summary(report, failed):
    results = report["cases"]
    rows = [["quantize_fp8 outputs", f"{sum(r['quantize_ok'] for r in results)}/{len(results)}",
             "descales, every element, v K-major zero-padded, no NaN"],
            ["attention on them", f"{sum(r['attention_ok'] for r in results)}/{len(results)}",
             "2x the emulation's error + 1e-3, vs original and dequantized"]]
    if "sm80_refusal" in report:
        rows.append(["sm_80 refusal", "ok" if report["sm80_refusal"]["ok"] else "FAIL",
                     report["sm80_refusal"]["why"][:60]])
    if "accuracy" in report:
        value, met = accuracy_bar(report["accuracy"])
        rows.append(["accuracy rows", f"{sum(r['ok'] for r in report['accuracy'])}/"
                     f"{len(report['accuracy'])}", "RMSE <= 2x the emulation's"])
        rows.append(["bar: block + Hadamard RMSE", harness.fmt(value, ".2e"),
                     f"< 9.1e-3 (FA3): {'met' if met else 'MISSED'}"])
    if "bandwidth" in report:
        value, met = bandwidth_bar(report["bandwidth"])
        rows.append(["bar: block + Hadamard bandwidth",
                     f"{harness.fmt(100 * value, '.0f') if value else '-'}% HBM",
                     f">= {100 * BANDWIDTH_BAR:.0f}%: {'met' if met else 'MISSED'}"])
    rows.append(["verdict", "PASS" if not failed else f"FAIL ({failed})", ""])
    print("\nsummary")
    harness.print_table(["check", "result", "criterion"], rows)


def main():
    global attngen
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument("--cases", type=int, default=60, help="random correctness cases")
    parser.add_argument("--first", type=int, default=0,
                        help="skip the cases before this one (0-based)")
    parser.add_argument("--seed", type=int, default=11, help="seed of the case draw")
    parser.add_argument("--no-bench", action="store_true", help="skip the bandwidth section")
    parser.add_argument("--sanitize", action="store_true",
                        help="five small fixed cases only (for compute-sanitizer)")
    parser.add_argument("--self-test", action="store_true",
                        help="check the reference and the verdicts on the CPU, then exit")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    import attngen as module
    from attngen import _torch_quantize
    attngen = module
    harness.precise_float32()  # the emulation's float32 matmuls without TF32
    report = dict(environment=harness.environment(), args=vars(args))
    drawn = sanitize_cases() if args.sanitize else cases(args.cases, args.seed)
    results = report["cases"] = run_correctness(drawn[args.first:], args.seed)
    report["correctness"] = correctness_summary(results)
    failed = sum(not r["ok"] for r in results)
    alive = not any(r.get("fatal") for r in results)
    if alive and not args.sanitize:
        report["accuracy"] = accuracy()
        failed += sum(not r["ok"] for r in report["accuracy"])
        alive = not any(r.get("fatal") for r in report["accuracy"])
        if alive and not args.no_bench:
            harness.warm_up_gpu()
            report["bandwidth"] = [r for shape in BENCH_SHAPES
                                   for r in bench_shape(shape, _torch_quantize)]
            failed += sum(bool(r["error"]) for r in report["bandwidth"])
        report["sm80_refusal"] = run_sm80_refusal()
        failed += not report["sm80_refusal"]["ok"]
    print_correctness(results, report["correctness"])
    if "accuracy" in report:
        print_accuracy(report["accuracy"])
    if "bandwidth" in report:
        print_bandwidth(report["bandwidth"])
    print_summary(report, failed)
    report["failed"] = failed
    if args.json:
        harness.write_json(args.json, report)
    return 1 if failed else 0


# --------------------------------------------------------------------------------------
# Self-test (CPU): the reference and the verdicts must catch what they are for
# --------------------------------------------------------------------------------------

#: The sign words of the kernel's PTX (attngen --quantize-fp8 --hadamard --emit=ptx):
#: (head dim, seed) -> words, the constants of its selp.b32 chain.
KERNEL_SIGN_WORDS = {(64, DEFAULT_SEED): [0x1BF41D31, 0x40EA0DF5],
                     (256, 4611686018427400000): [0xB7037CCE, 0x1163A9AA, 0xE172D17D,
                                                  0xB95760CA, 0x7AE43B52, 0x350A0D2C,
                                                  0xE3B96801, 0x1B0A2B27]}


def self_test():
    global DEVICE
    DEVICE = "cpu"
    check = harness.CheckCounter()
    for (d, seed), words in KERNEL_SIGN_WORDS.items():
        check(sign_words(d, seed) == words, f"sign words d{d} seed {seed:#x}: "
              f"{[hex(w) for w in sign_words(d, seed)]}")
    torch.manual_seed(0)
    for d in (64, 128, 256):
        a = rotation(d, DEFAULT_SEED, "cpu")
        check(torch.allclose(a @ a.T, torch.eye(d, dtype=torch.float64), atol=1e-12),
              f"rotation d{d} orthogonal")
        q, k = torch.randn(5, d, dtype=torch.float64), torch.randn(7, d, dtype=torch.float64)
        check(torch.allclose((q @ a) @ (k @ a).T, q @ k.T, atol=1e-10), f"q k^T kept d{d}")
        x = torch.randn(d, dtype=torch.float64)
        s = torch.tensor([-1.0 if sign_negative(DEFAULT_SEED, j) else 1.0 for j in range(d)],
                         dtype=torch.float64)
        naive = torch.tensor([sum((-1) ** bin(i & j).count("1") * s[j].item() * x[j].item()
                                  for j in range(d)) for i in range(d)]) / math.sqrt(d)
        check(torch.allclose(x @ a, naive.double(), atol=1e-10), f"rotation d{d} = the formula")
    # quantize_fp8's results as the reference makes them pass; broken ones fail.
    b, nq, nk, hkv, groups, d = 2, 200, 145, 2, 2, 64
    q = values(b, nq, hkv * groups, d, 1e-2).bfloat16()
    k = values(b, nk, hkv, d, 1e-2).bfloat16()
    v = values(b, nk, hkv, d, 1e-2).bfloat16()
    q[0, :, :groups] = 0
    k[1, :, 1] = 0
    seed = DEFAULT_SEED

    def fake(granularity, hadamard, q_seed=seed, tamper=None):
        out = []
        for n, t, g, rot, km in (("q", q, groups, hadamard, False),
                                 ("k", k, 1, hadamard, False), ("v", v, 1, False, True)):
            out += emulate_quantize(t, granularity, g, rot, q_seed, km)
        x8 = dict(q=out[0], k=out[2], v=out[4], q_descale=out[1], k_descale=out[3],
                  v_descale=out[5])
        if tamper:
            tamper(x8)
        return _Fake(**x8)

    for granularity in GRANULARITIES:
        for hadamard in (False, True):
            problems, _ = check_quantized(fake(granularity, hadamard), q, k, v, granularity,
                                          hadamard, seed)
            check(not problems, f"reference quantization {granularity} hadamard={hadamard} "
                  f"passes: {problems}")

    def fails(what, granularity, hadamard, **kw):
        problems, _ = check_quantized(fake(granularity, hadamard, **kw), q, k, v, granularity,
                                      hadamard, seed)
        check(bool(problems), f"caught: {what}")

    fails("another seed's signs", "block", True, q_seed=seed + 1)
    fails("another seed's signs, per tensor", "tensor", True, q_seed=seed + 1)
    fails("no rotation where one was asked", "head", True, tamper=lambda x: x.update(
        q=emulate_quantize(q, "head", groups, False, seed, False)[0]))

    def unnormalized(x):
        x8, descale = emulate_quantize(k.double() * math.sqrt(d), "head", 1, True, seed, False)
        x.update(k=x8, k_descale=descale)
    fails("rotation without 1/sqrt(D)", "head", True, tamper=unnormalized)

    def block_zero_scale(x):
        # The elements of block 1 scaled by block 0's descale; the descales reported right.
        bad, _ = emulate_quantize(q, "block", groups, False, seed, False)
        y = q.double()
        d0 = x["q_descale"][:, :, :1].double().transpose(1, 2)[..., None]
        bad[:, 128:] = to_e4m3(y[:, 128:] / d0.clamp(min=1e-30))
        x.update(q=bad)
    fails("a block quantized with another block's scale", "block", False, tamper=block_zero_scale)
    fails("per-head q descales per query head, not per group", "head", False, tamper=lambda x:
          x.update(q_descale=reference_descale(q.double(), "head", 1).float()))
    fails("a descale off by 1%", "tensor", False, tamper=lambda x:
          x.update(v_descale=x["v_descale"] * 1.01))

    def padding(x):
        x["v"].as_strided((b, hkv, d, 160), (hkv * d * 160, d * 160, 160, 1)).view(
            torch.uint8)[0, 0, 0, 150] = 0x38
    fails("a nonzero byte in v's padding", "head", False, tamper=padding)

    def nan(x):
        x["k"].view(torch.uint8)[0, 5, 0, 3] = E4M3_NAN_BYTE
    fails("a NaN in k", "block", True, tamper=nan)

    def row_major_v(x):
        x["v"] = emulate_quantize(v, "tensor", 1, False, seed, False)[0]
    fails("v row-major", "tensor", False, tamper=row_major_v)

    def zero_not_zero(x):
        x["q"].view(torch.uint8)[0, 3, 0, 0] = 0x01   # the smallest subnormal, where q is 0
    fails("an element not 0 where the input is", "tensor", False, tamper=zero_not_zero)
    # The descale references: scopes and the zeros' rules.
    y = torch.zeros(1, 300, 4, 8, dtype=torch.float64)
    y[0, 5, 1, 2], y[0, 200, 3, 0] = -448.0, 896.0
    check(reference_descale(y, "tensor", 2).tolist() == [2.0], "tensor descale")
    check(reference_descale(y, "head", 2).tolist() == [[1.0, 2.0]], "head descale per group")
    check(reference_descale(y, "block", 1).tolist() ==
          [[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 2.0, 1.0]]],
          "block descale per 128 rows, 1 for zeros")
    check(expand_descale(reference_descale(y, "block", 1), "block", y.shape, 1)[0, 200, 3, 0]
          == 2.0, "block descale expanded")
    q8, qd = emulate_quantize(q, "block", groups, False, seed, False)
    check(torch.allclose(fp8_check.dequantize(q8, qd).double(),
                         q8.float().double() * expand_descale(qd, "block", q.shape, groups)),
          "fp8_check.dequantize of block descales")
    check(len(cases(60, 11)) == 60 and {(c["granularity"], c["hadamard"])
                                         for c in cases(60, 11)} == set(COMBOS),
          "60 cases cover every granularity with and without the rotation")
    check(all(c["h"] % c["hkv"] == 0 for c in cases(200, 1)), "cases: whole groups")
    for layout in LAYOUTS:
        t = torch.randn(2, 33, 3, 64)
        check(torch.equal(placed(t, layout), t), f"layout {layout} holds the values")
    print(f"quantize_check self-test: {'ok' if not check.failures else 'FAILED'} "
          f"({check.failures} failures)")
    return 1 if check.failures else 0


class _Fake:
    """A QuantizedFp8 stand-in for the self-test."""

    def __init__(self, q, k, v, q_descale, k_descale, v_descale):
        self.q, self.k, self.v = q, k, v
        self.q_descale, self.k_descale, self.v_descale = q_descale, k_descale, v_descale

    @property
    def descales(self):
        return dict(q_descale=self.q_descale, k_descale=self.k_descale,
                    v_descale=self.v_descale)


if __name__ == "__main__":
    sys.exit(main())
