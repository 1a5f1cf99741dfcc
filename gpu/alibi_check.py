#!/usr/bin/env python3
"""ALiBi (alibi_slopes, issue 21 section 1) on a GPU: the forward against a
float32 reference with flash_attn's criterion, and its speed beside the plain
kernel and SDPA given the same bias as a float mask.

    ATTNGEN_LIBRARY=.../libattngen.so PYTHONPATH=python:gpu \
        python3 gpu/alibi_check.py [--json OUT.json] [--cases N] [--no-bench]

The bias is flash_attn's: -slope[b, h] * |i + Nk - Nq - j| added to the
scaled (and soft-capped) score of query i and key j, bottom-right; top-left
kernels measure from j = i. Cases are ragged (Nq != Nk, lengths that are not
tile multiples), causal in both alignments, windows, soft caps, GQA, slopes
of shape (H,) and (B, H), bf16 and f16, through attngen.attention,
attention_varlen (packed sequences, one of them empty) and
flash_attn_interface; the output is poisoned first. Then decoding over a KV
cache (1-16 query rows, contiguous or paged in a shuffled pool, split or not,
GQA heads packed, lengths 0 to the capacity) through attention_with_kvcache,
flash_attn_with_kvcache and attention, each sequence measured from its own
bottom-right diagonal. The criterion: max
|O - O_fp32| <= 2 x PyTorch's error (the same math in the inputs' dtype) +
1e-5, and the LSE within 1e-3 of float32's. ATTNGEN_ARCH=sm_80 checks the
sm_80 kernels. Exit status 0 when every check passed.
"""

import argparse
import math
import random
import sys

import torch

import harness

attngen = None
LSE_TOLERANCE = 1e-3


def slopes_for(heads, batch, per_batch, device):
    """ALiBi's geometric slopes (2^(-8 (h + 1) / H)), per batch entry if asked
    (each entry scaled differently, so a wrong batch stride shows)."""
    base = torch.tensor([2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)],
                        device=device)
    if not per_batch:
        return base
    return torch.stack([base * (1.0 + 0.25 * b) for b in range(batch)])


def bias(nq, nk, slopes, batch, heads, bottom_right, device):
    """[B, H, Nq, Nk] float32: -slope * |i + off - j|."""
    off = nk - nq if bottom_right else 0
    i = torch.arange(nq, device=device).view(nq, 1)
    j = torch.arange(nk, device=device).view(1, nk)
    dist = (i + off - j).abs().float()
    s = slopes if slopes.dim() == 2 else slopes.expand(batch, heads)
    return -s.view(batch, heads, 1, 1) * dist


def torch_math(q, k, v, scale, c, slopes, dtype):
    """(O, LSE) of the math with scores and P V in `dtype` and the softmax in
    float32: `dtype` float32 is the reference, the inputs' dtype PyTorch's own."""
    group = q.shape[2] // k.shape[2]
    b, nq, h = q.shape[:3]
    nk = k.shape[1]
    q, k, v = (t.to(dtype) for t in (q, k, v))
    kk, vv = k.repeat_interleave(group, 2), v.repeat_interleave(group, 2)
    # The scores in `dtype` (einsum rounds them), the bias in float32, as
    # flash_attn's tests add it.
    s = torch.einsum("bthd,bshd->bhts", q, kk).float() * scale
    if c["cap"]:
        s = c["cap"] * torch.tanh(s / c["cap"])
    s = s + bias(nq, nk, slopes, b, h, c["bottom_right"], q.device)
    mask = harness.visibility_mask(nq, nk, c["causal"], c["bottom_right"], c["window"],
                                   q.device)
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
    ok = (err <= 2 * pt + 1e-5 and bool(torch.isfinite(out).all())
          and lse_err <= LSE_TOLERANCE and torch.equal(torch.isinf(lse), ~seen))
    return ok, err, pt, lse_err


