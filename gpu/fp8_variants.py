#!/usr/bin/env python3
"""Times FP8 kernel variants compiled here with the CLI (tiles, exp2
emulation, ablations), loaded from their PTX and metadata, on the shapes of
the speed table, interleaved, beside the default FP8 kernel of each shape:
what chooses the FP8 defaults (docs/PERF.md).

    python3 gpu/fp8_variants.py DIR [--json OUT]

DIR holds NAME.ptx and NAME.json pairs; NAME is d<D>[_causal]_<variant>, and
the variant "base" is the default kernel of that head dim and mask.
"""

import argparse
import collections
import glob
import json
import os
import re

import torch

import harness

ATTNRT_DTYPE_E4M3 = 3
ROUNDS, WARMUP, ITERS = 5, 3, 10
TOKENS, WIDTH = 16384, 2048


def fp8_args(rt, q, k, v, out, descale):
    """attnrt_forward_args of an FP8 call: v K-major, per-tensor descales."""
    a = rt.ForwardArgs()
    a.q, a.k, a.v, a.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()
    a.lse = None
    a.batch, a.nq, a.num_heads, a.head_dim = q.shape
    a.nk, a.num_kv_heads = k.shape[1], k.shape[2]
    for field, t in zip(("q_strides", "k_strides", "v_strides", "o_strides"), (q, k, v, out)):
        getattr(a, field)[:] = tuple(t.stride())
    a.dtype = ATTNRT_DTYPE_E4M3
    for prefix in ("q", "k", "v"):
        setattr(a, f"{prefix}_descale", descale.data_ptr())
        getattr(a, f"{prefix}_descale_strides")[:] = (0, 0)
    return a


def inputs(d, n):
    """q, k, K-major v (e4m3) and out (bf16) of the speed table's shape."""
    b, h = TOKENS // n, WIDTH // d
    q, k = (torch.randn(b, n, h, d, device="cuda").to(torch.float8_e4m3fn) for _ in range(2))
    vt = torch.randn(b, h, d, n, device="cuda").to(torch.float8_e4m3fn)
    out = torch.empty(b, n, h, d, device="cuda", dtype=torch.bfloat16)
    return q, k, vt.permute(0, 3, 1, 2), out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--json")
    parser.add_argument("--n", type=int, nargs="+", default=[1024, 8192])
    args = parser.parse_args()
    rt = harness.Runtime(os.environ["ATTNGEN_LIBRARY"])
    groups = collections.defaultdict(dict)
    for ptx in sorted(glob.glob(os.path.join(args.dir, "*.ptx"))):
        name = os.path.basename(ptx)[:-4]
        match = re.fullmatch(r"d(\d+)(_causal)?_(.+)", name)
        if not match:
            continue
        d, causal, variant = int(match[1]), bool(match[2]), match[3]
        groups[(d, causal)][variant] = rt.load(ptx, ptx[:-4] + ".json")
    descale = torch.ones(1, device="cuda")
    harness.warm_up_gpu()
    rows = []
    for (d, causal), modules in sorted(groups.items()):
        for n in args.n:
            q, k, v, out = inputs(d, n)
            flops = harness.attention_flops(q.shape[0], q.shape[2], n, n, d, causal)
            calls = {name: m.launcher(fp8_args(rt, q, k, v, out, descale))
                     for name, m in modules.items()}
            times = collections.defaultdict(list)
            for _ in range(ROUNDS):
                for name, call in calls.items():
                    times[name].append(harness.time_ms(call, WARMUP, ITERS))
            base = harness.median(times["base"]) if "base" in times else None
            for name in sorted(calls, key=lambda x: (x != "base", x)):
                ms = harness.median(times[name])
                rows.append(dict(d=d, n=n, causal=causal, variant=name, ms=ms,
                                 tflops=harness.tflops(flops, ms),
                                 vs_base=base / ms if base else None))
    print(f"{'d':>3} {'N':>5} {'causal':>6} {'variant':<28} {'TFLOPS':>7} {'vs base':>7}")
    for r in rows:
        vs = f"{r['vs_base']:.3f}" if r["vs_base"] else "-"
        print(f"{r['d']:>3} {r['n']:>5} {str(r['causal']):>6} {r['variant']:<28} "
              f"{r['tflops']:7.1f} {vs:>7}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
