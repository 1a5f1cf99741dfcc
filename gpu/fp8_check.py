#!/usr/bin/env python3
"""The FP8 (e4m3) forward on sm_90a on a GPU: its numerics against the
dequantized inputs with flash_attn's criterion, FlashAttention-3's accuracy
table, and its speed beside bf16, cuDNN and the FP8 GEMM ceiling.

    ATTNGEN_LIBRARY=.../libattngen.so PYTHONPATH=python:gpu \\
        python3 gpu/fp8_check.py [--json OUT.json] [--cases N] [--first I] [--seed S] \\
                                 [--no-bench] [--sanitize]

The caller quantizes (quantize below): q, k, v go in as float8_e4m3fn with
descales (None, one per tensor, FA3's one per batch and KV head, or block
quantization's one per 128 rows of each head), out comes back bf16.

* Correctness: random ragged cases (Nq != Nk from 1 to 3000, B 1-3, GQA 1:1,
  4:1 and 8:1, d64/128/256, causal in both alignments or not, a few causal
  windows, each of q, k, v with its own kind of descale and unequal head
  magnitudes (or block scales for q and k, and for v or not), v K-major
  with NaN in its padding, row-major or (B, H, N, D)-strided), out and LSE poisoned with NaN first. The reference is float64
  attention on the dequantized inputs (their quantization is not the kernel's
  error). Pass: max |O - ref| <= 2 x the error of a PyTorch emulation of the
  FP8 math (S as torch._scaled_mm's fast accumulation gives it, P rounded to
  e4m3 as P * 256, O to bf16) + 1e-3, no NaN, rows that see no key exactly 0
  with LSE -inf, LSE within 1e-2 or twice the emulation's LSE error + 1e-3
  (the FP8 tensor cores accumulate with fewer bits than float32: at d256 that
  alone moves the LSE by up to 1.4e-2). Head dims 96 and 192
  and windows may be refused (ValueError, NotImplementedError): counted as
  skipped, not failed.
* sm_80: under ATTNGEN_ARCH=sm_80 an FP8 call raises an error that names
  sm_90a or FP8.
* Accuracy (FA3 paper, Table 3): RMSE of out against float64 on the
  unquantized inputs, N(0, 1) with 0.1% outliers N(0, 10), B 2, H 16, N 2048,
  d128: attngen bf16, FP8 per tensor, FP8 per head (quantized here), and
  attngen.quantize_fp8's per tensor, block and block + Hadamard (FA3's 9.1e-3
  is block + Hadamard; gpu/quantize_check.py has every combination).
* Speed (skipped by --no-bench): B*N = 16k, H*D = 2048, N 1k and 8k, causal or
  not, d64/128/256: FP8 (K-major v, per-tensor descales) against attngen bf16
  and SDPA's cuDNN and flash backends, interleaved in one run; a row-major v
  (attngen's transposing copy) at d128 8k; the FP8 GEMM 8192^3 ceiling.

--sanitize runs four small fixed cases only: compute-sanitizer's run
(gpu/fp8.sh). Exit status 0 when every check passed.
"""

import argparse
import collections
import math
import os
import random
import re
import subprocess
import sys

import torch

import harness

attngen = None
DEVICE = "cuda"
FP8 = torch.float8_e4m3fn

#: e4m3's largest finite value: quantize maps the amax of a scale's elements to it.
E4M3_MAX = 448.0
#: e4m3fn's NaN byte: the padding of a K-major v, as torch.empty may leave it.
E4M3_NAN_BYTE = 0x7F
#: P is rounded to e4m3 as P * 256 (FA3's choice): P in [0, 1] then uses the normal range.
P_SCALE = 256.0
#: The criterion: max |O - ref| <= 2 x the emulation's + ABS_SLACK.
ABS_SLACK = 1e-3
#: Max |LSE - LSE_ref| on rows that see a key.
LSE_TOLERANCE = 1e-2
SUPPORTED_DIMS = (64, 128, 256)
#: Head dims the first version may refuse: a counted skip, not a failure.
MAYBE_DIMS = (96, 192)
#: The descale kinds of quantize.
GRANULARITIES = ("none", "tensor", "head")
#: Rows per descale of attngen.quantize_fp8's "block" granularity.
BLOCK_ROWS = 128
V_LAYOUTS = ("kmajor", "rowmajor", "bhnd")
#: Windows (left, 0) from a short list: each left is one more kernel to compile.
WINDOWS = ((100, 0), (256, 0))
NO_WINDOW = (-1, -1)
#: (H, Hkv): GQA 1:1, 4:1 and 8:1.
HEADS = ((2, 2), (4, 4), (8, 2), (16, 4), (8, 1), (16, 2))