def run_dense(c, results):
    torch.manual_seed(len(results) + 1)
    dtype = c["dtype"]
    q = torch.randn(c["b"], c["nq"], c["h"], c["d"], device="cuda", dtype=dtype)
    k = torch.randn(c["b"], c["nk"], c["hkv"], c["d"], device="cuda", dtype=dtype)
    v = torch.randn(c["b"], c["nk"], c["hkv"], c["d"], device="cuda", dtype=dtype)
    slopes = slopes_for(c["h"], c["b"], c["per_batch"], "cuda")
    scale = 1.0 / math.sqrt(c["d"])
    align = "bottom-right" if c["bottom_right"] else "top-left"
    addresses = harness.poison_next_allocations([(q.shape, dtype)])
    if c["via"] == "flash_attn":
        from attngen import flash_attn_interface as fa
        out, lse, _ = fa.flash_attn_func(q, k, v, causal=c["causal"], window_size=c["window"],
                                         softcap=c["cap"], alibi_slopes=slopes,
                                         return_attn_probs=True)
        lse = lse.masked_fill(torch.isposinf(lse), -math.inf)  # FA's +inf: no key
    else:
        out, lse = attngen.attention(q, k, v, causal=c["causal"], causal_align=align,
                                     softcap=c["cap"], window_size=c["window"],
                                     alibi_slopes=slopes, return_lse=True)
    poisoned = harness.reused_poisoned_blocks((out,), addresses)
    torch.cuda.synchronize()
    ref, ref_lse = torch_math(q, k, v, scale, c, slopes, torch.float32)
    theirs, _ = torch_math(q, k, v, scale, c, slopes, dtype)
    ok, err, pt, lse_err = judge(out, lse, ref, ref_lse, theirs)
    return record(c, results, ok, err, pt, lse_err, poisoned)


def run_varlen(c, results):
    """Packed sequences, one of them empty, through attention_varlen."""
    torch.manual_seed(len(results) + 1)
    dtype = c["dtype"]
    lens = c["lens"]
    cu_q = torch.tensor([0] + list(torch.tensor([a for a, _ in lens]).cumsum(0)),
                        device="cuda", dtype=torch.int32)
    cu_k = torch.tensor([0] + list(torch.tensor([b for _, b in lens]).cumsum(0)),
                        device="cuda", dtype=torch.int32)
    total_q, total_k = int(cu_q[-1]), int(cu_k[-1])
    q = torch.randn(total_q, c["h"], c["d"], device="cuda", dtype=dtype)
    k = torch.randn(total_k, c["hkv"], c["d"], device="cuda", dtype=dtype)
    v = torch.randn(total_k, c["hkv"], c["d"], device="cuda", dtype=dtype)
    slopes = slopes_for(c["h"], len(lens), c["per_batch"], "cuda")
    scale = 1.0 / math.sqrt(c["d"])
    align = "bottom-right" if c["bottom_right"] else "top-left"
    addresses = harness.poison_next_allocations([(q.shape, dtype)])
    out, lse = attngen.attention_varlen(
        q, k, v, cu_q, cu_k, max(a for a, _ in lens), max(b for _, b in lens),
        causal=c["causal"], window_size=c["window"], softcap=c["cap"], return_lse=True,
        causal_align=align, alibi_slopes=slopes)
    poisoned = harness.reused_poisoned_blocks((out,), addresses)
    torch.cuda.synchronize()
    ok_all, errs = True, []
    for i, (nq, nk) in enumerate(lens):
        if nq == 0:
            continue
        oq, ok_ = int(cu_q[i]), int(cu_k[i])
        s = slopes[i] if slopes.dim() == 2 else slopes
        qi, ki, vi = q[oq:oq + nq][None], k[ok_:ok_ + nk][None], v[ok_:ok_ + nk][None]
        got_o, got_l = out[oq:oq + nq][None], lse[:, oq:oq + nq][None]
        if nk == 0:
            ok = bool((got_o == 0).all()) and bool(torch.isneginf(got_l).all())
            ok_all &= ok
            continue
        ref, ref_lse = torch_math(qi, ki, vi, scale, c, s, torch.float32)
        theirs, _ = torch_math(qi, ki, vi, scale, c, s, dtype)
        ok, err, pt, lse_err = judge(got_o, got_l, ref, ref_lse, theirs)
        ok_all &= ok
        errs.append((err, pt, lse_err))
    err = max((e for e, _, _ in errs), default=0.0)
    pt = max((p for _, p, _ in errs), default=0.0)
    lse_err = max((x for _, _, x in errs), default=0.0)
    return record(c, results, ok_all, err, pt, lse_err, poisoned)


