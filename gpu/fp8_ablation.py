"""FP8 ablations on the GPU (issue 22): block scales against per-head scales in
the attention kernel; v read K-major (pre-transposed, as quantize_fp8 writes
it) against v row-major, transposed in shared memory by the producer
warpgroup (attn-transpose-v; the "v row-major" columns); and the whole FP8 path (attngen.quantize_fp8 with the
Hadamard rotation, then FP8 attention) against attngen's bf16 attention on
the same bf16 inputs: the quantize kernel must not cost more than FP8 saves.

    PYTHONPATH=python:gpu ATTNGEN_LIBRARY=... python3 gpu/fp8_ablation.py [--json PATH]

B·N = 16k tokens, H·D = 2048, TFLOPS counted as bf16 attention's. Rounds of
every call interleave (fp8_check.time_interleaved).
"""

import argparse
import json

import torch

import attngen
import attngen._torch_fp8
import harness
from fp8_check import time_interleaved

# Every row-major v through the in-kernel transpose, d256 included (attention()
# copies a d256 one K-major by default).
attngen._torch_fp8.TRANSPOSE_IN_KERNEL_UP_TO = 256

SHAPES = ((128, 8192, False), (128, 8192, True), (256, 8192, False), (256, 8192, True),
          (64, 8192, False), (64, 8192, True), (128, 1024, False), (256, 1024, True))


def row(d, n, causal):
    b, h = harness.bench_batch(n), harness.bench_heads(d)
    q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    head = attngen.quantize_fp8(q, k, v, granularity="head", hadamard=True, v_layout="k_major")
    block = attngen.quantize_fp8(q, k, v, granularity="block", hadamard=True,
                                 v_layout="k_major")
    # The same e4m3 bytes with v row-major (head dim contiguous).
    head_v_rows = head.v.contiguous()
    block_v_rows = attngen.quantize_fp8(q, k, v, granularity="block", hadamard=True,
                                        v_layout="row_major").v
    assert head_v_rows.stride()[-1] == 1 and block_v_rows.stride()[-1] == 1
    assert torch.equal(block_v_rows.view(torch.uint8), block.v.view(torch.uint8))
    calls = {
        "fp8 per-head": lambda: attngen.attention(head.q, head.k, head.v, causal=causal,
                                                  **head.descales),
        "fp8 block": lambda: attngen.attention(block.q, block.k, block.v, causal=causal,
                                               **block.descales),
        "fp8 per-head v row-major": lambda: attngen.attention(
            head.q, head.k, head_v_rows, causal=causal, **head.descales),
        "fp8 block v row-major": lambda: attngen.attention(
            block.q, block.k, block_v_rows, causal=causal, **block.descales),
        "quantize block+H": lambda: attngen.quantize_fp8(q, k, v, granularity="block",
                                                         hadamard=True, v_layout="k_major"),
        "quantize head+H": lambda: attngen.quantize_fp8(q, k, v, granularity="head",
                                                        hadamard=True, v_layout="k_major"),
        "quantize block+H v row-major": lambda: attngen.quantize_fp8(
            q, k, v, granularity="block", hadamard=True, v_layout="row_major"),
        "bf16": lambda: attngen.attention(q, k, v, causal=causal),
    }
    ms, errors = time_interleaved(calls)
    flops = harness.attention_flops(b, h, n, n, d, causal)
    r = dict(d=d, n=n, causal=causal, ms=ms, errors=errors)
    for name in ("fp8 per-head", "fp8 block", "fp8 per-head v row-major",
                 "fp8 block v row-major", "bf16"):
        if name in ms:
            r[name + " tflops"] = harness.tflops(flops, ms[name])
    if all(name in ms for name in ("fp8 block", "quantize block+H", "bf16")):
        r["end to end vs bf16"] = ms["bf16"] / (ms["fp8 block"] + ms["quantize block+H"])
    if all(name in ms for name in ("fp8 block v row-major", "quantize block+H v row-major",
                                   "bf16")):
        r["end to end v row-major vs bf16"] = ms["bf16"] / (
            ms["fp8 block v row-major"] + ms["quantize block+H v row-major"])
    return r


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    harness.warm_up_gpu()
    rows = []
    for d, n, causal in SHAPES:
        try:
            rows.append(row(d, n, causal))
        except Exception as e:  # noqa: BLE001 -- reported in the table
            rows.append(dict(d=d, n=n, causal=causal, error=harness.short_error(e)))
        torch.cuda.empty_cache()
    print("\nFP8 v layout (TFLOPS): K-major (pre-transposed) against row-major (transposed "
          "in the kernel)")
    harness.print_table(
        ["shape", "per-head K-major", "per-head row-major", "row/K", "block K-major",
         "block row-major", "row/K", "quant+H v row ms", "(quant+fp8) v row vs bf16"],
        [[f"d{r['d']} {r['n'] // 1024}k{' causal' if r['causal'] else ''}"] +
         [cell for scales in ("fp8 per-head", "fp8 block") for cell in (
             harness.fmt(r.get(scales + " tflops")),
             harness.fmt(r.get(scales + " v row-major tflops")),
             harness.fmt(r[scales + " v row-major tflops"] / r[scales + " tflops"], ".3f")
             if scales + " tflops" in r and scales + " v row-major tflops" in r else "-")] +
         [harness.fmt(r.get("ms", {}).get("quantize block+H v row-major"), ".3f"),
          harness.fmt(r.get("end to end v row-major vs bf16"), ".2f") + "x"
          if r.get("end to end v row-major vs bf16") else "-"]
         for r in rows])
    print("\nFP8 ablation (TFLOPS as bf16 attention's; ms of quantize_fp8 for q, k and v)")
    harness.print_table(
        ["shape", "fp8 per-head", "fp8 block", "block/head", "bf16", "quant block+H ms",
         "quant head+H ms", "fp8 ms", "(quant+fp8) vs bf16"],
        [[f"d{r['d']} {r['n'] // 1024}k{' causal' if r['causal'] else ''}",
          harness.fmt(r.get("fp8 per-head tflops")), harness.fmt(r.get("fp8 block tflops")),
          harness.fmt(r["fp8 block tflops"] / r["fp8 per-head tflops"], ".3f")
          if "fp8 block tflops" in r and "fp8 per-head tflops" in r else "-",
          harness.fmt(r.get("bf16 tflops")),
          harness.fmt(r.get("ms", {}).get("quantize block+H"), ".3f"),
          harness.fmt(r.get("ms", {}).get("quantize head+H"), ".3f"),
          harness.fmt(r.get("ms", {}).get("fp8 block"), ".3f"),
          harness.fmt(r.get("end to end vs bf16"), ".2f") + "x"
          if r.get("end to end vs bf16") else "-"] for r in rows])
    for r in rows:
        for why in [r.get("error")] + list(r.get("errors", {}).values()):
            if why:
                print(f"  d{r['d']} {r['n']}: {why}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
