"""FP8 attention_varlen on the GPU (issue 22): random packed batches of
ragged sequences (empty ones included) against the dequantized float64
reference, sequence by sequence, with fp8_check's criterion (max |O - ref| at
most 2x that of the same FP8 math in PyTorch); outputs poisoned first; then
the speed of the varlen kernel beside the dense FP8 kernel on the same
tokens. Half the cases read k and v from a paged cache (pages of 16 to 256
rows in a shuffled order, NaN in every row no sequence owns). Descales per tensor, per (sequence, kv head) and per 128-row block
of each sequence, made in PyTorch or by attngen.quantize_fp8_varlen (with and
without the rotation), whose bytes and descales must equal what
attngen.quantize_fp8 makes of each sequence alone.

    PYTHONPATH=python:gpu ATTNGEN_LIBRARY=... python3 gpu/fp8_varlen_check.py \
        [--cases N] [--seed S] [--no-bench] [--json PATH]

Exit status 0 when every case passed.
"""

import argparse
import json
import math
import random
import sys

import torch

import attngen
import fp8_check
import harness
from fp8_check import FP8, dequantize, emulate_fp8, judge, quantize

#: Masks: (causal, bottom_right, window).
MASKS = ((False, True, (-1, -1)), (True, True, (-1, -1)), (True, False, (-1, -1)),
         (False, True, (100, 0)))


def draw(rng, index):
    b = rng.randint(1, 5)
    h, hkv = rng.choice(fp8_check.HEADS)
    causal, bottom_right, window = rng.choice(MASKS)
    lengths = [rng.choice([0, rng.randint(1, 20), rng.randint(1, 700), rng.randint(1, 2000)])
               for _ in range(2 * b)]
    return dict(index=index, d=rng.choice(fp8_check.SUPPORTED_DIMS), b=b, h=h, hkv=hkv,
                lq=lengths[:b], lk=lengths[b:], causal=causal, bottom_right=bottom_right,
                window=window, quant=rng.choice(QUANTS), torch_seed=rng.randrange(1 << 31),
                page=rng.choice((0, 0, 16, 64, 128, 256)))


#: How a case quantizes: in PyTorch (none, per tensor, per (sequence, kv
#: head), per block of each sequence), or by attngen.quantize_fp8_varlen
#: ("attngen-<granularity>[-hadamard]").
QUANTS = ("none", "tensor", "head", "block", "attngen-tensor", "attngen-head",
          "attngen-block", "attngen-head-hadamard", "attngen-block-hadamard")