#: The accuracy table's methods: name -> FP8 granularity of `quantize` here (None:
#: attngen on bf16 inputs) ...
ACCURACY_METHODS = {"attngen bf16": None, "FP8 per-tensor": "tensor", "FP8 per-head": "head"}
#: ... and name -> (granularity, hadamard) of attngen.quantize_fp8 (its kernel; one scale
#: per 128-row block, incoherent processing: FA3's 9.1e-3 is with both).
QUANTIZE_FP8_METHODS = {"FP8 quantize_fp8 per-tensor": ("tensor", False),
                        "FP8 quantize_fp8 block": ("block", False),
                        "FP8 quantize_fp8 block + Hadamard": ("block", True)}
#: FA3 paper, Table 3 (its 16-bit row is FP16; its FP8 baseline is per tensor; its
#: 9.1e-3 is block quantization with incoherent processing).
PAPER_RMSE = {"attngen bf16": 1.9e-4, "FP8 per-tensor": 2.4e-2,
              "FP8 quantize_fp8 per-tensor": 2.4e-2, "FP8 quantize_fp8 block + Hadamard": 9.1e-3}

#: Speed: rounds of each call interleaved with the others, and per round the
#: untimed and timed calls of harness.time_ms.
ROUNDS, WARMUP, ITERS = 5, 3, 10
BENCH_DIMS = (64, 128, 256)
BENCH_N = (1024, 8192)
#: Where the row-major v is timed too (attngen copies it K-major).
ABLATION = (128, 8192)
#: The FP8 GEMM ceiling's M = N = K.
GEMM_N = 8192


# --------------------------------------------------------------------------------------
# Quantization and layouts
# --------------------------------------------------------------------------------------


