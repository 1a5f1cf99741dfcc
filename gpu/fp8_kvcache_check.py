#!/usr/bin/env python3
"""FP8 (e4m3) KV-cache decoding on sm_90a on a GPU: attngen.attention_with_kvcache
on float8_e4m3fn q, k_cache and v_cache with descales against a float32
reference on the dequantized inputs, and its speed beside attngen bf16 and
SDPA's cuDNN backend.

    ATTNGEN_LIBRARY=.../libattngen.so PYTHONPATH=python:gpu \\
        python3 gpu/fp8_kvcache_check.py [--cases N] [--seed S] [--first I] [--quick] \\
                                         [--no-bench] [--json OUT.json]

* Correctness: random ragged cases (N of them, 12 with --quick): B 1-4, Nq 1 to
  16, GQA 1:1 to 16:1, d64/128/256, contiguous caches (with rows of more
  sequences than the batch) and paged ones (pages of 16 to 512 rows, shuffled,
  spare pages),
  cache_seqlens with 0, 1, the capacity and lengths off the 128-key blocks, causal
  or not, sliding windows, soft caps and ALiBi on some, num_splits 0 (attngen's
  choice), 1, or forced (more than the key blocks included), each of q, k, v with
  no descale, one per tensor or one per (batch, kv head), LSE on some. Every
  cache row a sequence does not own is NaN (a row read into the result shows),
  and out and LSE are allocated into blocks just filled with NaN. The reference
  is float32 attention per sequence on q8.float() * q_descale, ... (their
  quantization is not the kernel's error). Pass (test_fp8.py's criterion: P is
  rounded to e4m3 before P V): max |O - ref| <= 0.08 max |ref|, no NaN, rows that
  see no key exactly 0 with LSE -inf, |LSE - ref| <= 1e-2 max(1, |ref|). The
  table of the worst errors follows.
* sm_80: under ATTNGEN_ARCH=sm_80 an FP8 KV-cache call raises an error that
  names sm_90a or FP8.
* Speed (skipped by --no-bench): decoding B=64, Nq=1, a cache of 8192 keys,
  H=32, Hkv=8, d128 (contiguous and pages of 64), d64 and d256 (3 shapes with
  --quick): FP8 (per (batch, kv head) descales) against attngen bf16 on the same
  shapes and SDPA's cuDNN backend on the bf16 tensors, CUDA events after warm-up,
  the calls' rounds interleaved; ms, effective HBM GB/s (the bytes of the K and
  V cache read, plus q and out, over the time) and the ratios.

Exit status 0 when every check passed; --json writes every figure.
"""

import argparse
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
#: e4m3's largest finite value: quantize maps each scale's amax to it.
E4M3_MAX = 448.0
#: The criterion (test_fp8.py's): max |O - ref| <= OUT_BOUND * max |ref|; LSE
#: within LSE_BOUND * max(1, |ref|).
OUT_BOUND = 0.08
LSE_BOUND = 1e-2
HEAD_DIMS = (64, 128, 256)
#: (H, Hkv): MHA and GQA 2:1 to 16:1 (head packs of 1 to 8).
HEADS = ((4, 4), (8, 2), (32, 8), (16, 1), (8, 1), (6, 2))
#: Pages an FP8 cache may have: dividing 128 or a multiple of it (0: contiguous).
PAGES = (0, 0, 16, 32, 64, 128, 256, 512)
SEQLEN_Q = (1, 1, 1, 2, 4, 8, 16)
SPLITS = (0, 0, 1, 2, 3, 7, 64)
DESCALES = ("none", "tensor", "head")

#: Speed: (d, page) at B=64, Nq=1, Nk=8192, H=32, Hkv=8 (decode_check's row).
BENCH_B, BENCH_NK, BENCH_H, BENCH_HKV = 64, 8192, 32, 8
BENCH_ROWS = ((128, 0), (64, 0), (256, 0), (128, 64))
#: Rounds of each call interleaved with the others; per round the untimed and
#: timed calls of harness.time_ms.
ROUNDS, WARMUP, ITERS = 5, 5, 20


