"""FP8 attention_varlen on the GPU (issue 22): random packed batches of
ragged sequences (empty ones included) against the dequantized float64
reference, sequence by sequence, with fp8_check's criterion (max |O - ref| at
most 2x that of the same FP8 math in PyTorch); outputs poisoned first; then
the speed of the varlen kernel beside the dense FP8 kernel on the same
tokens.

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
                window=window, quant=rng.choice(("none", "tensor", "head")),
                torch_seed=rng.randrange(1 << 31))


def quantize_packed(x, lengths, groups, granularity):
    """x (total, H, D) float32 quantized per tensor, or per sequence and group
    of heads ((B, groups) descales): (x8, descale)."""
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
    (q8, qd), (k8, kd), (v8, vd) = (quantize_packed(x, n, hkv, c["quant"])
                                    for x, n in ((q, c["lq"]), (k, c["lk"]), (v, c["lk"])))
    cu_q, cu_k = (torch.tensor(harness.cu_seqlens(n), dtype=torch.int32, device="cuda")
                  for n in (c["lq"], c["lk"]))
    row = dict(c)
    addresses = harness.poison_next_allocations([((tq, h, d), torch.bfloat16),
                                                 ((h, tq), torch.float32)])
    try:
        out, lse = attngen.attention_varlen(
            q8, k8, v8, cu_q, cu_k, max(c["lq"]), max(c["lk"]), causal=c["causal"],
            window_size=c["window"], return_lse=True,
            causal_align="bottom-right" if c["bottom_right"] else "top-left",
            q_descale=qd, k_descale=kd, v_descale=vd)
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
            per_head = c["quant"] == "head"
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
    row.update(worst, ok=ok)
    return row


def describe(c):
    mask = ("causal-" + ("br" if c["bottom_right"] else "tl")) if c["causal"] else "full"
    if c["window"] != (-1, -1):
        mask += f" win{c['window']}"
    return (f"#{c['index']} d{c['d']} h{c['h']}/{c['hkv']} {mask} {c['quant']} "
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
        ms, errors = fp8_check.time_interleaved({
            "dense": lambda: attngen.attention(q, k, v, causal=causal),
            "varlen": lambda: attngen.attention_varlen(*packed, cu, cu, n, n, causal=causal,
                                                       check_seqlens=False)})
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
                      torch_seed=2)]
    results = []
    for c in drawn:
        r = run(c)
        results.append(r)
        verdict = "ok  " if r.get("ok") else "FAIL"
        detail = r.get("error") or (f"worst {r['ratio']:.2f}x the emulation's error, lse "
                                    f"{r['lse_err']:.1e}, poisoned {r['poisoned']}")
        print(f"{verdict} {describe(r)}: {detail}", flush=True)
    passed = sum(bool(r.get("ok")) for r in results)
    print(f"fp8 varlen correctness: {passed}/{len(results)} passed")
    bench_rows = [] if args.no_bench else bench()
    if bench_rows:
        harness.print_table(
            ["shape", "dense TFLOPS", "varlen TFLOPS", "varlen/dense"],
            [[f"d{r['d']} {r['n'] // 1024}k{' causal' if r['causal'] else ''}",
              harness.fmt(r.get("dense tflops")), harness.fmt(r.get("varlen tflops")),
              harness.fmt(r["varlen tflops"] / r["dense tflops"], ".3f")
              if "varlen tflops" in r and "dense tflops" in r else "-"] for r in bench_rows])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(cases=results, bench=bench_rows), f, indent=1, default=str)
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
