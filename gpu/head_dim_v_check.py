#!/usr/bin/env python3
"""A value head dim of its own (head_dim_v, issue 21 section 1) on a GPU: the
forward against a float32 reference with flash_attn's criterion, and its speed
beside the same problem with V padded to Q's head dim and cuDNN's SDPA.

    ATTNGEN_LIBRARY=.../libattngen.so PYTHONPATH=python:gpu \\
        python3 gpu/head_dim_v_check.py [--json OUT.json] [--cases N] [--no-bench]

Cases are ragged (Nq != Nk, lengths that are not tile multiples) with q and k
of head dim D and v of Dv (192/128 as DeepSeek's, 64/128, 128/64, 256/128,
96/64, 128/256), causal in both alignments, windows, soft caps, GQA, bf16 and
f16, through attngen.attention, attention_varlen (packed sequences, one of
them without keys) and flash_attn_interface; the output is poisoned first.
Decoding cases (--kv-cases) read contiguous and paged caches whose rows past
each length hold NaN, through attention_with_kvcache (splits forced or
chosen), flash_attn_with_kvcache (appending k and v) and attention() on 1-16
query rows.
The criterion: max |O - O_fp32| <= 2 x PyTorch's error (the same math in the
inputs' dtype) + 1e-5, and the LSE within 1e-3 of float32's. Autograd runs
the backward pair (gradients against float32; gpu/backward_check.py has the
full gradient cases); --backward-bench times it against cuDNN's backward.
ATTNGEN_ARCH=sm_80 checks the sm_80 kernels. Exit status 0 when every check
passed.
"""

import argparse
import math
import random
import sys

import torch

import harness

attngen = None
LSE_TOLERANCE = 1e-3
PAIRS = [(192, 128), (192, 128), (64, 128), (128, 64), (256, 128), (96, 64), (128, 256)]