def paged(k8, v8, lengths, page, seed):
    """(k pages, v pages, block table) holding packed e4m3 k8, v8 (total, Hkv,
    D): each sequence's keys in pages handed out in a random order, NaN
    (0x7f) in every row nobody owns, the table's spare columns naming NaN
    pages or pages past the cache."""
    used = [-(-n // page) for n in lengths]
    max_blocks, spare = max(used + [1]) + 1, 3
    num_blocks = sum(used) + spare
    shape = (num_blocks, page) + tuple(k8.shape[1:])
    pages = [torch.full(shape, 0x7F, dtype=torch.uint8, device="cuda") for _ in range(2)]
    order = list(range(num_blocks))
    random.Random(seed).shuffle(order)
    table = torch.empty(len(lengths), max_blocks, dtype=torch.int32)
    start, next_page = 0, 0
    for b, n in enumerate(lengths):
        for j in range(max_blocks):
            if j < used[b]:
                p, next_page = order[next_page], next_page + 1
                rows = min(page, n - j * page)
                for cache, x in zip(pages, (k8, v8)):
                    first = start + j * page
                    cache[p, :rows] = x[first:first + rows].view(torch.uint8)
                table[b, j] = p
            else:
                table[b, j] = order[-1 - (j % spare)] if (b + j) % 3 else num_blocks + 5
        start += n
    return pages[0].view(FP8), pages[1].view(FP8), table.cuda()


def quantize_packed(x, lengths, groups, granularity):
    """x (total, H, D) float32 quantized per tensor, per sequence and group
    of heads ((B, groups) descales) or per 128-row block of each sequence
    ((B, H, ceil(max / 128)), padded with ones): (x8, descale)."""
    if granularity == "block":
        blocks = -(-max(lengths) // fp8_check.BLOCK_ROWS)
        parts, descales, start = [], [], 0
        for n in lengths:
            d = torch.ones(1, x.shape[1], blocks, device=x.device)
            if n:
                x8, got = quantize(x[None, start:start + n], "block")
                parts.append(x8[0])
                d[:, :, :got.shape[2]] = got
            descales.append(d)
            start += n
        return (torch.cat(parts) if parts else x.to(FP8)), torch.cat(descales)
    if granularity != "head":
        if x.numel() == 0:
            return x.to(FP8), None if granularity == "none" else torch.ones(1, device=x.device)
        x8, d = quantize(x[None], granularity)
        return x8[0], d
    parts, descales, start = [], [], 0
    for n in lengths:
        if n == 0:
            descales.append(torch.ones(1, groups, device=x.device))
            continue
        x8, d = quantize(x[None, start:start + n], "head", groups)
        parts.append(x8[0])
        descales.append(d)
        start += n
    if not parts:
        return x.to(FP8), torch.cat(descales)
    return torch.cat(parts), torch.cat(descales)


def run(c):
    torch.manual_seed(c["torch_seed"])
    d, h, hkv = c["d"], c["h"], c["hkv"]
    tq, tk = sum(c["lq"]), sum(c["lk"])
    q = torch.randn(tq, h, d, device="cuda")
    k, v = (torch.randn(tk, hkv, d, device="cuda") for _ in range(2))
    cu_q, cu_k = (torch.tensor(harness.cu_seqlens(n), dtype=torch.int32, device="cuda")
                  for n in (c["lq"], c["lk"]))
    row = dict(c)
    if c["quant"].startswith("attngen"):
        try:
            (q8, k8, v8, qd, kd, vd), row["quantize_mismatch"] = quantize_with_attngen(
                q, k, v, cu_q, cu_k, c)
        except Exception as e:  # noqa: BLE001 -- reported in the row
            return dict(row, ok=False, error="quantize_fp8_varlen: " + harness.short_error(e))
    else:
        (q8, qd), (k8, kd), (v8, vd) = (quantize_packed(x, n, hkv, c["quant"])
                                        for x, n in ((q, c["lq"]), (k, c["lk"]), (v, c["lk"])))
    addresses = harness.poison_next_allocations([((tq, h, d), torch.bfloat16),
                                                 ((h, tq), torch.float32)])
    kv = (k8, v8, None)
    if c.get("page"):
        kv = paged(k8, v8, c["lk"], c["page"], c["torch_seed"])
    try:
        out, lse = attngen.attention_varlen(
            q8, kv[0], kv[1], cu_q, cu_k, max(c["lq"]), max(c["lk"]), causal=c["causal"],
            window_size=c["window"], return_lse=True,
            causal_align="bottom-right" if c["bottom_right"] else "top-left",
            q_descale=qd, k_descale=kd, v_descale=vd, block_table=kv[2])
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 -- reported in the row
        return dict(row, ok=False, error=harness.short_error(e))
    row["poisoned"] = harness.reused_poisoned_blocks((out, lse), addresses)
    worst = dict(ratio=0.0, lse_err=0.0)
    ok, sq, sk = True, 0, 0
    scale = 1.0 / math.sqrt(d)
    for b, (nq, nk) in enumerate(zip(c["lq"], c["lk"])):
        if nq and not nk:
            # A sequence without keys: its rows are 0 with LSE -inf.
            ok = ok and bool((out[sq:sq + nq] == 0).all()) and bool(
                torch.isneginf(lse[:, sq:sq + nq]).all())
        elif nq:
            def part(x, start, n, descale, per_head):
                x = x[None, start:start + n]
                if descale is None or descale.numel() == 1 or not per_head:
                    return dequantize(x, descale)
                return dequantize(x, descale[b:b + 1])
            # Descales per sequence: its row of them.
            per_head = "head" in c["quant"] or "block" in c["quant"]
            qs = part(q8, sq, nq, qd, per_head)
            ks = part(k8, sk, nk, kd, per_head)
            vs = part(v8, sk, nk, vd, per_head)
            ref, ref_lse = harness.reference(qs, ks, vs, scale, c["causal"], c["bottom_right"],
                                             window=c["window"], compute_dtype=torch.float64)
            mask = harness.visibility_mask(nq, nk, c["causal"], c["bottom_right"],
                                           c["window"], "cuda")
            verdict = judge(out[None, sq:sq + nq], lse[None, :, sq:sq + nq], ref, ref_lse,
                            emulate_fp8(qs, ks, vs, scale, mask))
            ok = ok and verdict["ok"]
            worst["ratio"] = max(worst["ratio"], verdict["ratio"])
            worst["lse_err"] = max(worst["lse_err"], verdict["lse_err"])
        sq, sk = sq + nq, sk + nk
    mismatch = row.get("quantize_mismatch")
    row.update(worst, ok=ok and not mismatch)
    return row


def quantize_with_attngen(q, k, v, cu_q, cu_k, c):
    """attngen.quantize_fp8_varlen of bf16 q, k, v as the case asks, and
    where it differs from attngen.quantize_fp8 of each sequence alone (None
    when nowhere): per-sequence scales must give the same bytes and
    descales; a per-tensor scale, the same descale as the whole batch's."""
    parts = c["quant"].split("-")
    granularity, hadamard = parts[1], parts[-1] == "hadamard"
    qb, kb, vb = (x.to(torch.bfloat16) for x in (q, k, v))
    x = attngen.quantize_fp8_varlen(qb, kb, vb, cu_q, cu_k, max(c["lq"]), max(c["lk"]),
                                    granularity=granularity, hadamard=hadamard)
    sq = sk = 0
    for b, (nq, nk) in enumerate(zip(c["lq"], c["lk"])):
        if nq and nk and granularity != "tensor":
            alone = attngen.quantize_fp8(qb[None, sq:sq + nq], kb[None, sk:sk + nk],
                                         vb[None, sk:sk + nk], granularity=granularity,
                                         hadamard=hadamard, v_layout="row_major")
            for name, got, want, start, n in (("q", x.q, alone.q, sq, nq),
                                             ("k", x.k, alone.k, sk, nk),
                                             ("v", x.v, alone.v, sk, nk)):
                got8 = got[start:start + n].view(torch.uint8)
                if not torch.equal(got8, want[0].view(torch.uint8)):
                    return (x.q, x.k, x.v, *x.descales.values()), f"{name} bytes of sequence {b}"
            for name, got, want in (("q_descale", x.q_descale, alone.q_descale),
                                    ("k_descale", x.k_descale, alone.k_descale),
                                    ("v_descale", x.v_descale, alone.v_descale)):
                mine = got[b:b + 1]
                if granularity == "block":
                    mine = mine[:, :, :want.shape[2]]
                if not torch.equal(mine, want):
                    return (x.q, x.k, x.v, *x.descales.values()), f"{name} of sequence {b}"
        sq, sk = sq + nq, sk + nk
    if granularity == "tensor" and tq_tk_nonzero(c):
        whole = attngen.quantize_fp8(qb[None], kb[None], vb[None], granularity="tensor",
                                     hadamard=hadamard, v_layout="row_major")
        for name in ("q_descale", "k_descale", "v_descale"):
            if not torch.equal(getattr(x, name), getattr(whole, name)):
                return (x.q, x.k, x.v, *x.descales.values()), f"{name} per tensor"
    return (x.q, x.k, x.v, *x.descales.values()), None


def tq_tk_nonzero(c):
    return sum(c["lq"]) > 0 and sum(c["lk"]) > 0


def describe(c):
    mask = ("causal-" + ("br" if c["bottom_right"] else "tl")) if c["causal"] else "full"
    if c["window"] != (-1, -1):
        mask += f" win{c['window']}"
    pages = f" pages of {c['page']}" if c.get("page") else ""
    return (f"#{c['index']} d{c['d']} h{c['h']}/{c['hkv']} {mask} {c['quant']}{pages} "
            f"lq {c['lq']} lk {c['lk']}")


def bench():
    """The varlen kernel on B sequences of N against the dense kernel on
    [B, N]: the same FP8 work (v row-major for both)."""
    rows = []
    for d, n, causal in ((128, 8192, False), (128, 8192, True), (128, 1024, True),
                         (256, 8192, True), (64, 8192, False)):
        b, h = harness.bench_batch(n), harness.bench_heads(d)
        q, k, v = (torch.randn(b, n, h, d, device="cuda").to(FP8) for _ in range(3))
        cu = torch.tensor(harness.cu_seqlens([n] * b), dtype=torch.int32, device="cuda")
        packed = [x.reshape(b * n, h, d) for x in (q, k, v)]
        # The same keys in pages of 256, in order.
        pages = [x.reshape(b * n // 256, 256, h, d) for x in packed[1:]]
        table = torch.arange(b * n // 256, dtype=torch.int32, device="cuda").view(b, -1)
        ms, errors = fp8_check.time_interleaved({
            "dense": lambda: attngen.attention(q, k, v, causal=causal),
            "varlen": lambda: attngen.attention_varlen(*packed, cu, cu, n, n, causal=causal,
                                                       check_seqlens=False),
            "paged": lambda: attngen.attention_varlen(packed[0], *pages, cu, cu, n, n,
                                                      causal=causal, check_seqlens=False,
                                                      block_table=table)})
        flops = harness.attention_flops(b, h, n, n, d, causal)
        rows.append(dict(d=d, n=n, causal=causal, errors=errors,
                         **{f"{k} tflops": harness.tflops(flops, t) for k, t in ms.items()}))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--no-bench", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--sanitize", action="store_true",
                        help="two tiny cases for compute-sanitizer, no speed")
    args = parser.parse_args()
    fp8_check.attngen = attngen
    rng = random.Random(args.seed)
    drawn = [draw(rng, i) for i in range(args.cases)]
    if args.sanitize:
        args.no_bench = True
        drawn = [dict(index=0, d=128, b=3, h=8, hkv=2, lq=[37, 0, 150], lk=[200, 5, 0],
                      causal=True, bottom_right=True, window=(-1, -1), quant="head",
                      torch_seed=1),
                 dict(index=1, d=64, b=2, h=4, hkv=4, lq=[1, 130], lk=[129, 77],
                      causal=False, bottom_right=True, window=(-1, -1), quant="tensor",
                      torch_seed=2),
                 dict(index=2, d=128, b=3, h=4, hkv=2, lq=[130, 0, 9], lk=[300, 3, 0],
                      causal=True, bottom_right=True, window=(-1, -1),
                      quant="attngen-block-hadamard", torch_seed=3, page=64),
                 dict(index=3, d=256, b=2, h=2, hkv=1, lq=[200, 1], lk=[129, 260],
                      causal=False, bottom_right=True, window=(-1, -1), quant="block",
                      torch_seed=4, page=16)]
    results = []
    for c in drawn:
        r = run(c)
        results.append(r)
        verdict = "ok  " if r.get("ok") else "FAIL"
        detail = r.get("error") or (f"worst {r['ratio']:.2f}x the emulation's error, lse "
                                    f"{r['lse_err']:.1e}, poisoned {r['poisoned']}")
        if r.get("quantize_mismatch"):
            detail += f"; quantize_fp8_varlen differs from quantize_fp8: {r['quantize_mismatch']}"
        print(f"{verdict} {describe(r)}: {detail}", flush=True)
    passed = sum(bool(r.get("ok")) for r in results)
    print(f"fp8 varlen correctness: {passed}/{len(results)} passed")
    bench_rows = [] if args.no_bench else bench()
    if bench_rows:
        def ratio(r, a, b):
            return (harness.fmt(r[f"{a} tflops"] / r[f"{b} tflops"], ".3f")
                    if f"{a} tflops" in r and f"{b} tflops" in r else "-")
        harness.print_table(
            ["shape", "dense TFLOPS", "varlen TFLOPS", "varlen/dense", "paged(256) TFLOPS",
             "paged/varlen"],
            [[f"d{r['d']} {r['n'] // 1024}k{' causal' if r['causal'] else ''}",
              harness.fmt(r.get("dense tflops")), harness.fmt(r.get("varlen tflops")),
              ratio(r, "varlen", "dense"), harness.fmt(r.get("paged tflops")),
              ratio(r, "paged", "varlen")] for r in bench_rows])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(cases=results, bench=bench_rows), f, indent=1, default=str)
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