def run_kvcache(c, results):
    """Decoding over a KV cache (contiguous or paged, split or not, heads
    packed): attention_with_kvcache, flash_attn_with_kvcache, or attention
    with at most 16 query rows. Each sequence's distances are from its own
    bottom-right diagonal, i + cache_seqlens[b] - Nq."""
    torch.manual_seed(len(results) + 1)
    dtype, b, nq, h, hkv, d = c["dtype"], c["b"], c["nq"], c["h"], c["hkv"], c["d"]
    cap, page = c["nk"], c["page"]
    q = torch.randn(b, nq, h, d, device="cuda", dtype=dtype)
    k = torch.randn(b, cap, hkv, d, device="cuda", dtype=dtype)
    v = torch.randn(b, cap, hkv, d, device="cuda", dtype=dtype)
    lens = c["lens"]
    slopes = slopes_for(h, b, c["per_batch"], "cuda")
    seqlens = torch.tensor(lens, device="cuda", dtype=torch.int32)
    k_cache, v_cache, table = k, v, None
    if page:
        # Pages in a shuffled pool: sequence b's page p is pool row table[b, p].
        pages = cap // page
        order = torch.randperm(b * pages, device="cuda")
        table = order.view(b, pages).to(torch.int32)
        k_cache = torch.empty(b * pages, page, hkv, d, device="cuda", dtype=dtype)
        v_cache = torch.empty_like(k_cache)
        k_cache[order] = k.view(b * pages, page, hkv, d)
        v_cache[order] = v.view(b * pages, page, hkv, d)
    if c["via"] == "decode":
        # attention() over each sequence's whole cache: all lengths = cap.
        lens = [cap] * b
        out, lse = attngen.attention(q, k, v, causal=c["causal"], softcap=c["cap"],
                                     alibi_slopes=slopes, return_lse=True)
    elif c["via"] == "flash_attn_kvcache":
        from attngen import flash_attn_interface as fa
        out, lse = fa.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=seqlens,
                                              block_table=table, causal=c["causal"],
                                              softcap=c["cap"], alibi_slopes=slopes,
                                              num_splits=c["splits"], return_softmax_lse=True)
        lse = lse.masked_fill(torch.isposinf(lse), -math.inf)
    else:
        out, lse = attngen.attention_with_kvcache(q, k_cache, v_cache, seqlens, table,
                                                  causal=c["causal"], softcap=c["cap"],
                                                  alibi_slopes=slopes, num_splits=c["splits"],
                                                  return_lse=True)
    torch.cuda.synchronize()
    ok_all, errs = True, []
    for i, n in enumerate(lens):
        s = slopes[i] if slopes.dim() == 2 else slopes
        got_o, got_l = out[i:i + 1], lse[i:i + 1]
        if n == 0:
            ok_all &= bool((got_o == 0).all()) and bool(torch.isneginf(got_l).all())
            continue
        qi, ki, vi = q[i:i + 1], k[i:i + 1, :n], v[i:i + 1, :n]
        ref, ref_lse = torch_math(qi, ki, vi, 1.0 / math.sqrt(d), c, s, torch.float32)
        theirs, _ = torch_math(qi, ki, vi, 1.0 / math.sqrt(d), c, s, dtype)
        ok, err, pt, lse_err = judge(got_o, got_l, ref, ref_lse, theirs)
        ok_all &= ok
        errs.append((err, pt, lse_err))
    err = max((e for e, _, _ in errs), default=0.0)
    pt = max((p for _, p, _ in errs), default=0.0)
    lse_err = max((x for _, _, x in errs), default=0.0)
    return record(c, results, ok_all, err, pt, lse_err, True)