def torch_math(q, k, v, scale, c, dtype, bottom_right):
    """(O, LSE) with the scores and P V in `dtype`, the softmax in float32:
    `dtype` float32 is the reference, the inputs' dtype PyTorch's own."""
    group = q.shape[2] // k.shape[2]
    nq, nk = q.shape[1], k.shape[1]
    q, k, v = (t.to(dtype) for t in (q, k, v))
    kk, vv = k.repeat_interleave(group, 2), v.repeat_interleave(group, 2)
    s = torch.einsum("bthd,bshd->bhts", q, kk).float() * scale
    if c["cap"]:
        s = c["cap"] * torch.tanh(s / c["cap"])
    mask = harness.visibility_mask(nq, nk, c["causal"], bottom_right, c["window"], q.device)
    if mask is not None:
        s = s.masked_fill(~mask, -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return torch.einsum("bhts,bshd->bthd", p.to(dtype), vv).float(), lse


def judge(out, lse, ref, ref_lse, theirs):
    err = (out.float() - ref).abs().max().item() if out.numel() else 0.0
    pt = (theirs - ref).abs().max().item() if out.numel() else 0.0
    seen = torch.isfinite(ref_lse)
    lse_err = (lse[seen] - ref_lse[seen]).abs().max().item() if seen.any() else 0.0
    ok = (tuple(out.shape) == tuple(ref.shape) and err <= 2 * pt + 1e-5
          and bool(torch.isfinite(out).all()) and lse_err <= LSE_TOLERANCE
          and torch.equal(torch.isinf(lse), ~seen))
    return ok, err, pt, lse_err


def run_dense(c, results):
    torch.manual_seed(len(results) + 1)
    dtype, d, dv = c["dtype"], c["d"], c["dv"]
    q = torch.randn(c["b"], c["nq"], c["h"], d, device="cuda", dtype=dtype)
    k = torch.randn(c["b"], c["nk"], c["hkv"], d, device="cuda", dtype=dtype)
    v = torch.randn(c["b"], c["nk"], c["hkv"], dv, device="cuda", dtype=dtype)
    scale = 1.0 / math.sqrt(d)
    br = c["bottom_right"]
    # The API allocates the LSE, then O: poison both blocks, check O's.
    addresses = harness.poison_next_allocations(
        [((c["b"], c["h"], c["nq"]), torch.float32), ((*q.shape[:-1], dv), dtype)])[1:]
    if c["via"] == "flash_attn":
        from attngen import flash_attn_interface as fa
        out, lse, _ = fa.flash_attn_func(q, k, v, causal=c["causal"], window_size=c["window"],
                                         softcap=c["cap"], return_attn_probs=True)
        lse = lse.masked_fill(torch.isposinf(lse), -math.inf)  # FA's +inf: no key
    else:
        out, lse = attngen.attention(q, k, v, causal=c["causal"],
                                     causal_align="bottom-right" if br else "top-left",
                                     softcap=c["cap"], window_size=c["window"],
                                     return_lse=True)
    poisoned = harness.reused_poisoned_blocks((out,), addresses)
    torch.cuda.synchronize()
    ref, ref_lse = torch_math(q, k, v, scale, c, torch.float32, br)
    theirs, _ = torch_math(q, k, v, scale, c, dtype, br)
    ok, err, pt, lse_err = judge(out, lse, ref, ref_lse, theirs)
    return record(c, results, ok, err, pt, lse_err, poisoned)


def run_varlen(c, results):
    """Packed sequences, one of them without keys, through attention_varlen."""
    torch.manual_seed(len(results) + 1)
    dtype, d, dv, lens = c["dtype"], c["d"], c["dv"], c["lens"]
    cq = harness.cu_seqlens([a for a, _ in lens])
    ck = harness.cu_seqlens([b for _, b in lens])
    cu_q = torch.tensor(cq, device="cuda", dtype=torch.int32)
    cu_k = torch.tensor(ck, device="cuda", dtype=torch.int32)
    q = torch.randn(cq[-1], c["h"], d, device="cuda", dtype=dtype)
    k = torch.randn(ck[-1], c["hkv"], d, device="cuda", dtype=dtype)
    v = torch.randn(ck[-1], c["hkv"], dv, device="cuda", dtype=dtype)
    scale = 1.0 / math.sqrt(d)
    br = c["bottom_right"]
    addresses = harness.poison_next_allocations(
        [((c["h"], cq[-1]), torch.float32), ((cq[-1], c["h"], dv), dtype)])[1:]
    out, lse = attngen.attention_varlen(
        q, k, v, cu_q, cu_k, max(a for a, _ in lens), max(b for _, b in lens),
        causal=c["causal"], window_size=c["window"], softcap=c["cap"], return_lse=True,
        causal_align="bottom-right" if br else "top-left")
    poisoned = harness.reused_poisoned_blocks((out,), addresses)
    torch.cuda.synchronize()
    ok_all, errs = tuple(out.shape) == (cq[-1], c["h"], dv), []
    for i, (nq, nk) in enumerate(lens):
        if nq == 0:
            continue
        got_o, got_l = out[cq[i]:cq[i + 1]][None], lse[:, cq[i]:cq[i + 1]][None]
        if nk == 0:
            ok_all &= bool((got_o == 0).all()) and bool(torch.isneginf(got_l).all())
            continue
        qi, ki, vi = q[cq[i]:cq[i + 1]][None], k[ck[i]:ck[i + 1]][None], v[ck[i]:ck[i + 1]][None]
        ref, ref_lse = torch_math(qi, ki, vi, scale, c, torch.float32, br)
        theirs, _ = torch_math(qi, ki, vi, scale, c, dtype, br)
        ok, err, pt, lse_err = judge(got_o, got_l, ref, ref_lse, theirs)
        ok_all &= ok
        errs.append((err, pt, lse_err))
    err = max((e for e, _, _ in errs), default=0.0)
    pt = max((p for _, p, _ in errs), default=0.0)
    lse_err = max((x for _, _, x in errs), default=0.0)
    return record(c, results, ok_all, err, pt, lse_err, poisoned)


def run_kvcache(c, results):
    """Decoding with a value head dim of its own: attention_with_kvcache on a
    contiguous or paged cache (pages shuffled in a larger pool), forced or
    chosen splits; flash_attn_with_kvcache appending k and v first; or
    attention() on few query rows (the KV-cache kernels). Cache rows past each
    sequence's length hold NaN; a sequence may have no key."""
    torch.manual_seed(len(results) + 1)
    dtype, d, dv, b, h, hkv = (c[key] for key in ("dtype", "d", "dv", "b", "h", "hkv"))
    nq, cap, lens, page = c["nq"], c["capacity"], c["lens"], c["page"]
    nan = float("nan")
    q = torch.randn(b, nq, h, d, device="cuda", dtype=dtype)
    k_full = torch.randn(b, cap, hkv, d, device="cuda", dtype=dtype)
    v_full = torch.randn(b, cap, hkv, dv, device="cuda", dtype=dtype)
    k_cache, v_cache = k_full.clone(), v_full.clone()
    new = c.get("new", 0)
    for i, n in enumerate(lens):
        k_cache[i, n - new:], v_cache[i, n - new:] = nan, nan
    table = None
    if page:
        pages = cap // page
        pool = b * pages + 3
        order = torch.randperm(pool, device="cuda")[:b * pages]
        table = order.view(b, pages).to(torch.int32)
        kp = torch.full((pool, page, hkv, d), nan, device="cuda", dtype=dtype)
        vp = torch.full((pool, page, hkv, dv), nan, device="cuda", dtype=dtype)
        kp[order] = k_cache.reshape(b * pages, page, hkv, d)
        vp[order] = v_cache.reshape(b * pages, page, hkv, dv)
        k_cache, v_cache = kp, vp
    seqlens = torch.tensor(lens, device="cuda", dtype=torch.int32)
    window = c["window"]
    if c["via"] == "flash_kvcache":
        from attngen import flash_attn_interface as fa
        rows = torch.stack([torch.arange(n - new, n, device="cuda") for n in lens])
        k_new = torch.stack([k_full[i, rows[i]] for i in range(b)])
        v_new = torch.stack([v_full[i, rows[i]] for i in range(b)])
        out, lse = fa.flash_attn_with_kvcache(
            q, k_cache, v_cache, k_new, v_new, cache_seqlens=seqlens - new, block_table=table,
            causal=c["causal"], window_size=window, softcap=c["cap"],
            num_splits=c["splits"], return_softmax_lse=True)
        lse = lse.masked_fill(torch.isposinf(lse), -math.inf)  # FA's +inf: no key
    elif c["via"] == "decode":
        n = lens[0]  # one length: attention() takes dense k and v
        out, lse = attngen.attention(q, k_full[:, :n], v_full[:, :n], causal=c["causal"],
                                     window_size=window, softcap=c["cap"], return_lse=True)
    else:
        out, lse = attngen.attention_with_kvcache(
            q, k_cache, v_cache, seqlens, table, causal=c["causal"], window_size=window,
            softcap=c["cap"], return_lse=True, num_splits=c["splits"])
    torch.cuda.synchronize()
    scale = 1.0 / math.sqrt(d)
    ok_all, errs = tuple(out.shape) == (b, nq, h, dv), []
    for i, n in enumerate(lens):
        got_o, got_l = out[i:i + 1], lse[i:i + 1]
        if n == 0:
            ok_all &= bool((got_o == 0).all()) and bool(torch.isneginf(got_l).all())
            continue
        ki, vi = k_full[i:i + 1, :n], v_full[i:i + 1, :n]
        ref, ref_lse = torch_math(q[i:i + 1], ki, vi, scale, c, torch.float32, True)
        theirs, _ = torch_math(q[i:i + 1], ki, vi, scale, c, dtype, True)
        ok, err, pt, lse_err = judge(got_o, got_l, ref, ref_lse, theirs)
        ok_all &= ok
        errs.append((err, pt, lse_err))
    err = max((e for e, _, _ in errs), default=0.0)
    pt = max((p for _, p, _ in errs), default=0.0)
    lse_err = max((x for _, _, x in errs), default=0.0)
    return record(c, results, ok_all, err, pt, lse_err, True)


def kv_cases(count):
    """`count` random decoding cases (run_kvcache): 1-16 query rows, GQA packed
    or not, caches of 1-3000 keys, lengths 0 to the capacity, pages of 64 or
    256, splits 1, 3 or chosen, causal, windows, soft caps."""
    rng = random.Random(2112)
    drawn = []
    for _ in range(count):
        d, dv = rng.choice([(192, 128), (192, 128), (64, 128), (128, 64), (256, 128), (128, 256)])
        via = rng.choice(["kvcache", "kvcache", "flash_kvcache", "decode"])
        page = 0 if via == "decode" else rng.choice([0, 64, 256])
        capacity = rng.randint(1, 3000)
        if page:
            capacity = -(-capacity // page) * page
        b = 1 if via == "decode" else rng.randint(1, 4)
        new = rng.randint(1, 3) if via == "flash_kvcache" else 0
        lens = [capacity if via == "decode" else rng.choice([0, rng.randint(0, capacity),
                                                             capacity])
                for _ in range(b)]
        lens = [max(n, new) for n in lens]
        causal = rng.random() < 0.5
        window = rng.choice([(-1, -1), (-1, -1), (200, 0)]) if causal else (-1, -1)
        h, hkv = rng.choice([(4, 4), (8, 2), (16, 2), (6, 1)])
        drawn.append(dict(d=d, dv=dv, b=b, h=h, hkv=hkv, nq=rng.randint(1, 16), capacity=capacity,
                          lens=lens, page=page, new=new, splits=rng.choice([1, 0, 3]),
                          causal=causal, bottom_right=True, window=window,
                          cap=rng.choice([0.0, 0.0, 30.0]),
                          dtype=rng.choice([torch.bfloat16, torch.float16]), via=via))
    return drawn


def record(c, results, ok, err, pt, lse_err, poisoned):
    row = {key: (str(value) if key == "dtype" else value) for key, value in c.items()}
    row.update(ok=ok, err=err, pytorch_err=pt, ratio=err / max(pt, 1e-12), lse_err=lse_err,
               poisoned=poisoned)
    results.append(row)
    shape = (f"b{c['b']} nq{c['nq']} cache {c['capacity']} page {c['page']} lens={c['lens']} "
             f"new {c['new']} splits {c['splits']}" if "capacity" in c
             else f"lens={c['lens']}" if "lens" in c else f"b{c['b']} {c['nq']}x{c['nk']}")
    print(f"{'ok  ' if ok else 'FAIL'} {c['via']} d{c['d']}v{c['dv']} {shape} "
          f"h{c['h']}/{c['hkv']} {str(c['dtype'])[6:]} causal={c['causal']} "
          f"br={c['bottom_right']} win={c['window']} cap={c['cap']}: err {err:.2e}, "
          f"PyTorch's {pt:.2e} ({row['ratio']:.2f}x), lse {lse_err:.1e}"
          f"{'' if poisoned else ' (output not in the poisoned block)'}", flush=True)
    return ok


def cases(count, same_dv=False):
    """`count` random cases; with `same_dv` the same draws with v as wide as
    q (the plain kernels: a control for a failure)."""
    rng = random.Random(1928)
    drawn = []
    for _ in range(count):
        causal, br = rng.choice([(False, True), (False, False), (True, True), (True, False)])
        window = rng.choice([(-1, -1), (-1, -1), (-1, -1), (100, 0), (64, 33)])
        if causal and window != (-1, -1):
            window = (window[0], 0)
        h, hkv = rng.choice([(4, 4), (8, 2), (6, 1)])
        via = rng.choice(["attention", "attention", "varlen", "flash_attn"])
        if via == "flash_attn":
            br = True
        d, dv = rng.choice(PAIRS)
        dv = d if same_dv else dv
        case = dict(d=d, dv=dv, h=h, hkv=hkv, causal=causal, bottom_right=br, window=window,
                    cap=rng.choice([0.0, 0.0, 30.0]),
                    dtype=rng.choice([torch.bfloat16, torch.bfloat16, torch.float16]), via=via)
        if via == "varlen":
            lens = [(rng.randint(1, 700), rng.randint(1, 700)) for _ in range(rng.randint(1, 4))]
            lens.insert(rng.randint(0, len(lens)), (rng.randint(1, 50), 0))
            case["lens"] = lens
        else:
            case.update(b=rng.choice([1, 2]), nq=rng.randint(1, 1500), nk=rng.randint(1, 1500))
        drawn.append(case)
    return drawn


def run_autograd():
    """Autograd through a 192/128 call runs the backward pair: the gradients
    against float32 autograd of the same math (relative error)."""
    torch.manual_seed(9)
    q, k = (torch.randn(1, 150, 4, 192, device="cuda", dtype=torch.bfloat16,
                        requires_grad=True) for _ in range(2))
    v = torch.randn(1, 150, 4, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dout = torch.randn(1, 150, 4, 128, device="cuda", dtype=torch.bfloat16)
    attngen.attention(q, k, v, causal=True).backward(dout)
    qf, kf, vf = (t.detach().float().requires_grad_() for t in (q, k, v))
    s = torch.einsum("bthd,bshd->bhts", qf, kf) / 192 ** 0.5
    s = s.masked_fill(torch.ones(150, 150, device="cuda", dtype=torch.bool).triu(1), -1e30)
    torch.einsum("bhts,bshd->bthd", s.softmax(-1), vf).backward(dout.float())
    errs = [((g.float() - w).norm() / w.norm()).item()
            for g, w in zip((q.grad, k.grad, v.grad), (qf.grad, kf.grad, vf.grad))]
    ok = max(errs) < 2e-2
    print(f"{'ok  ' if ok else 'FAIL'} autograd 192/128: relative errors dq {errs[0]:.1e} "
          f"dk {errs[1]:.1e} dv {errs[2]:.1e}", flush=True)
    return ok


def bench_backward(rows, pairs):
    """The backward pair's speed with a value head dim of its own beside
    SDPA's cuDNN backward on the same tensors: B*N = 16k, 16 heads, FLOPs
    2.5 * 2 * B * H * N * N * (D + Dv), halved when causal."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for d, dv in pairs:
        for n in (1024, 8192):
            for causal in (False, True):
                b, h = 16384 // n, 16
                q, k = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16)
                        for _ in range(2))
                v = torch.randn(b, n, h, dv, device="cuda", dtype=torch.bfloat16)
                dout = torch.randn(b, n, h, dv, device="cuda", dtype=torch.bfloat16)
                out, lse = attngen.attention(q, k, v, causal=causal, return_lse=True)
                flops = 2.5 * 2.0 * b * h * n * n * (d + dv) / (2 if causal else 1)
                row = dict(d=d, dv=dv, n=n, causal=causal, part="backward")

                def ours():
                    return attngen.attention_backward(dout, q, k, v, out, lse, causal=causal)
                ms, why = harness.try_time(ours, 3, 10)
                row["attngen"], row["attngen_error"] = (harness.tflops(flops, ms) if ms
                                                        else None), why
                try:
                    qt, kt, vt = (t.detach().transpose(1, 2).requires_grad_() for t in (q, k, v))
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        o = torch.nn.functional.scaled_dot_product_attention(
                            qt, kt, vt, is_causal=causal)
                    dot = dout.transpose(1, 2)

                    def theirs():
                        return torch.autograd.grad(o, (qt, kt, vt), dot, retain_graph=True)
                    pms, pwhy = harness.try_time(theirs, 3, 10)
                except Exception as e:  # noqa: BLE001
                    pms, pwhy = None, harness.short_error(e)
                row["cudnn"], row["cudnn_error"] = (harness.tflops(flops, pms) if pms
                                                    else None), pwhy
                rows.append(row)
                print(f"backward d{d}v{dv} N{n} causal={causal}: attngen "
                      f"{harness.fmt(row['attngen'])} cuDNN {harness.fmt(row['cudnn'])} TFLOPS"
                      f"{'' if row['cudnn'] else ' (cuDNN: ' + str(row['cudnn_error']) + ')'}",
                      flush=True)


def bench(rows, pairs):
    """B*N = 16k, 16 heads: head_dim_v against the same call with V padded to
    Q's head dim (what a caller does without it) and SDPA's cuDNN backend
    (which takes a V head dim of its own where it supports one). FLOPs:
    2 * B * H * Nq * Nk * (D + Dv), halved when causal."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for d, dv in pairs:
        for n in (1024, 8192):
            for causal in (False, True):
                b, h = 16384 // n, 16
                q, k = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16)
                        for _ in range(2))
                v = torch.randn(b, n, h, dv, device="cuda", dtype=torch.bfloat16)
                padded = torch.nn.functional.pad(v, (0, d - dv)) if d > dv else None
                flops = 2.0 * b * h * n * n * (d + dv) / (2 if causal else 1)
                qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))

                def cudnn():
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        return torch.nn.functional.scaled_dot_product_attention(
                            qt, kt, vt, is_causal=causal)

                runs = [("attngen", lambda: attngen.attention(q, k, v, causal=causal)),
                        ("padded", (lambda: attngen.attention(q, k, padded, causal=causal)
                                    [..., :dv]) if padded is not None else None),
                        ("cudnn", cudnn)]
                row = dict(d=d, dv=dv, n=n, causal=causal)
                for name, fn in runs:
                    ms, why = harness.try_time(fn, 5, 30) if fn else (None, "n/a")
                    row[name] = harness.tflops(flops, ms) if ms else None
                    row[name + "_error"] = why
                rows.append(row)
                print(f"bench d{d}v{dv} N{n} causal={causal}: attngen "
                      f"{harness.fmt(row['attngen'])} padded {harness.fmt(row['padded'])} "
                      f"cuDNN {harness.fmt(row['cudnn'])} TFLOPS"
                      f"{'' if row['cudnn'] else ' (cuDNN: ' + str(row['cudnn_error']) + ')'}",
                      flush=True)