def grouped(x, groups):
    """x [B, N, H, D] as [B, N, groups, H / groups, D]: head h in group h // (H / groups)."""
    b, n, h, d = x.shape
    return x.reshape(b, n, groups, h // groups, d)


def to_e4m3(x):
    """x rounded to e4m3, saturated: a value just past 448 after a division must
    not become NaN."""
    return x.clamp(-E4M3_MAX, E4M3_MAX).to(FP8)


def quantize(x, granularity, groups=None):
    """(x8 float8_e4m3fn, descale float32) with x ~ x8.float() * descale, for x
    [B, N, H, D]: "tensor" one scale (descale (1,) = amax / 448), "head" one per
    batch and group of heads (descale (B, groups), groups defaulting to H: q
    takes Hkv groups, FA3's q_descale[b, h // (H / Hkv)]), "none" no scale
    (descale None), "block" one per 128 rows of each head (descale (B, H,
    ceil(N / BLOCK_ROWS)), as attngen.quantize_fp8's)."""
    x = x.float()
    if granularity == "none":
        return to_e4m3(x), None
    if granularity == "block":
        b, n, h, d = x.shape
        blocks = -(-n // BLOCK_ROWS)
        padded = x.new_zeros(b, blocks * BLOCK_ROWS, h, d)
        padded[:, :n] = x
        parts = padded.reshape(b, blocks, BLOCK_ROWS, h, d)
        descale = (parts.abs().amax(dim=(2, 4)) / E4M3_MAX).clamp(min=1e-12)  # (B, blocks, H)
        x8 = to_e4m3(parts / descale[:, :, None, :, None]).reshape(padded.shape)[:, :n]
        return x8.contiguous(), descale.transpose(1, 2).contiguous()
    if granularity == "tensor":
        descale = (x.abs().amax() / E4M3_MAX).clamp(min=1e-12).reshape(1)
        return to_e4m3(x / descale), descale
    parts = grouped(x, groups or x.shape[2])
    descale = (parts.abs().amax(dim=(1, 3, 4)) / E4M3_MAX).clamp(min=1e-12)
    return to_e4m3(parts / descale[:, None, :, None, None]).reshape(x.shape), descale


def dequantize(x8, descale):
    """x8.float() * descale (None, (1,), (B, groups) or attngen.quantize_fp8's
    block descales (B, H, ceil(N / BLOCK_ROWS)): one per 128 rows of each head):
    what the kernel computes on."""
    x = x8.float()
    if descale is None:
        return x
    if descale.numel() == 1:
        return x * descale
    if descale.dim() == 3:
        rows = descale.repeat_interleave(BLOCK_ROWS, dim=2)[:, :, :x.shape[1]]  # (B, H, N)
        return x * rows.transpose(1, 2)[..., None]
    return (grouped(x, descale.shape[1]) * descale[:, None, :, None, None]).reshape(x.shape)


def dequantized(x):
    """The float32 q, k, v an attngen.quantize_fp8 result stands for (q and k
    rotated when it was asked for the Hadamard transform: attention is the same)."""
    return tuple(dequantize(t, d) for t, d in ((x.q, x.q_descale), (x.k, x.k_descale),
                                              (x.v, x.v_descale)))


def fp8_inputs(q, k, v, quant):
    """q, k, v quantized, one granularity of `quant` each (q's per-head descale
    per KV head): (q8, k8, v8, the descale keywords of attngen.attention)."""
    hkv = k.shape[2]
    (q8, qd), (k8, kd), (v8, vd) = (quantize(x, g, hkv) for x, g in zip((q, k, v), quant))
    return q8, k8, v8, dict(q_descale=qd, k_descale=kd, v_descale=vd)


def v_in_layout(v8, layout):
    """Contiguous v8 [B, Nk, Hkv, D] in `layout`: "rowmajor" as it is, "bhnd" a
    [B, Hkv, Nk, D] tensor viewed back, "kmajor" the fast one: a [B, Hkv, D,
    Nk_pad] tensor (Nk_pad a multiple of 16, its padding NaN) viewed as [B, Nk,
    Hkv, D] with N stride 1. Bytes move as uint8: float8 has few torch ops."""
    if layout == "rowmajor":
        return v8
    raw = v8.view(torch.uint8)
    if layout == "bhnd":
        return raw.transpose(1, 2).contiguous().view(FP8).transpose(1, 2)
    b, nk, hkv, d = raw.shape
    stored = torch.full((b, hkv, d, -(-nk // 16) * 16), E4M3_NAN_BYTE, dtype=torch.uint8,
                        device=raw.device)
    stored[..., :nk] = raw.permute(0, 2, 3, 1)
    return stored.view(FP8)[..., :nk].permute(0, 3, 1, 2)


# --------------------------------------------------------------------------------------
# The emulation of the FP8 math, the verdict
# --------------------------------------------------------------------------------------


def descale_factors(x8, descale):
    """The descale of each row of each head of x8 [B, N, H, D], as [B, N, H]."""
    ones = torch.ones(x8.shape[:3] + (1,), device=x8.device).to(FP8)
    return dequantize(ones, descale)[..., 0]


def fast_accum_scores(q8, k8, q_factor, k_factor, bi, head, kv_head):
    """Q K^T of one head as the FP8 tensor cores give it: torch._scaled_mm of
    the e4m3 values with fast accumulation (one chain over the head dim, no
    float32 promotion, as one wgmma chain), then descaled: [Nq, Nk] float32."""
    nq, nk = q8.shape[1], k8.shape[1]

    def padded(x):  # rows to a multiple of 16, as bytes (float8 has few torch ops)
        raw = x.contiguous().view(torch.uint8)
        return torch.nn.functional.pad(raw, (0, 0, 0, (-raw.shape[0]) % 16)).view(FP8)

    one = torch.ones((), device=q8.device)
    s = torch._scaled_mm(padded(q8[bi, :, head]), padded(k8[bi, :, kv_head]).T, one, one,
                         out_dtype=torch.float32, use_fast_accum=True)[:nq, :nk]
    return s * q_factor[bi, :, head, None] * k_factor[bi, :, kv_head][None, :]


def emulate_fp8(q, k, v, scale, mask, scores8=None, return_lse=False):
    """O of the kernel's FP8 math in PyTorch, for dequantized float32 q, k, v
    [B, N, H, D]: S in float32, P = exp(S - rowmax) rounded to e4m3 as P * 256,
    O = (P8 V) / rowsum of the unrounded P, rounded to bf16; rows that see no key
    0. One batch and KV head at a time. With scores8 = (q8, k8, q factors, k
    factors) S comes from the tensor cores' fast accumulation instead
    (fast_accum_scores), which the kernel's S has; return_lse also gives the
    LSE of those S ([B, H, Nq] float64, -inf for rows without keys)."""
    b, nq, h, _ = q.shape
    hkv = k.shape[2]
    group = h // hkv
    out = torch.empty(b, nq, h, v.shape[-1], device=q.device)
    lse = torch.empty(b, h, nq, device=q.device, dtype=torch.float64)
    for bi in range(b):
        for g in range(hkv):
            heads = slice(g * group, (g + 1) * group)
            if scores8 is None:
                s = torch.matmul(q[bi, :, heads].transpose(0, 1), k[bi, :, g].T) * scale
            else:
                s = torch.stack([fast_accum_scores(*scores8, bi, hh, g)
                                 for hh in range(g * group, (g + 1) * group)]) * scale
            if mask is not None:
                s.masked_fill_(~mask, -math.inf)
            lse[bi, heads] = torch.logsumexp(s.double(), dim=-1)
            m = s.amax(dim=-1, keepdim=True)
            p = torch.exp(s - torch.where(torch.isinf(m), 0.0, m))  # a row without keys: 0
            p8 = (p * P_SCALE).to(FP8).float() / P_SCALE
            o = torch.matmul(p8, v[bi, :, g]) / p.sum(dim=-1, keepdim=True)
            out[bi, :, heads] = o.nan_to_num(0.0).transpose(0, 1)
    out = out.to(torch.bfloat16).float()
    return (out, lse) if return_lse else out


def judge(out, lse, ref, ref_lse, emulated, emulated_lse=None):
    """The verdict on one result: err and emu_err (max |O - ref| of the kernel and
    of the emulation), lse_err (rows that see a key) against its bound, NaN in
    O, rows without keys (O exactly 0 there, LSE -inf), and ok. The LSE bound
    is LSE_TOLERANCE, or with emulated_lse (S from the tensor cores' fast
    accumulation, whose error grows with the head dim and the scores' size)
    twice its error + 1e-3 where that is larger."""
    empty = torch.isinf(ref_lse)                        # (B, H, Nq): rows without keys
    seen = ~empty
    err = (out.double() - ref).abs().max().item()       # NaN if O holds one
    emu_err = (emulated.double() - ref).abs().max().item()
    lse_err = (lse[seen].double() - ref_lse[seen]).abs().max().item() if seen.any() else 0.0
    lse_bound = LSE_TOLERANCE
    if emulated_lse is not None and seen.any():
        emu_lse_err = (emulated_lse[seen] - ref_lse[seen]).abs().max().item()
        lse_bound = max(LSE_TOLERANCE, 2 * emu_lse_err + ABS_SLACK)
    v = dict(err=err, emu_err=emu_err, ratio=err / max(emu_err, 1e-12), lse_err=lse_err,
             lse_bound=lse_bound,
             nan=int(torch.isnan(out).sum().item()), empty_rows=int(empty.sum().item()),
             empty_rows_zero=bool((out[empty.transpose(1, 2)] == 0).all().item()),
             empty_lse_neginf=bool(torch.isneginf(lse[empty]).all().item()))
    v["ok"] = (v["nan"] == 0 and err <= 2 * emu_err + ABS_SLACK and lse_err <= lse_bound
               and v["empty_rows_zero"] and v["empty_lse_neginf"])
    return v


def rmse(out, ref):
    return ((out.double() - ref) ** 2).mean().sqrt().item()


# --------------------------------------------------------------------------------------
# Correctness
# --------------------------------------------------------------------------------------


def draw_length(rng, longest=3000):
    """Short (the decoding sizes), middling or long: rarely a tile multiple."""
    return rng.choice([rng.randint(1, 20), rng.randint(1, 700), rng.randint(1, longest)])


def cases(count, seed):
    """`count` random ragged cases; each holds its own torch seed, so --first
    reruns a case exactly."""
    rng = random.Random(seed)
    drawn = []
    for index in range(count):
        causal, bottom_right = rng.choice([(False, True), (True, True), (True, False)])
        h, hkv = rng.choice(HEADS)
        drawn.append(dict(
            index=index, d=rng.choice(SUPPORTED_DIMS * 3 + MAYBE_DIMS), b=rng.randint(1, 3),
            h=h, hkv=hkv, nq=draw_length(rng), nk=draw_length(rng), causal=causal,
            bottom_right=bottom_right,
            window=rng.choice(WINDOWS) if rng.random() < 0.15 else NO_WINDOW,
            quant=(("block", "block", rng.choice(GRANULARITIES + ("block",) * 3))
                   if rng.random() < 0.3 else
                   tuple(rng.choice(GRANULARITIES) for _ in "qkv")),
            v_layout=rng.choice(V_LAYOUTS), torch_seed=rng.randrange(1 << 31)))
    return drawn


def sanitize_cases():
    """Four small ragged cases for compute-sanitizer: tails in both lengths, rows
    without keys (77 x 45 bottom-right), GQA, every v layout and descale kind,
    block scales over several key blocks."""
    base = dict(b=2, window=NO_WINDOW, torch_seed=1)
    return [dict(base, index=0, d=128, h=8, hkv=2, nq=77, nk=45, causal=True,
                 bottom_right=True, quant=("head", "head", "head"), v_layout="kmajor"),
            dict(base, index=1, d=64, h=4, hkv=4, nq=130, nk=200, causal=False,
                 bottom_right=True, quant=("tensor", "tensor", "tensor"), v_layout="rowmajor"),
            dict(base, index=2, d=256, h=8, hkv=1, nq=33, nk=161, causal=True,
                 bottom_right=False, quant=("none", "head", "tensor"), v_layout="bhnd"),
            dict(base, index=3, d=128, h=8, hkv=2, nq=300, nk=520, causal=True,
                 bottom_right=True, quant=("block", "block", "block"), v_layout="rowmajor")]


def may_be_refused(c):
    """Whether the first version may refuse the case (a skip, not a failure)."""
    return c["d"] in MAYBE_DIMS or c["window"] != NO_WINDOW


def random_input(b, n, h, groups, d):
    """N(0, 1) times a factor in [1/2, 2] per batch and group of heads, so that
    per-head descales differ from each other and from the per-tensor one."""
    factor = 2.0 ** torch.empty(b, 1, groups, 1, 1, device=DEVICE).uniform_(-1.0, 1.0)
    return (torch.randn(b, n, groups, h // groups, d, device=DEVICE) * factor).reshape(b, n, h, d)


def run_case(c):
    """One correctness case: its row of the results (ok, or skipped, or error)."""
    torch.manual_seed(c["torch_seed"])
    b, nq, nk, h, hkv, d = (c[key] for key in ("b", "nq", "nk", "h", "hkv", "d"))
    q8, k8, v8, descales = fp8_inputs(random_input(b, nq, h, hkv, d),
                                      random_input(b, nk, hkv, hkv, d),
                                      random_input(b, nk, hkv, hkv, d), c["quant"])
    v_arg = v_in_layout(v8, c["v_layout"])
    row = dict(c)
    # Every input exists before the outputs' blocks are poisoned: O, then LSE
    # (the order the API allocates them).
    addresses = harness.poison_next_allocations([((b, nq, h, d), torch.bfloat16),
                                                 ((b, h, nq), torch.float32)])
    try:
        out, lse = attngen.attention(
            q8, k8, v_arg, causal=c["causal"], return_lse=True,
            causal_align="bottom-right" if c["bottom_right"] else "top-left",
            window_size=c["window"], **descales)
        torch.cuda.synchronize()
    except (ValueError, NotImplementedError) as e:
        if may_be_refused(c):
            return dict(row, skipped=harness.short_error(e))
        return dict(row, ok=False, error=harness.short_error(e))
    except Exception as e:  # noqa: BLE001 -- reported in the row
        return dict(row, ok=False, error=harness.short_error(e), fatal=harness.is_fatal(e))
    row["poisoned"] = harness.reused_poisoned_blocks((out, lse), addresses)
    want = ((b, nq, h, d), torch.bfloat16, (b, h, nq), torch.float32)
    if (tuple(out.shape), out.dtype, tuple(lse.shape), lse.dtype) != want:
        return dict(row, ok=False, error=f"out {out.dtype} {list(out.shape)}, lse {lse.dtype} "
                                         f"{list(lse.shape)}; want {want}")
    q, k, v = (dequantize(x, descales[f"{name}_descale"])
               for x, name in ((q8, "q"), (k8, "k"), (v8, "v")))
    scale = 1.0 / math.sqrt(d)
    ref, ref_lse = harness.reference(q, k, v, scale, c["causal"], c["bottom_right"],
                                     window=c["window"], compute_dtype=torch.float64)
    mask = harness.visibility_mask(nq, nk, c["causal"], c["bottom_right"], c["window"], DEVICE)
    scores8 = (q8, k8, descale_factors(q8, descales["q_descale"]),
               descale_factors(k8, descales["k_descale"]))
    emulated, emulated_lse = emulate_fp8(q, k, v, scale, mask, scores8, return_lse=True)
    row.update(judge(out, lse, ref, ref_lse, emulated, emulated_lse))
    return row


def describe(c):
    align = "br" if c["bottom_right"] else "tl"
    mask = f"causal-{align}" if c["causal"] else "full"
    if c["window"] != NO_WINDOW:
        mask += f" win{c['window']}-{align}"
    return (f"#{c['index']} d{c['d']} b{c['b']} {c['nq']}x{c['nk']} h{c['h']}/{c['hkv']} {mask} "
            f"q/k/v {'/'.join(c['quant'])} v {c['v_layout']}")


def print_case(r, seed):
    if "skipped" in r:
        print(f"skip {describe(r)}: {r['skipped']}", flush=True)
        return
    i = r["index"]
    rerun = "" if r["ok"] else f" (rerun: --seed {seed} --first {i} --cases {i + 1})"
    if "error" in r:
        print(f"FAIL {describe(r)}: {r['error']}{rerun}", flush=True)
        return
    notes = [f"{r['nan']} NaN in O" if r["nan"] else "",
             f"{r['empty_rows']} rows without keys" if r["empty_rows"] else "",
             "" if r["empty_rows_zero"] else "O not 0 there",
             "" if r["empty_lse_neginf"] else "LSE not -inf there",
             "" if r["poisoned"] else "outputs not in the poisoned blocks"]
    print(f"{'ok  ' if r['ok'] else 'FAIL'} {describe(r)}: err {r['err']:.2e}, emulation's "
          f"{r['emu_err']:.2e} ({r['ratio']:.2f}x), lse {r['lse_err']:.1e} (bound {r['lse_bound']:.1e})"
          f"{''.join('; ' + n for n in notes if n)}{rerun}", flush=True)


def run_correctness(drawn, seed):
    """The cases in order; after a fault the CUDA context is unusable and the rest
    would all fail, so they stop there."""
    results = []
    for c in drawn:
        r = run_case(c)
        results.append(r)
        print_case(r, seed)
        if r.get("fatal"):
            print("the CUDA context is lost: the remaining checks do not run", flush=True)
            break
    return results


def print_correctness(results):
    judged = [r for r in results if "skipped" not in r]
    skipped = collections.Counter(r["skipped"] for r in results if "skipped" in r)
    passed = sum(r["ok"] for r in judged)
    print(f"\nfp8 correctness: {passed}/{len(judged)} passed ({sum(skipped.values())} skipped)")
    measured = [r for r in judged if "err" in r]
    if measured:
        # worst_rel ranks a NaN above any number (max() would skip it).
        print(f"  worst: {harness.fmt(harness.worst_rel(r['ratio'] for r in measured), '.2f')}x "
              f"the emulation's error, LSE "
              f"{harness.fmt(harness.worst_rel(r['lse_err'] for r in measured), '.1e')}")
    for why, count in skipped.most_common():
        print(f"  skipped {count}: {why}")


# --------------------------------------------------------------------------------------
# sm_80 refusal, accuracy
# --------------------------------------------------------------------------------------


def run_sm80_refusal():
    """Under ATTNGEN_ARCH=sm_80 an FP8 call must raise an error that names sm_90a
    or FP8. In a fresh process: the package picks a device's arch once."""
    code = ("import torch, attngen\n"
            "x = torch.randn(1, 64, 2, 128, device='cuda').to(torch.float8_e4m3fn)\n"
            "attngen.attention(x, x, x)\n"
            "torch.cuda.synchronize()\n")
    env = dict(os.environ, ATTNGEN_ARCH="sm_80")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    message = (run.stderr.strip().splitlines() or ["(no output)"])[-1]
    ok = run.returncode != 0 and bool(re.search(r"sm_90a|fp8|float8|e4m3", message, re.I))
    why = "no error" if run.returncode == 0 else message[:300]
    print(f"{'ok  ' if ok else 'FAIL'} ATTNGEN_ARCH=sm_80 refuses FP8: {why}", flush=True)
    return dict(ok=ok, why=why)


def fa3_input(shape, outliers):
    """N(0, 1), with 0.1% of the entries N(0, 10) if `outliers` (FA3's), rounded to bf16."""
    x = torch.randn(shape, device=DEVICE)
    if outliers:
        x = torch.where(torch.rand(shape, device=DEVICE) < 1e-3,
                        10.0 * torch.randn(shape, device=DEVICE), x)
    return x.bfloat16()


def accuracy():
    """FA3's Table 3: RMSE of out against float64 attention on the unquantized
    (bf16) inputs, B 2, H 16, N 2048, d128, non-causal; each FP8 row beside the
    RMSE of its PyTorch emulation (what the kernel should come near). The
    quantize_fp8 rows quantize with attngen's kernel (a row it or attention
    refuses shows the error)."""
    b, h, n, d = 2, 16, 2048, 128
    scale = 1.0 / math.sqrt(d)
    methods = {**ACCURACY_METHODS, **QUANTIZE_FP8_METHODS}
    rows = {name: dict(method=name, paper=PAPER_RMSE.get(name)) for name in methods}
    for dist in ("outliers", "normal"):
        torch.manual_seed(3)
        q, k, v = (fa3_input((b, n, h, d), dist == "outliers") for _ in range(3))
        ref, _ = harness.reference(q, k, v, scale, compute_dtype=torch.float64)
        for name, granularity in methods.items():
            try:
                if granularity is None:
                    out, emulated = attngen.attention(q, k, v), None
                elif isinstance(granularity, tuple):  # attngen.quantize_fp8's
                    x = attngen.quantize_fp8(q, k, v, granularity=granularity[0],
                                             hadamard=granularity[1])
                    out = attngen.attention(x.q, x.k, x.v, **x.descales)
                    emulated = emulate_fp8(*dequantized(x), scale, None)
                else:
                    q8, k8, v8, descales = fp8_inputs(q, k, v, (granularity,) * 3)
                    out = attngen.attention(q8, k8, v_in_layout(v8, "kmajor"), **descales)
                    emulated = emulate_fp8(*(dequantize(x, descales[f"{key}_descale"])
                                             for x, key in ((q8, "q"), (k8, "k"), (v8, "v"))),
                                           scale, None)
                rows[name][dist] = rmse(out, ref)
                rows[name][dist + "_emulated"] = None if emulated is None else rmse(emulated, ref)
            except Exception as e:  # noqa: BLE001 -- reported in the table
                rows[name]["error"] = harness.short_error(e)
    return list(rows.values())


def print_accuracy(rows):
    print("\naccuracy (FA3 Table 3: B2 H16 N2048 d128 non-causal; RMSE vs float64 on the "
          "unquantized bf16 inputs)")
    harness.print_table(
        ["method", "N(0,1)+0.1% N(0,10)", "emulated", "N(0,1)", "emulated", "FA3 paper"],
        [[r["method"], harness.fmt(r.get("outliers"), ".2e"),
          harness.fmt(r.get("outliers_emulated"), ".2e"), harness.fmt(r.get("normal"), ".2e"),
          harness.fmt(r.get("normal_emulated"), ".2e"), harness.fmt(r["paper"], ".1e")]
         for r in rows])
    for r in rows:
        if "error" in r:
            print(f"  {r['method']}: {r['error']}")
    print("  (the quantize_fp8 rows: attngen.quantize_fp8's kernel; FA3's 9.1e-3 is block + "
          "Hadamard, on the outliers)")


# --------------------------------------------------------------------------------------
# Speed
# --------------------------------------------------------------------------------------


def time_interleaved(calls):
    """({name: median ms}, {name: error}): each call's rounds of harness.time_ms
    alternate with the others', so that a clock drift hits them all alike. A call
    that raises on its first (untimed) run is left out with its error."""
    live, errors = {}, {}
    for name, fn in calls.items():
        try:
            fn()
            torch.cuda.synchronize()
            live[name] = fn
        except Exception as e:  # noqa: BLE001 -- a peer may refuse a shape
            errors[name] = harness.short_error(e)
    samples = {name: [] for name in live}
    for _ in range(ROUNDS):
        for name, fn in live.items():
            samples[name].append(harness.time_ms(fn, WARMUP, ITERS))
    return {name: harness.median(s) for name, s in samples.items()}, errors


def gemm_ceiling():
    """TFLOPS of an FP8 GEMM GEMM_N^3 through torch._scaled_mm (row-major A,
    column-major B, one-element float32 scales, bf16 out), with and without fast
    accumulation, beside bf16's torch.matmul."""
    n = GEMM_N
    a, bt = (torch.randn(n, n, device=DEVICE).to(FP8) for _ in range(2))
    b = bt.t()  # column-major, as _scaled_mm wants its second operand
    one = torch.ones(1, device=DEVICE)
    a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
    ms, errors = time_interleaved({
        "fp8": lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
        "fp8_fast_accum": lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                                   out_dtype=torch.bfloat16, use_fast_accum=True),
        "bf16": lambda: torch.matmul(a16, b16)})
    result = {name: harness.tflops(2.0 * n ** 3, t) for name, t in ms.items()}
    result.update({name + "_error": why for name, why in errors.items()})
    print(f"GEMM {n}^3: FP8 {harness.fmt(result.get('fp8'))} (fast accumulation "
          f"{harness.fmt(result.get('fp8_fast_accum'))}), bf16 {harness.fmt(result.get('bf16'))} "
          f"TFLOPS{''.join(f'; {k}: {v}' for k, v in errors.items())}", flush=True)
    return result


def bench_row(d, n, causal):
    """One shape: FP8 with a K-major v and per-tensor descales, attngen bf16,
    SDPA's cuDNN and flash on the same bf16 inputs; at ABLATION also FP8 with a
    row-major v (attngen transposes it) and torch's own transposing copy of it."""
    b, h = harness.bench_batch(n), harness.bench_heads(d)
    q, k, v = (torch.randn(b, n, h, d, device=DEVICE, dtype=torch.bfloat16) for _ in range(3))
    q8, k8, v8, descales = fp8_inputs(q, k, v, ("tensor",) * 3)
    v_kmajor = v_in_layout(v8, "kmajor")
    calls = {"fp8": lambda: attngen.attention(q8, k8, v_kmajor, causal=causal, **descales),
             "bf16": lambda: attngen.attention(q, k, v, causal=causal),
             "cudnn": harness.sdpa_call("cudnn", q, k, v, causal),
             "flash": harness.sdpa_call("flash", q, k, v, causal)}
    if (d, n) == ABLATION:
        calls["fp8_rowmajor_v"] = lambda: attngen.attention(q8, k8, v8, causal=causal, **descales)
        calls["torch_v_copy"] = lambda: v8.view(torch.uint8).permute(0, 2, 3, 1).contiguous()
    ms, errors = time_interleaved(calls)
    flops = harness.attention_flops(b, h, n, n, d, causal)
    row = dict(d=d, n=n, b=b, h=h, causal=causal, flops=flops)
    for name in calls:
        row[name + "_ms"] = ms.get(name)
        if name != "torch_v_copy":
            row[name] = harness.tflops(flops, ms[name]) if name in ms else None
        if name in errors:
            row[name + "_error"] = errors[name]
    print(f"bench d{d} N{n} causal={causal}: fp8 {harness.fmt(row['fp8'])} bf16 "
          f"{harness.fmt(row['bf16'])} cuDNN {harness.fmt(row['cudnn'])} flash "
          f"{harness.fmt(row['flash'])} TFLOPS"
          f"{''.join(f'; {k}: {v}' for k, v in errors.items())}", flush=True)
    return row


def bench():
    return [bench_row(d, n, causal) for d in BENCH_DIMS for n in BENCH_N
            for causal in (False, True)]


def ratio(a, b):
    return a / b if a and b else None


def print_bench(rows, gemm):
    print(f"\nspeed (TFLOPS, bf16-equivalent 4*B*H*N^2*D, halved when causal; B*N = 16k, "
          f"H*D = 2048); FP8 GEMM {GEMM_N}^3 {harness.fmt(gemm.get('fp8'))}, fast accumulation "
          f"{harness.fmt(gemm.get('fp8_fast_accum'))}, bf16 {harness.fmt(gemm.get('bf16'))}")
    harness.print_table(
        ["d", "N", "causal", "fp8 TF", "bf16 TF", "fp8/bf16", "cuDNN TF", "fp8/cuDNN",
         "flash TF"],
        [[r["d"], r["n"], r["causal"], harness.fmt(r["fp8"]), harness.fmt(r["bf16"]),
          harness.fmt(ratio(r["fp8"], r["bf16"]), ".2f"), harness.fmt(r["cudnn"]),
          harness.fmt(ratio(r["fp8"], r["cudnn"]), ".2f"), harness.fmt(r["flash"])]
         for r in rows])
    ablation = [r for r in rows if "fp8_rowmajor_v_ms" in r]
    if ablation:
        print("\nv row-major (attngen copies it K-major) vs K-major, ms")
        harness.print_table(
            ["d", "N", "causal", "K-major v", "row-major v", "difference", "torch's copy"],
            [[r["d"], r["n"], r["causal"], harness.fmt(r["fp8_ms"], ".3f"),
              harness.fmt(r["fp8_rowmajor_v_ms"], ".3f"),
              harness.fmt(r["fp8_rowmajor_v_ms"] - r["fp8_ms"], ".3f")
              if r["fp8_ms"] and r["fp8_rowmajor_v_ms"] else "-",
              harness.fmt(r["torch_v_copy_ms"], ".3f")] for r in ablation])


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------


def main():
    global attngen
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument("--cases", type=int, default=120, help="random correctness cases")
    parser.add_argument("--first", type=int, default=0,
                        help="skip the cases before this one (0-based)")
    parser.add_argument("--seed", type=int, default=8, help="seed of the case draw")
    parser.add_argument("--no-bench", action="store_true", help="skip the speed section")
    parser.add_argument("--sanitize", action="store_true",
                        help="four small fixed cases only (for compute-sanitizer)")
    args = parser.parse_args()
    import attngen as module
    import attngen._torch_fp8
    attngen = module
    # Row-major v through the in-kernel transpose at every head dim (attention()
    # copies a d256 one K-major by default), so that its kernels stay checked.
    attngen._torch_fp8.TRANSPOSE_IN_KERNEL_UP_TO = 256
    harness.precise_float32()  # the emulation's float32 matmuls without TF32
    report = dict(environment=harness.environment(), args=vars(args))
    drawn = sanitize_cases() if args.sanitize else cases(args.cases, args.seed)
    results = report["cases"] = run_correctness(drawn[args.first:], args.seed)
    failed = sum(not r.get("ok", True) for r in results)
    alive = not any(r.get("fatal") for r in results)
    if alive and not args.sanitize:
        report["accuracy"] = accuracy()
        failed += sum("error" in r for r in report["accuracy"])
        if not args.no_bench:
            harness.warm_up_gpu()
            report["gemm"] = gemm_ceiling()
            report["bench"] = bench()
            failed += sum(any(r.get(name + "_error") for name in ("fp8", "bf16", "fp8_rowmajor_v"))
                          for r in report["bench"])
        report["sm80_refusal"] = run_sm80_refusal()
        failed += not report["sm80_refusal"]["ok"]
    print_correctness(results)
    if "accuracy" in report:
        print_accuracy(report["accuracy"])
    if "bench" in report:
        print_bench(report["bench"], report["gemm"])
    if args.json:
        harness.write_json(args.json, report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