# --------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------


def to_e4m3(x):
    """x rounded to e4m3, saturated (x / descale may land just past 448)."""
    return x.clamp(-E4M3_MAX, E4M3_MAX).to(FP8)


def quantize(x, kind, groups):
    """(x8, descale) of x [B, N, heads, D] (float): "none" no descale, "tensor"
    one (1,), "head" one per batch and each of `groups` groups of heads (B,
    groups): q's group is the key/value head its query heads share."""
    if kind == "none":
        return to_e4m3(x), None
    if kind == "tensor":
        descale = (x.abs().amax() / E4M3_MAX).clamp(min=1e-12).reshape(1)
        return to_e4m3(x / descale), descale
    b, n, heads, d = x.shape
    parts = x.reshape(b, n, groups, heads // groups, d)
    descale = (parts.abs().amax(dim=(1, 3, 4)) / E4M3_MAX).clamp(min=1e-12)
    return to_e4m3(parts / descale[:, None, :, None, None]).reshape(x.shape), descale


def dequantize(x8, descale, batch_index=None):
    """x8.float() * its descale, for x8 [B, N, heads, D] (or one sequence's rows
    [N, heads, D] of batch `batch_index`)."""
    x = x8.float()
    if descale is None:
        return x
    if descale.numel() == 1:
        return x * descale.reshape(1)
    groups = descale.shape[1]
    if batch_index is not None:
        n, heads, d = x.shape
        parts = x.reshape(n, groups, heads // groups, d) * descale[batch_index][None, :, None,
                                                                                None]
        return parts.reshape(x.shape)
    b, n, heads, d = x.shape
    parts = x.reshape(b, n, groups, heads // groups, d) * descale[:, None, :, None, None]
    return parts.reshape(x.shape)


def random_input(b, n, heads, groups, d):
    """N(0, 1) times a factor in [1/2, 2] per batch and group of heads, so that
    per-head descales differ from each other and from the per-tensor one."""
    factor = 2.0 ** torch.empty(b, 1, groups, 1, 1, device=DEVICE).uniform_(-1.0, 1.0)
    return (torch.randn(b, n, groups, heads // groups, d, device=DEVICE) * factor).reshape(
        b, n, heads, d)


def fill_nan(shape):
    """An e4m3 tensor of NaN bytes."""
    return torch.full(shape, float("nan"), device=DEVICE).to(FP8)


def build_cache(k8, v8, lengths, page, capacity, seed):
    """(k_cache, v_cache, block_table or None): k8 / v8 [B, capacity, Hkv, D]
    stored with each sequence's first lengths[b] rows, every other row NaN. A
    contiguous cache has 2 rows more than the batch (attngen reads the first B);
    a paged one's pages are shuffled with spare ones, its unused entries -1."""
    b, _, hkv, d = k8.shape
    if not page:
        kc, vc = fill_nan((b + 2, capacity, hkv, d)), fill_nan((b + 2, capacity, hkv, d))
        for i, n in enumerate(lengths):
            kc.view(torch.uint8)[i, :n] = k8.view(torch.uint8)[i, :n]
            vc.view(torch.uint8)[i, :n] = v8.view(torch.uint8)[i, :n]
        return kc, vc, None
    blocks = -(-capacity // page)
    pages = b * blocks + 5
    order = torch.randperm(pages, generator=torch.Generator().manual_seed(seed))
    table = order[:b * blocks].reshape(b, blocks).to(torch.int32)
    kc, vc = fill_nan((pages, page, hkv, d)), fill_nan((pages, page, hkv, d))
    for i, n in enumerate(lengths):
        used = -(-n // page)
        for j in range(used):
            lo, hi = j * page, min(n, (j + 1) * page)
            p = int(table[i, j])
            kc.view(torch.uint8)[p, :hi - lo] = k8.view(torch.uint8)[i, lo:hi]
            vc.view(torch.uint8)[p, :hi - lo] = v8.view(torch.uint8)[i, lo:hi]
        table[i, used:] = -1
    return kc, vc, table.to(DEVICE)


# --------------------------------------------------------------------------------------
# Reference and verdict
# --------------------------------------------------------------------------------------


def reference(q, keys, values, scale, causal, window, softcap, slopes):
    """float32 decoding on the dequantized q [B, Nq, H, D] over keys[b] /
    values[b] [L_b, Hkv, D]: harness.visible's rule bottom-right to L_b (causal,
    window), soft cap, then ALiBi's -slope |i + L_b - Nq - j|. Returns out
    [B, Nq, H, D] (0 where a row sees no key) and lse [B, H, Nq] (-inf there)."""
    b, nq, h, d = q.shape
    out = torch.zeros(b, nq, h, d, device=DEVICE)
    lse = torch.full((b, h, nq), -math.inf, device=DEVICE)
    for i in range(b):
        n = keys[i].shape[0]
        if n == 0:
            continue
        group = h // keys[i].shape[1]
        k = keys[i].repeat_interleave(group, dim=1)
        v = values[i].repeat_interleave(group, dim=1)
        s = torch.einsum("qhd,khd->hqk", q[i], k) * scale
        if softcap:
            s = softcap * torch.tanh(s / softcap)
        rows = torch.arange(nq, device=DEVICE)[:, None]
        cols = torch.arange(n, device=DEVICE)[None, :]
        if slopes is not None:
            s = s - slopes[i][:, None, None] * (rows + n - nq - cols).abs()
        seen = harness.visible(rows, cols, nq, n, causal, True, window)
        s = s.masked_fill(~seen, -math.inf)
        row_lse = torch.logsumexp(s, dim=-1)
        p = torch.exp(s - torch.where(torch.isinf(row_lse), 0.0, row_lse)[..., None])
        out[i] = torch.einsum("hqk,khd->qhd", p, v)
        lse[i] = row_lse
    return out, lse


def judge(out, lse, ref, ref_lse):
    """The verdict: err (max |O - ref| / max |ref|), rel (Frobenius), lse_err
    (max |LSE - ref| / max(1, |ref|) where a row sees a key), NaN, rows without
    keys (O exactly 0, LSE -inf), ok."""
    empty = torch.isinf(ref_lse)                      # [B, H, Nq]
    scale = max(ref.abs().max().item(), 1e-6)
    v = dict(err=(out.float() - ref).abs().max().item() / scale,
             rel=harness.rel_error(out, ref),
             nan=int(torch.isnan(out).sum().item()), empty_rows=int(empty.sum().item()),
             empty_rows_zero=bool((out[empty.transpose(1, 2)] == 0).all().item()))
    v["lse_err"] = 0.0
    v["empty_lse_neginf"] = True
    if lse is not None:
        seen = ~empty
        if seen.any():
            diff = (lse[seen] - ref_lse[seen]).abs() / ref_lse[seen].abs().clamp(min=1.0)
            v["lse_err"] = diff.max().item()
        v["empty_lse_neginf"] = bool(torch.isneginf(lse[empty]).all().item())
    v["ok"] = (v["nan"] == 0 and v["err"] <= OUT_BOUND and v["lse_err"] <= LSE_BOUND
               and v["empty_rows_zero"] and v["empty_lse_neginf"])
    return v


# --------------------------------------------------------------------------------------
# Correctness
# --------------------------------------------------------------------------------------


def draw_lengths(rng, b, capacity):
    """Per sequence: 0, 1, the capacity, a length just past a 128-key block, or
    any; at least one 0 and one off the blocks in batches of 3 or more."""
    choices = [0, 1, capacity, min(capacity, 128 * rng.randint(1, 8) + rng.randint(1, 3)),
               rng.randint(0, capacity), rng.randint(0, capacity)]
    lengths = [rng.choice(choices) for _ in range(b)]
    if b >= 3:
        lengths[0] = 0
        off = [n for n in range(1, capacity + 1) if n % 128]
        if off:
            lengths[1] = rng.choice(off)
        rng.shuffle(lengths)
    return lengths


def cases(count, seed):
    """`count` random cases, each with its own torch seed (--first reruns one)."""
    rng = random.Random(seed)
    drawn = []
    for index in range(count):
        h, hkv = rng.choice(HEADS)
        page = rng.choice(PAGES)
        capacity = rng.choice([rng.randint(1, 300), rng.randint(1, 3000), 1024])
        window = (-1, -1)
        if rng.random() < 0.2:
            window = (rng.choice([16, 100, 700]), rng.choice([0, 0, -1]))
        b = rng.randint(1, 4)
        drawn.append(dict(
            index=index, d=rng.choice(HEAD_DIMS), b=b, nq=rng.choice(SEQLEN_Q), h=h, hkv=hkv,
            page=page, capacity=capacity, lengths=draw_lengths(rng, b, capacity),
            causal=rng.random() < 0.5, window=window,
            softcap=rng.choice([0.0, 0.0, 0.0, 30.0]), alibi=rng.random() < 0.2,
            splits=rng.choice(SPLITS), quant=tuple(rng.choice(DESCALES) for _ in "qkv"),
            lse=rng.random() < 0.7, torch_seed=rng.randrange(1 << 31)))
    return drawn


def run_case(c):
    """One case: its row (ok, or the error)."""
    torch.manual_seed(c["torch_seed"])
    b, nq, h, hkv, d, cap = (c[k] for k in ("b", "nq", "h", "hkv", "d", "capacity"))
    q8, qd = quantize(random_input(b, nq, h, hkv, d), c["quant"][0], hkv)
    k8, kd = quantize(random_input(b, cap, hkv, hkv, d), c["quant"][1], hkv)
    v8, vd = quantize(random_input(b, cap, hkv, hkv, d), c["quant"][2], hkv)
    kc, vc, table = build_cache(k8, v8, c["lengths"], c["page"], cap, c["torch_seed"])
    lengths = torch.tensor(c["lengths"], dtype=torch.int32, device=DEVICE)
    slopes = torch.rand(b, h, device=DEVICE) * 0.1 if c["alibi"] else None
    row = dict(c)
    # Every input exists before the outputs' blocks are poisoned: O, then LSE
    # (the order the API allocates them).
    specs = [((b, nq, h, d), torch.bfloat16)] + ([((b, h, nq), torch.float32)]
                                                 if c["lse"] else [])
    addresses = harness.poison_next_allocations(specs)
    try:
        result = attngen.attention_with_kvcache(
            q8, kc, vc, lengths, table, causal=c["causal"], window_size=c["window"],
            softcap=c["softcap"], alibi_slopes=slopes, num_splits=c["splits"],
            return_lse=c["lse"], q_descale=qd, k_descale=kd, v_descale=vd)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 -- reported in the row
        return dict(row, ok=False, error=harness.short_error(e), fatal=harness.is_fatal(e))
    out, lse = result if c["lse"] else (result, None)
    row["poisoned"] = harness.reused_poisoned_blocks((out, lse), addresses)
    if out.dtype != torch.bfloat16 or tuple(out.shape) != (b, nq, h, d):
        return dict(row, ok=False, error=f"out {out.dtype} {list(out.shape)}; want bfloat16 "
                                         f"{[b, nq, h, d]}")
    q = dequantize(q8, qd)
    keys = [dequantize(k8[i, :n], kd, i) for i, n in enumerate(c["lengths"])]
    values = [dequantize(v8[i, :n], vd, i) for i, n in enumerate(c["lengths"])]
    ref, ref_lse = reference(q, keys, values, d ** -0.5, c["causal"], c["window"],
                             c["softcap"], slopes)
    row.update(judge(out, lse, ref, ref_lse))
    return row


def describe(c):
    mask = "causal" if c["causal"] else "full"
    if c["window"] != (-1, -1):
        mask += f" win{c['window']}"
    if c["softcap"]:
        mask += f" cap{c['softcap']:g}"
    if c["alibi"]:
        mask += " alibi"
    where = f"page{c['page']}" if c["page"] else "contig"
    return (f"#{c['index']} d{c['d']} b{c['b']} nq{c['nq']} h{c['h']}/{c['hkv']} {where} "
            f"cap{c['capacity']} L{c['lengths']} {mask} splits{c['splits']} "
            f"q/k/v {'/'.join(c['quant'])}")


def print_case(r, seed):
    i = r["index"]
    rerun = "" if r["ok"] else f" (rerun: --seed {seed} --first {i} --cases {i + 1})"
    if "error" in r:
        print(f"FAIL {describe(r)}: {r['error']}{rerun}", flush=True)
        return
    notes = [f"{r['nan']} NaN in O" if r["nan"] else "",
             "" if r["empty_rows_zero"] else "O not 0 where no key",
             "" if r["empty_lse_neginf"] else "LSE not -inf where no key",
             "" if r["poisoned"] else "outputs not in the poisoned blocks"]
    print(f"{'ok  ' if r['ok'] else 'FAIL'} {describe(r)}: err {r['err']:.2e} (rel "
          f"{r['rel']:.2e}), lse {r['lse_err']:.1e}, {r['empty_rows']} rows without keys"
          f"{''.join('; ' + n for n in notes if n)}{rerun}", flush=True)


def run_correctness(drawn, seed):
    """The cases in order, stopping after a fault (the CUDA context is lost)."""
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
    passed = sum(r["ok"] for r in results)
    print(f"\nfp8 kv-cache correctness: {passed}/{len(results)} passed")
    measured = [r for r in results if "err" in r]
    # The failures first, then the largest errors (NaN above any number).
    worst = sorted(measured, key=lambda r: (r["ok"], -harness.worst_rel([r["err"]])))[:8]
    print(f"worst errors (bound: max |O - ref| <= {OUT_BOUND} max |ref|, LSE <= {LSE_BOUND})")
    harness.print_table(
        ["case", "max err / max |ref|", "rel (Frobenius)", "LSE err", "empty rows", "ok"],
        [[describe(r), harness.fmt(r["err"], ".2e"), harness.fmt(r["rel"], ".2e"),
          harness.fmt(r["lse_err"], ".1e"), r["empty_rows"], "ok" if r["ok"] else "FAIL"]
         for r in worst])
    for r in results:
        if "error" in r:
            print(f"  error: {describe(r)}: {r['error']}")


# --------------------------------------------------------------------------------------
# sm_80 refusal
# --------------------------------------------------------------------------------------


def run_sm80_refusal():
    """Under ATTNGEN_ARCH=sm_80 an FP8 KV-cache call must raise an error that
    names sm_90a or FP8. In a fresh process: the package picks the arch once."""
    code = ("import torch, attngen\n"
            "q = torch.randn(2, 1, 8, 128, device='cuda').to(torch.float8_e4m3fn)\n"
            "k = torch.randn(2, 256, 2, 128, device='cuda').to(torch.float8_e4m3fn)\n"
            "attngen.attention_with_kvcache(q, k, k, 100)\n"
            "torch.cuda.synchronize()\n")
    env = dict(os.environ, ATTNGEN_ARCH="sm_80")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    message = (run.stderr.strip().splitlines() or ["(no output)"])[-1]
    ok = run.returncode != 0 and bool(re.search(r"sm_90a|fp8|float8|e4m3", message, re.I))
    why = "no error" if run.returncode == 0 else message[:300]
    print(f"{'ok  ' if ok else 'FAIL'} ATTNGEN_ARCH=sm_80 refuses FP8 KV caches: {why}",
          flush=True)
    return dict(ok=ok, why=why)


# --------------------------------------------------------------------------------------
# Speed
# --------------------------------------------------------------------------------------


def time_interleaved(calls):
    """({name: median ms}, {name: error}): each call's rounds of harness.time_ms
    alternate with the others', so that a clock drift hits them all alike. A
    call that raises on its first (untimed) run is left out with its error."""
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


def paged(k, v, perm):
    """(k_cache, v_cache, block_table): k, v [B, N, Hkv, D] in pages of N * B /
    len(perm) rows, sequence b's block j in page perm[b * blocks + j]. Bytes
    move as uint8 (float8 has few torch ops)."""
    b, n, hkv, d = k.shape
    blocks = perm.numel() // b
    page = n // blocks
    kc = torch.empty(b * blocks, page, hkv, d, device=DEVICE, dtype=k.dtype)
    vc = torch.empty_like(kc)
    for cache, x in ((kc, k), (vc, v)):
        raw = x.view(torch.uint8)
        cache.view(torch.uint8)[perm] = raw.reshape(b * blocks, page, hkv, raw.shape[-1])
    return kc, vc, perm.reshape(b, blocks).to(torch.int32)


def sdpa_peer(q, k, v, backend):
    """SDPA on (B, H, N, D) views, GQA through enable_gqa where the backend takes
    it, else with the key/value heads repeated; (call, how) (decode_check's)."""
    try:
        run = harness.sdpa_call(backend, q, k, v)
        run()
        return run, "enable_gqa"
    except (RuntimeError, TypeError):
        run = harness.sdpa_call(backend, q, k, v, repeat_heads=True)
        run()
        return run, "repeated heads"


def bench_row(d, page):
    """One decoding shape: FP8 (per (batch, kv head) descales) beside attngen
    bf16 on the same shape and SDPA cuDNN on the bf16 tensors (contiguous)."""
    b, nk, h, hkv = BENCH_B, BENCH_NK, BENCH_H, BENCH_HKV
    torch.manual_seed(11)
    q = torch.randn(b, 1, h, d, device=DEVICE, dtype=torch.bfloat16)
    k = torch.randn(b, nk, hkv, d, device=DEVICE, dtype=torch.bfloat16)
    v = torch.randn(b, nk, hkv, d, device=DEVICE, dtype=torch.bfloat16)
    q8, qd = quantize(q.float(), "head", hkv)
    k8, kd = quantize(k.float(), "head", hkv)
    v8, vd = quantize(v.float(), "head", hkv)
    lengths = torch.full((b,), nk, dtype=torch.int32, device=DEVICE)
    row = dict(d=d, page=page, b=b, nk=nk, h=h, hkv=hkv)
    calls = {}
    if not page:  # the peer reads contiguous bf16 K and V
        try:
            calls["cudnn"], row["cudnn_gqa"] = sdpa_peer(q, k, v, "cudnn")
        except Exception as e:  # noqa: BLE001 -- a backend may refuse the shape
            row["cudnn_error"] = harness.short_error(e)
    table = None
    if page:  # the same shuffled pages for both caches
        perm = torch.randperm(b * nk // page, device=DEVICE)
        k8, v8, table = paged(k8, v8, perm)
        k, v, _ = paged(k, v, perm)
    calls["fp8"] = lambda: attngen.attention_with_kvcache(q8, k8, v8, lengths, table,
                                                          q_descale=qd, k_descale=kd,
                                                          v_descale=vd)
    calls["bf16"] = lambda: attngen.attention_with_kvcache(q, k, v, lengths, table)
    ms, errors = time_interleaved(calls)
    tokens = b * 1 * h * d  # q's and out's elements
    kv = b * nk * hkv * d * 2  # K's and V's elements
    moved = {"fp8": kv * 1 + tokens * 1 + tokens * 2, "bf16": kv * 2 + tokens * 4,
             "cudnn": kv * 2 + tokens * 4}
    for name in calls:
        row[name + "_ms"] = ms.get(name)
        row[name + "_gbps"] = harness.gbps(moved[name], ms[name]) if name in ms else None
        if name in errors:
            row[name + "_error"] = errors[name]
    row["bf16_over_fp8"] = ratio(row.get("bf16_ms"), row.get("fp8_ms"))
    row["cudnn_over_fp8"] = ratio(row.get("cudnn_ms"), row.get("fp8_ms"))
    # The FP8 result beside bf16's on the same (unquantized) inputs.
    if "fp8" in ms and "bf16" in ms:
        row["rel_fp8_vs_bf16"] = harness.rel_error(calls["fp8"](), calls["bf16"]())
    print(f"bench d{d} {'page' + str(page) if page else 'contig'}: fp8 "
          f"{harness.fmt(row['fp8_ms'], '.3f')} ms ({harness.fmt(row['fp8_gbps'], '.0f')} GB/s), "
          f"bf16 {harness.fmt(row['bf16_ms'], '.3f')} ms, cuDNN "
          f"{harness.fmt(row.get('cudnn_ms'), '.3f')} ms"
          f"{''.join(f'; {k}: {v}' for k, v in errors.items())}", flush=True)
    return row


def ratio(a, b):
    return a / b if a and b else None


def print_bench(rows):
    print(f"\nFP8 KV-cache decoding, B={BENCH_B} Nq=1 Nk={BENCH_NK} H={BENCH_H} Hkv={BENCH_HKV} "
          "(GB/s: K + V cache + q + out bytes / time; x: the other's time / FP8's; cuDNN on "
          "contiguous bf16 K and V)")
    harness.print_table(
        ["d", "cache", "fp8 ms", "GB/s", "bf16 ms", "GB/s", "bf16/fp8", "cuDNN ms", "GB/s",
         "cuDNN/fp8", "rel fp8 vs bf16"],
        [[r["d"], f"page{r['page']}" if r["page"] else "contig",
          harness.fmt(r["fp8_ms"], ".3f"), harness.fmt(r["fp8_gbps"], ".0f"),
          harness.fmt(r["bf16_ms"], ".3f"), harness.fmt(r["bf16_gbps"], ".0f"),
          harness.fmt(r["bf16_over_fp8"], ".2f"), harness.fmt(r.get("cudnn_ms"), ".3f"),
          harness.fmt(r.get("cudnn_gbps"), ".0f"), harness.fmt(r["cudnn_over_fp8"], ".2f"),
          harness.fmt(r.get("rel_fp8_vs_bf16"), ".2e")] for r in rows])


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------


def main():
    global attngen
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument("--cases", type=int, default=150, help="random correctness cases")
    parser.add_argument("--first", type=int, default=0,
                        help="skip the cases before this one (0-based)")
    parser.add_argument("--seed", type=int, default=3, help="seed of the case draw")
    parser.add_argument("--quick", action="store_true",
                        help="12 cases and three benchmark shapes")
    parser.add_argument("--no-bench", action="store_true", help="skip the speed section")
    args = parser.parse_args()
    import attngen as module
    attngen = module
    harness.precise_float32()  # the reference's float32 matmuls without TF32
    print(f"attngen {attngen.__version__}, {torch.cuda.get_device_name()}, torch "
          f"{torch.__version__}, arch {attngen.device_arch()}", flush=True)
    report = dict(environment=harness.environment(), args=vars(args))
    drawn = cases(12 if args.quick else args.cases, args.seed)
    results = report["cases"] = run_correctness(drawn[args.first:], args.seed)
    failed = sum(not r["ok"] for r in results)
    alive = not any(r.get("fatal") for r in results)
    if alive:
        report["sm80_refusal"] = run_sm80_refusal()
        failed += not report["sm80_refusal"]["ok"]
        if not args.no_bench:
            harness.warm_up_gpu()
            shapes = BENCH_ROWS[:3] if args.quick else BENCH_ROWS
            report["bench"] = [bench_row(d, page) for d, page in shapes]
            failed += sum(bool(r.get("fp8_error") or r.get("bf16_error"))
                          for r in report["bench"])
    print_correctness(results)
    if "bench" in report:
        print_bench(report["bench"])
    report["passed"] = failed == 0
    if args.json:
        harness.write_json(args.json, report)
    print(f"fp8_kvcache_check: {'all checks passed' if failed == 0 else 'SOME CHECKS FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