def bench_decode(rows):
    """Decoding 192/128 (B 64, Nq 1, 8k keys, H 32 / Hkv 8, bf16) through
    attention_with_kvcache, contiguous and paged (64-row pages), against the
    same call with V padded to 192: time and the bandwidth of the cache bytes
    each reads (K and V, D and Dv wide)."""
    b, n, h, hkv, d, dv = 64, 8192, 32, 8, 192, 128
    q = torch.randn(b, 1, h, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, n, hkv, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, n, hkv, dv, device="cuda", dtype=torch.bfloat16)
    padded = torch.nn.functional.pad(v, (0, d - dv))
    table = torch.arange(b * n // 64, device="cuda", dtype=torch.int32).view(b, n // 64)
    lens = torch.full((b,), n, device="cuda", dtype=torch.int32)
    for paged in (False, True):
        def call(vv):
            if paged:
                return attngen.attention_with_kvcache(
                    q, k.view(-1, 64, hkv, d), vv.view(-1, 64, hkv, vv.shape[-1]), lens, table)
            return attngen.attention_with_kvcache(q, k, vv, lens)
        row = dict(d=d, dv=dv, n=n, paged=paged, part="decode")
        for name, vv in (("attngen", v), ("padded", padded)):
            ms, why = harness.try_time(lambda: call(vv), 5, 30)
            row[name + "_ms"], row[name + "_error"] = ms, why
            cache_bytes = b * n * hkv * (d + vv.shape[-1]) * 2
            row[name + "_tbs"] = cache_bytes / (ms * 1e-3) / 1e12 if ms else None
        rows.append(row)
        print(f"decode 192/128 {'paged' if paged else 'contiguous'}: "
              f"{harness.fmt(row['attngen_ms'], '.3f')} ms "
              f"({harness.fmt(row['attngen_tbs'], '.2f')} TB/s) against V padded to 192 "
              f"{harness.fmt(row['padded_ms'], '.3f')} ms "
              f"({harness.fmt(row['padded_tbs'], '.2f')} TB/s)", flush=True)


def ratio(a, b):
    return a / b if a and b else None


def main():
    global attngen
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--no-bench", action="store_true")
    parser.add_argument("--first", type=int, default=0,
                        help="skip the cases before this one (0-based)")
    parser.add_argument("--same-dv", action="store_true",
                        help="the same cases with v as wide as q: the plain kernels")
    parser.add_argument("--backward-bench", action="store_true",
                        help="also time the backward pair at 192/128 against cuDNN's")
    parser.add_argument("--dense-only", action="store_true",
                        help="skip the varlen cases (racecheck stops on varlen kernels)")
    parser.add_argument("--decode-bench", action="store_true",
                        help="also time 192/128 decoding against V padded to 192")
    parser.add_argument("--kv-cases", type=int, default=40,
                        help="decoding cases (KV cache, flash_attn_with_kvcache, attention())")
    args = parser.parse_args()
    import attngen as module
    attngen = module
    results, bench_rows = [], []
    failed = 0
    for c in cases(args.cases, args.same_dv)[args.first:]:
        if args.dense_only and c["via"] == "varlen":
            continue
        failed += not (run_varlen(c, results) if c["via"] == "varlen" else run_dense(c, results))
    for c in kv_cases(args.kv_cases):
        failed += not run_kvcache(c, results)
    failed += not run_autograd()
    backward_rows, decode_rows = [], []
    if args.decode_bench:
        harness.warm_up_gpu()
        bench_decode(decode_rows)
    if args.backward_bench:
        harness.warm_up_gpu()
        bench_backward(backward_rows, [(192, 128)])
    if not args.no_bench:
        harness.warm_up_gpu()
        bench(bench_rows, [(192, 128), (64, 128)])
    if backward_rows:
        harness.print_table(
            ["d/dv", "N", "causal", "attngen bwd TF", "cuDNN bwd TF", "vs cuDNN"],
            [[f"{r['d']}/{r['dv']}", r["n"], r["causal"], harness.fmt(r["attngen"]),
              harness.fmt(r["cudnn"]), harness.fmt(ratio(r["attngen"], r["cudnn"]), ".2f")]
             for r in backward_rows])
    if results:
        print(f"\nhead_dim_v: {len(results) - sum(not r['ok'] for r in results)}/"
              f"{len(results)} within flash_attn's criterion (worst "
              f"{max(r['ratio'] for r in results):.2f}x PyTorch's error; LSE worst "
              f"{max(r['lse_err'] for r in results):.1e})")
    if bench_rows:
        harness.print_table(
            ["d/dv", "N", "causal", "attngen TF", "V padded TF", "cuDNN TF", "vs padded",
             "vs cuDNN"],
            [[f"{r['d']}/{r['dv']}", r["n"], r["causal"], harness.fmt(r["attngen"]),
              harness.fmt(r["padded"]), harness.fmt(r["cudnn"]),
              harness.fmt(ratio(r["attngen"], r["padded"]), ".2f"),
              harness.fmt(ratio(r["attngen"], r["cudnn"]), ".2f")] for r in bench_rows])
    if args.json:
        harness.write_json(args.json, dict(environment=harness.environment(),
                                           cases=results, bench=bench_rows,
                                           backward_bench=backward_rows,
                                           decode_bench=decode_rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