def kvcache_cases(count):
    rng = random.Random(4242)
    drawn = []
    for _ in range(count):
        h, hkv = rng.choice([(4, 4), (8, 2), (8, 1), (32, 8)])
        b = rng.choice([1, 3])
        page = rng.choice([0, 0, 16, 64])
        cap = rng.choice([64, 256, 1024, 3072])
        via = rng.choice(["kvcache", "kvcache", "flash_attn_kvcache", "decode"])
        nq = rng.randint(1, 16)
        lens = [rng.randint(0, cap) for _ in range(b)]
        if via == "decode":
            page = 0
        drawn.append(dict(d=rng.choice([64, 128, 256]), h=h, hkv=hkv,
                          causal=rng.random() < 0.5, bottom_right=True, window=(-1, -1),
                          cap=rng.choice([0.0, 0.0, 30.0]), per_batch=rng.random() < 0.5,
                          dtype=rng.choice([torch.bfloat16, torch.float16]), via=via,
                          b=b, nq=nq, nk=cap, page=page, lens=lens,
                          splits=rng.choice([0, 1, 3])))
    return drawn


def record(c, results, ok, err, pt, lse_err, poisoned):
    row = {key: (str(value) if key == "dtype" else value) for key, value in c.items()}
    row.update(ok=ok, err=err, pytorch_err=pt, ratio=err / max(pt, 1e-12), lse_err=lse_err,
               poisoned=poisoned)
    results.append(row)
    shape = (f"b{c['b']} {c['nq']}x{c['nk']} page={c['page']} splits={c['splits']} "
             f"lens={c['lens']}" if "page" in c else
             f"lens={c['lens']}" if "lens" in c else f"b{c['b']} {c['nq']}x{c['nk']}")
    print(f"{'ok  ' if ok else 'FAIL'} {c['via']} d{c['d']} {shape} h{c['h']}/{c['hkv']} "
          f"{str(c['dtype'])[6:]} causal={c['causal']} br={c['bottom_right']} "
          f"win={c['window']} cap={c['cap']} per_batch={c['per_batch']}: err {err:.2e}, "
          f"PyTorch's {pt:.2e} ({row['ratio']:.2f}x), lse {lse_err:.1e}", flush=True)
    return ok


def cases(count):
    rng = random.Random(2112)
    drawn = []
    for n in range(count):
        causal, br = rng.choice([(False, True), (False, False), (True, True), (True, False)])
        window = rng.choice([(-1, -1), (-1, -1), (-1, -1), (100, 0), (64, 33)])
        if causal and window != (-1, -1):
            window = (window[0], 0)
        h, hkv = rng.choice([(4, 4), (8, 2), (6, 1)])
        via = rng.choice(["attention", "attention", "varlen", "flash_attn"])
        if via == "flash_attn":
            br = True
        case = dict(d=rng.choice([32, 64, 96, 128, 256]), h=h, hkv=hkv, causal=causal,
                    bottom_right=br, window=window,
                    cap=rng.choice([0.0, 0.0, 30.0]), per_batch=rng.random() < 0.5,
                    dtype=rng.choice([torch.bfloat16, torch.bfloat16, torch.float16]), via=via)
        if via == "varlen":
            lens = [(rng.randint(1, 700), rng.randint(1, 700)) for _ in range(rng.randint(1, 4))]
            lens.insert(rng.randint(0, len(lens)), (rng.randint(1, 50), 0))
            case["lens"] = lens
        else:
            case.update(b=rng.choice([1, 2]), nq=rng.randint(1, 1500),
                        nk=rng.randint(1, 1500))
        drawn.append(case)
    return drawn


