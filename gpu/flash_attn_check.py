#!/usr/bin/env python3
"""attngen.flash_attn_interface on a GPU, tested the way flash_attn tests itself:
each output against a float32 reference, passing when its max error is at
most 2x that of the same math done by PyTorch in the input dtype (+1e-5),
and the decode step through attngen.attention timed against SDPA.

    ATTNGEN_LIBRARY=.../libattngen.so PYTHONPATH=python \\
        python3 gpu/flash_attn_check.py [--quick] [--json OUT.json] [--no-bench]
        [--only func|varlen|kvcache]

* flash_attn_func (and the qkv/kv-packed forms): bf16/f16, head dims 32, 59
  (padded), 64, 96, 128, 256, ragged Nq != Nk from 1 to 1023 (Nq <= 16 takes
  the decoding kernels), MHA/GQA/MQA, causal, sliding windows, soft caps,
  return_attn_probs (LSE checked, +inf on rows that see no key).
* flash_attn_varlen_func: empty sequences, causal, windows; its packed forms;
  a paged KV cache through block_table.
* flash_attn_with_kvcache: contiguous and paged caches, k/v appended in place
  (the cache checked after), rotary (interleaved or not, causal or not),
  cache_batch_idx, cache_leftpad, windows, soft caps, GQA, num_splits,
  return_softmax_lse; lengths the block table cannot hold raise.
* Speed (bf16, d128, B64 H32/8 Nq=1 Nk=8k): attngen.attention and
  flash_attn_with_kvcache against SDPA's cuDNN and flash backends, with HBM
  bandwidth.
Exit status 0 when every check passed.
"""

import argparse
import itertools
import json
import math
import random
import sys

import torch
import torch.nn.functional as F

import harness

attngen = fa = None
PEAK_TBPS = 4.8


