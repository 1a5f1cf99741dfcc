"""The causal backward with grouped heads: gradients of the one-kernel backward and of the
deterministic pair against a float64 reference on ragged causal GQA cases (Nq != Nk, rows
without keys), then TFLOPS of the default, the pair and the one-kernel backward beside
SDPA's cuDNN backward (CUDNN=1) on causal shapes, MHA and GQA (bf16, B*N = 16k).

    python3 gpu/causal_backward_bench.py TAG [check|bench|all] [causal|choice]

The shape set `choice` (instead of the default `causal`) times the shapes where Python's
choice between the one-kernel backward and the pair (`_runs_fused`) is closest: causal at
512 and 1k keys (d64, d128), and unmasked d64 at 1k, 4k and 8k.

One JSON line per case or shape, labelled TAG, so that runs of several builds or
environments (one process each, fresh ATTNGEN_CACHE_DIR) can be laid side by side, as the
attn-longest-first A/B was (docs/PERF.md, 2026-12-04). Exit status 1 when a check fails."""
import json
import math
import os
import sys

import torch

import harness
import attngen

torch.backends.cuda.matmul.allow_tf32 = False
tag = sys.argv[1]
only = sys.argv[2] if len(sys.argv) > 2 else "all"
shape_set = sys.argv[3] if len(sys.argv) > 3 else "causal"

def ref_grads(q, k, v, dout, causal):
    qf, kf, vf = (t.detach().double().requires_grad_() for t in (q, k, v))
    h, hkv = q.shape[2], k.shape[2]
    ke = kf.repeat_interleave(h // hkv, 2); ve = vf.repeat_interleave(h // hkv, 2)
    s = torch.einsum("bqhd,bkhd->bhqk", qf, ke) / math.sqrt(q.shape[-1])
    nq, nk = q.shape[1], k.shape[1]
    if causal:
        i = torch.arange(nq, device=q.device)[:, None]; j = torch.arange(nk, device=q.device)[None]
        s = s.masked_fill(j > i + (nk - nq), float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    o = torch.einsum("bhqk,bkhd->bqhd", p, ve)
    return torch.autograd.grad(o, (qf, kf, vf), dout.double())

def check():
    ok = True
    for (b, nq, nk, h, hkv, d) in [(2, 333, 517, 8, 2, 128), (1, 1000, 1000, 16, 2, 128),
                                   (2, 517, 333, 4, 4, 64), (1, 700, 1300, 8, 1, 64)]:
        torch.manual_seed(nq + d)
        q = torch.randn(b, nq, h, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, nk, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k); dout = torch.randn_like(q)
        out, lse = attngen.attention(q, k, v, causal=True, return_lse=True)
        ref = ref_grads(q, k, v, dout, True)
        for mode in ("pair", "fused"):
            os.environ["ATTNGEN_FUSED_BACKWARD"] = "1" if mode == "fused" else "0"
            g = attngen.attention_backward(dout, q, k, v, out, lse, causal=True)
            os.environ.pop("ATTNGEN_FUSED_BACKWARD")
            errs = [((a.double() - r).abs().max() / r.abs().max()).item() for a, r in zip(g, ref)]
            good = all(e < 2e-2 for e in errs) and all(torch.isfinite(a).all() for a in g)
            ok &= good
            print(json.dumps(dict(tag=tag, check=(b, nq, nk, h, hkv, d), mode=mode,
                                  errs=[round(e, 5) for e in errs], ok=bool(good))), flush=True)
    return ok

SHAPES = {  # d, n, h, hkv, causal (B = 16k / n)
    "causal": [
        (128, 8192, 16, 16, True), (128, 4096, 16, 16, True), (128, 1024, 16, 16, True),
        (128, 2048, 16, 16, True), (64, 4096, 32, 32, True), (64, 1024, 32, 32, True),
        (128, 8192, 16, 2, True), (64, 8192, 32, 4, True), (256, 8192, 8, 8, True),
    ],
    "choice": [
        (128, 512, 16, 16, True), (128, 1024, 16, 16, True), (64, 512, 32, 32, True),
        (64, 1024, 32, 32, True), (64, 1024, 32, 32, False), (64, 4096, 32, 32, False),
        (64, 8192, 32, 32, False),
    ],
}

def bench():
    harness.warm_up_gpu()
    for d, n, h, hkv, causal in SHAPES[shape_set]:
        b = 16384 // n
        torch.manual_seed(n + d)
        q = torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, n, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k); dout = torch.randn_like(q)
        out, lse = attngen.attention(q, k, v, causal=causal, return_lse=True)
        flops = 2.5 * harness.attention_flops(b, h, n, n, d, causal)
        row = dict(tag=tag, d=d, n=n, h=h, hkv=hkv, causal=causal)
        for name, det in (("default", False), ("pair", True)):
            ms, why = harness.try_time(lambda: attngen.attention_backward(
                dout, q, k, v, out, lse, causal=causal, deterministic=det), 3, 20)
            row[name] = round(harness.tflops(flops, ms), 1) if ms else why
        if d in (64, 128):
            os.environ["ATTNGEN_FUSED_BACKWARD"] = "1"
            ms, why = harness.try_time(lambda: attngen.attention_backward(
                dout, q, k, v, out, lse, causal=causal), 3, 20)
            os.environ.pop("ATTNGEN_FUSED_BACKWARD")
            row["fused"] = round(harness.tflops(flops, ms), 1) if ms else why
        if os.environ.get("CUDNN") == "1":
            qt, kt, vt = (t.detach().requires_grad_() for t in (q, k, v))
            try:
                dot = dout.transpose(1, 2)
                with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
                    o = torch.nn.functional.scaled_dot_product_attention(
                        qt.transpose(1, 2), kt.transpose(1, 2), vt.transpose(1, 2),
                        is_causal=causal, enable_gqa=hkv != h)
                    ms, why = harness.try_time(lambda: torch.autograd.grad(
                        o, (qt, kt, vt), dot, retain_graph=True), 3, 20)
                row["cudnn"] = round(harness.tflops(flops, ms), 1) if ms else why
            except Exception as e:  # noqa: BLE001
                row["cudnn"] = harness.short_error(e)
        print(json.dumps(row), flush=True)

if shape_set not in SHAPES or only not in ("all", "check", "bench"):
    sys.exit(f"usage: causal_backward_bench.py TAG [check|bench|all] [{'|'.join(SHAPES)}]")
ok = True
if only in ("all", "check"):
    ok = check()
if only in ("all", "bench"):
    bench()
sys.exit(0 if ok else 1)