def bench(rows):
    """d64/d128 at N = 1k and 4k (B*N = 16k, H*D = 2048), causal and not: ALiBi
    against the plain kernel, and SDPA given the bias as a bf16 float mask."""
    for d in (64, 128):
        for n in (1024, 4096):
            for causal in (False, True):
                b, h = 16384 // n, 2048 // d
                q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16)
                           for _ in range(3))
                slopes = slopes_for(h, b, False, "cuda")
                flops = harness.attention_flops(b, h, n, n, d) / (2 if causal else 1)
                row = dict(d=d, n=n, causal=causal)
                mask = bias(n, n, slopes, 1, h, True, "cuda")
                if causal:
                    mask = mask.masked_fill(
                        ~harness.visibility_mask(n, n, True, True, (-1, -1), "cuda"), -math.inf)
                mask = mask.to(torch.bfloat16)
                qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
                runs = (("plain", lambda: attngen.attention(q, k, v, causal=causal)),
                        ("alibi", lambda: attngen.attention(q, k, v, causal=causal,
                                                            alibi_slopes=slopes)),
                        ("sdpa", lambda: torch.nn.functional.scaled_dot_product_attention(
                            qt, kt, vt, attn_mask=mask)))
                for name, fn in runs:
                    ms, why = harness.try_time(fn, 5, 30)
                    row[name] = harness.tflops(flops, ms) if ms else None
                    row[name + "_error"] = why
                rows.append(row)
                print(f"bench d{d} N{n} causal={causal}: plain {harness.fmt(row['plain'])} "
                      f"alibi {harness.fmt(row['alibi'])} SDPA+mask {harness.fmt(row['sdpa'])} "
                      "TFLOPS", flush=True)


def run_autograd():
    """Autograd through attention(alibi_slopes=) and attention_varlen gives the
    functional backward's gradients, bit for bit (both are deterministic)."""
    torch.manual_seed(5)
    q, k, v = (torch.randn(2, n, h, 64, device="cuda", dtype=torch.bfloat16)
               for n, h in ((300, 8), (200, 2), (200, 2)))
    slopes = slopes_for(8, 2, True, "cuda")
    dout = torch.randn_like(q)
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out = attngen.attention(*leaves, causal=True, alibi_slopes=slopes)
    out.backward(dout)
    o, lse = attngen.attention(q, k, v, causal=True, alibi_slopes=slopes, return_lse=True)
    want = attngen.attention_backward(dout, q, k, v, o, lse, causal=True, alibi_slopes=slopes)
    ok = all(torch.equal(t.grad, w) for t, w in zip(leaves, want))
    print(f"{'ok  ' if ok else 'FAIL'} autograd with ALiBi equals attention_backward", flush=True)
    return ok


def ratio(a, b):
    return a / b if a and b else None


def main():
    global attngen
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--cases", type=int, default=120)
    parser.add_argument("--no-bench", action="store_true")
    parser.add_argument("--kvcache-cases", type=int, default=40,
                        help="decoding cases over a KV cache (after the others)")
    parser.add_argument("--dense-only", action="store_true",
                        help="skip the varlen cases (racecheck stops on varlen kernels)")
    args = parser.parse_args()
    import attngen as module
    attngen = module
    results, bench_rows = [], []
    failed = 0
    for c in cases(args.cases):
        if args.dense_only and c["via"] == "varlen":
            continue
        failed += not (run_varlen(c, results) if c["via"] == "varlen" else run_dense(c, results))
    for c in kvcache_cases(args.kvcache_cases):
        failed += not run_kvcache(c, results)
    failed += not run_autograd()
    if not args.no_bench:
        harness.warm_up_gpu()
        bench(bench_rows)
    worst = max(r["ratio"] for r in results)
    print(f"\nALiBi: {len(results) - failed}/{len(results)} within flash_attn's criterion "
          f"(worst {worst:.2f}x PyTorch's error; LSE worst "
          f"{max(r['lse_err'] for r in results):.1e})")
    if bench_rows:
        harness.print_table(
            ["d", "N", "causal", "plain TF", "alibi TF", "SDPA+mask TF", "alibi/plain",
             "alibi/SDPA"],
            [[r["d"], r["n"], r["causal"], harness.fmt(r["plain"]), harness.fmt(r["alibi"]),
              harness.fmt(r["sdpa"]), harness.fmt(ratio(r["alibi"], r["plain"]), ".3f"),
              harness.fmt(ratio(r["alibi"], r["sdpa"]), ".2f")] for r in bench_rows])
    if args.json:
        harness.write_json(args.json, dict(environment=harness.environment(),
                                           cases=results, bench=bench_rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