def attention_ref(q, k, v, scale, causal=False, window=(-1, -1), softcap=0.0,
                  lengths_k=None, upcast=True):
    """flash_attn's reference: (B, Nq, H, D) out, float32 LSE (B, H, Nq).
    Bottom-right causal/window; lengths_k masks keys past each sequence's."""
    dtype = q.dtype
    if upcast:
        q, k, v = q.float(), k.float(), v.float()
    group = q.shape[2] // k.shape[2]
    k, v = k.repeat_interleave(group, 2), v.repeat_interleave(group, 2)
    s = torch.einsum("bthd,bshd->bhts", q * scale, k).float()
    if softcap > 0:
        s = torch.tanh(s / softcap) * softcap
    nq, nk = q.shape[1], k.shape[1]
    lengths = (torch.full((q.shape[0],), nk, device=q.device) if lengths_k is None
               else lengths_k.to(q.device).long())
    i = torch.arange(nq, device=q.device)[None, :, None]
    j = torch.arange(nk, device=q.device)[None, None, :]
    diag = i + lengths[:, None, None] - nq
    hidden = j >= lengths[:, None, None]
    left, right = window
    if causal:
        right = 0
    if right >= 0:
        hidden = hidden | (j > diag + right)
    if left >= 0:
        hidden = hidden | (j < diag - left)
    hidden = hidden[:, None]
    s = s.masked_fill(hidden, -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.softmax(s, dim=-1).masked_fill(hidden.all(-1, keepdim=True), 0.0)
    out = torch.einsum("bhts,bshd->bthd", p.to(v.dtype), v)
    return out.to(dtype), lse


class Results:
    def __init__(self):
        self.rows, self.failed = [], 0

    def add(self, group, label, ok, detail):
        self.rows.append((group, label, ok, detail))
        if not ok:
            self.failed += 1
            print(f"FAILED {group}: {label}: {detail}", flush=True)


def judge(out, ref, ref_pt):
    """flash_attn's criterion, and no NaN."""
    err = (out.float() - ref.float()).abs().max().item() if out.numel() else 0.0
    pt = (ref_pt.float() - ref.float()).abs().max().item() if out.numel() else 0.0
    ok = math.isfinite(err) and err <= 2 * pt + 1e-5
    return ok, f"max err {err:.2e} (pytorch {pt:.2e}, ratio {err / max(pt, 1e-12):.2f})", err / max(pt, 1e-12)


def lse_ok(lse, ref_lse):
    """attngen's LSE in flash_attn's convention: +inf where no key is seen."""
    empty = torch.isinf(ref_lse) & (ref_lse < 0)
    if not torch.all(torch.isposinf(lse[empty])):
        return False
    diff = (lse[~empty] - ref_lse[~empty]).abs()
    return bool(torch.all(diff <= 2e-2 * ref_lse[~empty].abs().clamp(min=1)))


def rand(*shape, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", dtype=dtype, generator=g)


def random_window(rng, nk):
    kind = rng.choice(["none", "none", "left", "both", "narrow"])
    if kind == "none":
        return (-1, -1)
    if kind == "left":
        return (rng.randint(0, nk), -1)
    if kind == "narrow":
        return (rng.randint(0, 20), rng.randint(0, 20))
    return (rng.randint(0, nk), rng.randint(0, nk))


def check_func(res, quick):
    rng = random.Random(7)
    shapes = [(1, 239), (3, 799), (16, 300), (113, 203), (128, 217), (256, 512), (108, 256),
              (1023, 1024), (239, 1), (8, 8), (17, 4097)]
    cases = 40 if quick else 120
    worst = 0.0
    for n in range(cases):
        dtype = rng.choice([torch.bfloat16, torch.float16])
        d = rng.choice([32, 59, 64, 96, 128, 256])
        nq, nk = rng.choice(shapes)
        h, hk = rng.choice([(6, 6), (6, 2), (6, 1)])
        b = rng.choice([1, 2, 3])
        causal = rng.random() < 0.5
        window = random_window(rng, nk)
        softcap = rng.choice([0.0, 0.0, 30.0])
        q = rand(b, nq, h, d, dtype=dtype, seed=n)
        k = rand(b, nk, hk, d, dtype=dtype, seed=1000 + n)
        v = rand(b, nk, hk, d, dtype=dtype, seed=2000 + n)
        scale = d ** -0.5
        label = (f"{str(dtype)[6:]} d{d} b{b} {nq}x{nk} h{h}/{hk} causal={causal} "
                 f"window={window} softcap={softcap}")
        try:
            out, lse, probs = fa.flash_attn_func(q, k, v, causal=causal, window_size=window,
                                                 softcap=softcap, return_attn_probs=True)
        except Exception as e:  # noqa: BLE001 - report and go on
            res.add("flash_attn_func", label, False, harness.short_error(e))
            continue
        # flash_attn's window: a side of seqlen_k or more is unbounded.
        win = fa._window(window, causal, nk)
        ref, ref_lse = attention_ref(q, k, v, scale, causal, win, softcap)
        ref_pt, _ = attention_ref(q, k, v, scale, causal, win, softcap, upcast=False)
        ok, detail, ratio = judge(out, ref, ref_pt)
        worst = max(worst, ratio)
        ok = ok and probs is None and lse_ok(lse, ref_lse)
        res.add("flash_attn_func", label, ok, detail)
    # The packed forms: views of one tensor.
    for n, (causal, hk) in enumerate([(False, 4), (True, 4), (True, 2)]):
        qkv = rand(2, 333, 3, 4, 64, dtype=torch.bfloat16, seed=50 + n)
        kv = rand(2, 401, 2, hk, 64, dtype=torch.bfloat16, seed=60 + n)
        q = qkv[:, :, 0]
        if hk == 4:
            out = fa.flash_attn_qkvpacked_func(qkv, causal=causal)
            ref, _ = attention_ref(*qkv.unbind(2), 0.125, causal)
            ref_pt, _ = attention_ref(*qkv.unbind(2), 0.125, causal, upcast=False)
            res.add("flash_attn_qkvpacked_func", f"causal={causal}", *judge(out, ref, ref_pt)[:2])
        out = fa.flash_attn_kvpacked_func(q, kv, causal=causal)
        ref, _ = attention_ref(q, *kv.unbind(2), 0.125, causal)
        ref_pt, _ = attention_ref(q, *kv.unbind(2), 0.125, causal, upcast=False)
        res.add("flash_attn_kvpacked_func", f"causal={causal} hk={hk}",
                *judge(out, ref, ref_pt)[:2])
    return worst


def check_varlen(res, quick):
    rng = random.Random(11)
    for n in range(10 if quick else 30):
        batch = rng.randint(1, 5)
        lq = [rng.choice([0, 1, 5, 77, 200, 513]) for _ in range(batch)]
        lk = [rng.choice([0, 1, 9, 100, 300, 700]) for _ in range(batch)]
        d = rng.choice([64, 128, 59])
        h, hk = rng.choice([(4, 4), (4, 1)])
        causal = rng.random() < 0.5
        window = random_window(rng, max(lk))
        paged = rng.random() < 0.4
        q = rand(sum(lq), h, d, dtype=torch.bfloat16, seed=n)
        keys = [rand(x, hk, d, dtype=torch.bfloat16, seed=100 + 10 * n + i) for i, x in enumerate(lk)]
        vals = [rand(x, hk, d, dtype=torch.bfloat16, seed=500 + 10 * n + i) for i, x in enumerate(lk)]
        cu_q = torch.tensor([0, *itertools.accumulate(lq)], dtype=torch.int32, device="cuda")
        cu_k = torch.tensor([0, *itertools.accumulate(lk)], dtype=torch.int32, device="cuda")
        k, v, table = torch.cat(keys), torch.cat(vals), None
        if paged:
            page = rng.choice([16, 256])
            blocks = max(1, -(-max(lk) // page))
            pages = torch.randperm(batch * blocks + 3, device="cuda")[:batch * blocks]
            table = pages.view(batch, blocks).to(torch.int32)
            k = torch.full((batch * blocks + 3, page, hk, d), float("nan"), device="cuda",
                           dtype=torch.bfloat16)
            v = k.clone()
            for b in range(batch):
                for pos in range(lk[b]):
                    p = table[b, pos // page]
                    k[p, pos % page], v[p, pos % page] = keys[b][pos], vals[b][pos]
        label = f"b{batch} lq={lq} lk={lk} d{d} h{h}/{hk} causal={causal} window={window} paged={paged}"
        try:
            out, lse, _ = fa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(lq), max(lk),
                                                    causal=causal, window_size=window,
                                                    return_attn_probs=True, block_table=table)
        except Exception as e:  # noqa: BLE001
            res.add("flash_attn_varlen_func", label, False, harness.short_error(e))
            continue
        ok, worst_detail = True, ""
        for b in range(batch):
            if lq[b] == 0:
                continue
            qs = q[cu_q[b]:cu_q[b + 1]][None]
            if lk[b] == 0:
                seg = out[cu_q[b]:cu_q[b + 1]]
                ok = ok and bool(torch.all(seg == 0)) and bool(
                    torch.all(torch.isposinf(lse[:, cu_q[b]:cu_q[b + 1]])))
                continue
            win = fa._window(window, causal, max(lk))
            ref, ref_lse = attention_ref(qs, keys[b][None], vals[b][None], d ** -0.5, causal, win)
            ref_pt, _ = attention_ref(qs, keys[b][None], vals[b][None], d ** -0.5, causal, win,
                                      upcast=False)
            good, detail, _ = judge(out[cu_q[b]:cu_q[b + 1]][None], ref, ref_pt)
            good = good and lse_ok(lse[:, cu_q[b]:cu_q[b + 1]][None], ref_lse)
            ok, worst_detail = ok and good, worst_detail if good else detail
        res.add("flash_attn_varlen_func", label, ok, worst_detail or "ok")
    qkv = rand(300, 3, 4, 64, dtype=torch.bfloat16, seed=3)
    cu = torch.tensor([0, 100, 100, 300], dtype=torch.int32, device="cuda")
    out = fa.flash_attn_varlen_qkvpacked_func(qkv, cu, 200, causal=True)
    dense = fa.flash_attn_func(qkv[None, 100:300, 0], qkv[None, 100:300, 1],
                               qkv[None, 100:300, 2], causal=True)
    res.add("flash_attn_varlen_qkvpacked_func", "vs dense", bool(torch.equal(out[100:], dense[0])),
            "bitwise equal to flash_attn_func on the same sequence")


def check_kvcache(res, quick):
    rng = random.Random(13)
    for n in range(12 if quick else 48):
        batch, nq = rng.choice([1, 3]), rng.choice([1, 4, 16])
        d = rng.choice([64, 128])
        h, hk = rng.choice([(8, 8), (8, 2), (8, 1)])
        paged = rng.random() < 0.4
        capacity = 512
        new = rng.choice([0, 1, 5])
        rotary = new and rng.random() < 0.6
        interleaved = rng.random() < 0.5
        causal = rng.random() < 0.5
        window = rng.choice([(-1, -1), (64, 0), (100, 20), (5, 5)])
        softcap = rng.choice([0.0, 30.0])
        batch_idx = (not paged) and rng.random() < 0.3
        leftpad = (not paged) and rng.random() < 0.3
        splits = rng.choice([0, 1, 3])
        dtype = torch.bfloat16
        lengths = torch.tensor([rng.randint(0, capacity - new) for _ in range(batch)],
                               dtype=torch.int32, device="cuda")
        pads = torch.tensor([rng.randint(0, int(x)) if leftpad else 0 for x in lengths.tolist()],
                            dtype=torch.int32, device="cuda")
        rows = batch + 2 if batch_idx else batch
        kc = rand(rows, capacity, hk, d, dtype=dtype, seed=n)
        vc = rand(rows, capacity, hk, d, dtype=dtype, seed=100 + n)
        index = torch.randperm(rows, device="cuda")[:batch].to(torch.int32) if batch_idx else None
        q = rand(batch, nq, h, d, dtype=dtype, seed=200 + n)
        k_new = rand(batch, new, hk, d, dtype=dtype, seed=300 + n) if new else None
        v_new = rand(batch, new, hk, d, dtype=dtype, seed=400 + n) if new else None
        cos = sin = None
        if rotary:
            rot = rng.choice([32, d])
            angle = rand(capacity, rot // 2, dtype=torch.float32, seed=500 + n)
            cos, sin = angle.cos().to(dtype), angle.sin().to(dtype)
        # The reference's view of each sequence, before the call appends.
        seq_rows = index.long() if batch_idx else torch.arange(batch, device="cuda")
        ref_k, ref_v = kc[seq_rows].clone(), vc[seq_rows].clone()
        table = None
        kc_call, vc_call = kc, vc
        if paged:
            page = rng.choice([16, 64, 256])
            blocks = capacity // page
            perm = torch.randperm(batch * blocks, device="cuda").to(torch.int32)
            table = perm.view(batch, blocks)
            kc_call = torch.empty(batch * blocks, page, hk, d, device="cuda", dtype=dtype)
            vc_call = torch.empty_like(kc_call)
            for b in range(batch):
                kc_call[table[b].long()] = kc[b].view(blocks, page, hk, d)
                vc_call[table[b].long()] = vc[b].view(blocks, page, hk, d)
        label = (f"b{batch} nq{nq} d{d} h{h}/{hk} paged={paged} new={new} rotary={bool(rotary)}"
                 f"/{interleaved} causal={causal} window={window} softcap={softcap} "
                 f"batch_idx={batch_idx} leftpad={leftpad} splits={splits}")
        try:
            out, lse = fa.flash_attn_with_kvcache(
                q, kc_call, vc_call, k_new, v_new, cos, sin, lengths, index,
                pads if leftpad else None, table, causal=causal, window_size=window,
                softcap=softcap, rotary_interleaved=interleaved, num_splits=splits,
                return_softmax_lse=True)
        except Exception as e:  # noqa: BLE001
            res.add("flash_attn_with_kvcache", label, False, harness.short_error(e))
            continue
        # The reference: rotary, append, then attention over [leftpad, len + new).
        q_ref = q
        if new:
            offsets = lengths - pads
            kn = k_new
            if rotary:
                kn = fa._apply_rotary(k_new, cos, sin, fa._positions(offsets, new, True),
                                      interleaved)
                local = causal or window != (-1, -1)
                q_ref = fa._apply_rotary(q, cos, sin, fa._positions(offsets, nq, local),
                                         interleaved)
            for b in range(batch):
                at = int(lengths[b])
                ref_k[b, at:at + new], ref_v[b, at:at + new] = kn[b], v_new[b]
        ok, detail = True, "ok"
        for b in range(batch):
            lo, hi = int(pads[b]), int(lengths[b]) + new
            keys, vals = ref_k[b:b + 1, lo:hi], ref_v[b:b + 1, lo:hi]
            win = fa._window(window, causal, capacity)
            if hi - lo == 0:
                good = bool(torch.all(out[b] == 0)) and bool(torch.all(torch.isposinf(lse[b])))
                ok = ok and good
                continue
            ref, ref_lse = attention_ref(q_ref[b:b + 1], keys, vals, d ** -0.5, causal, win,
                                         softcap)
            ref_pt, _ = attention_ref(q_ref[b:b + 1], keys, vals, d ** -0.5, causal, win,
                                      softcap, upcast=False)
            good, det, _ = judge(out[b:b + 1], ref, ref_pt)
            good = good and lse_ok(lse[b:b + 1], ref_lse)
            if not good:
                ok, detail = False, det
        # The appended rows are in the caller's cache.
        if new and ok:
            for b in range(batch):
                at = int(lengths[b])
                if paged:
                    got = torch.cat([kc_call[p] for p in table[b].long()])[at:at + new]
                else:
                    got = kc[seq_rows[b], at:at + new]
                if not torch.equal(got, ref_k[b, at:at + new]):
                    ok, detail = False, "the cache does not hold the appended keys"
        res.add("flash_attn_with_kvcache", label, ok, detail)
    # Lengths the block table cannot address raise, as in flash_attn.
    q = rand(1, 1, 8, 64, dtype=torch.bfloat16, seed=1)
    pages = rand(4, 16, 8, 64, dtype=torch.bfloat16, seed=2)
    table = torch.tensor([[0, 1]], dtype=torch.int32, device="cuda")
    try:
        new = pages[0, :2][None]
        fa.flash_attn_with_kvcache(q, pages, pages, new, new, cache_seqlens=31,
                                   block_table=table)
        res.add("flash_attn_with_kvcache", "cache_seqlens past the block table", False,
                "no error")
    except RuntimeError as e:
        res.add("flash_attn_with_kvcache", "cache_seqlens past the block table",
                "block_table" in str(e), str(e)[:100])


def bench(res, rows):
    """Decode: B64, H32/8, d128, Nq=1, Nk=8k, bf16."""
    b, h, hk, d, nk = 64, 32, 8, 128, 8192
    q = rand(b, 1, h, d, dtype=torch.bfloat16, seed=1)
    k = rand(b, nk, hk, d, dtype=torch.bfloat16, seed=2)
    v = rand(b, nk, hk, d, dtype=torch.bfloat16, seed=3)
    kv_bytes = 2 * k.numel() * k.element_size()
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def sdpa(backend):
        def run():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
        return run
    fns = {"attngen.attention": lambda: attngen.attention(q, k, v),
           "flash_attn_with_kvcache": lambda: fa.flash_attn_with_kvcache(q, k, v),
           "sdpa cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
           "sdpa flash": sdpa(SDPBackend.FLASH_ATTENTION)}
    # Interleaved: each round times every function once.
    times = {name: [] for name in fns}
    for name, fn in fns.items():
        try:
            harness.time_ms(fn, 3, 3)
        except Exception as e:  # noqa: BLE001
            times[name] = None
            print(f"{name}: {harness.short_error(e)}")
    for _ in range(5):
        for name, fn in fns.items():
            if times[name] is not None:
                times[name].append(harness.time_ms(fn, 2, 20))
    cudnn = harness.median(times["sdpa cudnn"]) if times["sdpa cudnn"] else None
    for name, t in times.items():
        if not t:
            continue
        ms = harness.median(t)
        rows.append({"case": f"decode B{b} H{h}/{hk} d{d} Nk {nk}", "impl": name, "ms": ms,
                     "GB/s": kv_bytes / ms / 1e6,
                     "vs cudnn": (cudnn / ms) if cudnn else None})


def main():
    global attngen, fa
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-bench", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--only", choices=["func", "varlen", "kvcache"],
                        help="one group of checks (for compute-sanitizer runs)")
    args = parser.parse_args()
    import attngen as package
    from attngen import flash_attn_interface
    attngen, fa = package, flash_attn_interface
    harness.precise_float32()
    res = Results()
    worst = 0.0
    if args.only in (None, "func"):
        worst = check_func(res, args.quick)
    if args.only in (None, "varlen"):
        check_varlen(res, args.quick)
    if args.only in (None, "kvcache"):
        check_kvcache(res, args.quick)
    rows = []
    if not args.no_bench and not args.only:
        harness.warm_up_gpu()
        bench(res, rows)
    groups = {}
    for group, _, ok, _ in res.rows:
        passed, total = groups.get(group, (0, 0))
        groups[group] = (passed + ok, total + 1)
    print("\n| check | passed |")
    print("|---|---|")
    for group, (passed, total) in groups.items():
        print(f"| {group} | {passed}/{total} |")
    print(f"\nflash_attn_func: worst error / PyTorch's error = {worst:.2f} (bar 2)")
    if rows:
        print("\n| case | impl | ms | HBM GB/s (% of peak) | vs cuDNN |")
        print("|---|---|---|---|---|")
        for r in rows:
            ratio = f"{r['vs cudnn']:.2f}x" if r["vs cudnn"] else "-"
            print(f"| {r['case']} | {r['impl']} | {r['ms']:.3f} | {r['GB/s']:.0f} "
                  f"({r['GB/s'] / (PEAK_TBPS * 10):.0f}%) | {ratio} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"checks": [list(r) for r in res.rows], "bench": rows}, f, indent=1)
    print(f"\nflash_attn_check: {'all passed' if not res.failed else f'{res.failed} FAILED'}")
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
