#!/usr/bin/env python3
"""attngen's backward pass on a GPU: correctness, determinism, autograd and
speed against PyTorch SDPA's backward, in one run.

    ATTNGEN_LIBRARY=.../libattngen.so PYTHONPATH=python \\
        python3 gpu/backward_check.py [--quick] [--json OUT.json] [--no-bench]
        [--only correct|varlen|determinism|autograd|bench|varlen-bench|memory]

* Correctness: dq, dk and dv of attngen.attention_backward against a float32
  reference (autograd through float32 attention), passing when each max error
  is at most 2x that of the same math done by PyTorch in the input dtype
  (+1e-5), flash_attn's criterion. Ragged Nq != Nk, causal (both
  alignments), windows narrower than a block, soft caps, GQA 8:1 and MQA,
  head dims 32..128, bf16 and f16; the gradients start as NaN (poisoned
  blocks) so a row never written shows.
* Varlen: attngen.attention_varlen(...).backward() on packed batches (ragged
  lengths, empty query and key sequences, masks, soft caps, GQA) against
  each sequence's float32 reference, the same criterion; 20 runs bitwise.
* Determinism: 20 runs bitwise equal (GQA, causal).
* Autograd: attngen.attention(...).backward() equals attention_backward, eagerly
  and under torch.compile(fullgraph=True).
* Speed: bf16, B*N = 16k, H*D = 2048, backward only, against SDPA's cuDNN and
  flash backends in the same run; TFLOPS count 2.5x the forward's FLOPs.
Exit status 0 when every check passed.
"""

import argparse
import math
import os
import random
import sys

import torch

import harness

attngen = None
#: ATTNGEN_FUSED_BACKWARD=1: the varlen cases call attention_varlen_backward
#: with deterministic=False (the one-kernel backward where it applies).
FUNCTIONAL_VARLEN = os.environ.get("ATTNGEN_FUSED_BACKWARD") == "1"


def reference_grads(q, k, v, dout, scale, causal, bottom_right, window, softcap, upcast,
                    slopes=None):
    """(out, dq, dk, dv) of attention in float32 (`upcast`) or in the inputs'
    dtype, through autograd: the reference and PyTorch's own error. `slopes`
    (float32 (H,)) adds ALiBi's bias -slope * |i + off - j| in float32, after
    the soft cap, as flash_attn's tests do."""
    dtype = torch.float32 if upcast else q.dtype
    q, k, v = (t.detach().to(dtype).requires_grad_() for t in (q, k, v))
    group = q.shape[2] // k.shape[2]
    kk, vv = k.repeat_interleave(group, 2), v.repeat_interleave(group, 2)
    s = torch.einsum("bthd,bshd->bhts", q, kk) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    nq, nk = q.shape[1], k.shape[1]
    if slopes is not None:
        off = nk - nq if bottom_right else 0
        i = torch.arange(nq, device=q.device).view(nq, 1)
        j = torch.arange(nk, device=q.device).view(1, nk)
        s = s.float() - slopes.view(1, -1, 1, 1) * (i + off - j).abs().float()
    mask = harness.visibility_mask(nq, nk, causal, bottom_right, window, q.device)
    if mask is not None:
        s = s.masked_fill(~mask, -math.inf)
    p = torch.softmax(s.float(), dim=-1)
    if mask is not None:
        p = p.masked_fill(~mask.any(-1, keepdim=True), 0.0)
    out = torch.einsum("bhts,bshd->bthd", p.to(dtype), vv)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), dout.to(dtype))
    return out, dq, dk, dv


def correctness_cases(quick):
    rng = random.Random(7)
    cases = []
    masks = [(False, False, (-1, -1)), (True, False, (-1, -1)), (True, True, (-1, -1)),
             (False, True, (40, 0)), (False, False, (17, 9)), (False, True, (-1, 5))]
    # d160 and d192: dkdv in one pass unmasked (sm_90a), two under a mask;
    # d256: two passes always.
    for d in (32, 64, 96, 128, 160, 192, 256):
        for causal, br, window in masks:
            nq, nk = rng.choice([(1, 1), (7, 300), (113, 77), (255, 256), (300, 130),
                                 (129, 511), (64, 64)])
            h, hkv = rng.choice([(4, 4), (8, 1), (8, 2), (2, 2)])
            softcap = rng.choice([0.0, 0.0, 30.0])
            dtype = rng.choice(["bf16", "bf16", "f16"])
            cases.append(dict(d=d, nq=nq, nk=nk, h=h, hkv=hkv, b=2, causal=causal,
                              bottom_right=br, window=window, softcap=softcap, dtype=dtype,
                              alibi=False))
    # ALiBi: its bias in the recomputed P of both kernels (the dkdv kernel's
    # transposed tiles), without a mask in both alignments, causal, windowed.
    for d, causal, br, window, cap in ((64, False, True, (-1, -1), 0.0),
                                       (64, False, False, (-1, -1), 30.0),
                                       (128, True, True, (-1, -1), 0.0),
                                       (96, False, True, (40, 7), 0.0),
                                       (32, True, False, (-1, -1), 30.0),
                                       (128, False, True, (-1, -1), 0.0)):
        cases.append(dict(d=d, nq=rng.choice([113, 300, 7]), nk=rng.choice([77, 511, 300]),
                          h=8, hkv=2, b=2, causal=causal, bottom_right=br, window=window,
                          softcap=cap, dtype="bf16", alibi=True))
    # A value head dim of its own (DeepSeek's 192/128): v, out, dout and dv
    # are Dv wide.
    for d, dv, causal, br, window, cap in ((192, 128, True, True, (-1, -1), 0.0),
                                           (192, 128, False, False, (-1, -1), 0.0),
                                           (128, 64, False, True, (40, 0), 30.0),
                                           (64, 128, True, False, (-1, -1), 0.0)):
        cases.append(dict(d=d, dv=dv, nq=rng.choice([113, 300, 7]),
                          nk=rng.choice([77, 511, 300]), h=8, hkv=2, b=2, causal=causal,
                          bottom_right=br, window=window, softcap=cap, dtype="bf16",
                          alibi=False))
    if quick:
        cases = cases[::2]
    # The deterministic pair where the one-kernel backward is the default
    # (sm_90a, d64 and d128): the same cases again with deterministic=True.
    cases += [dict(c, det=True) for c in cases if c["d"] in (64, 128)]
    return cases


def run_correctness(cases, results):
    for c in cases:
        dtype = torch.bfloat16 if c["dtype"] == "bf16" else torch.float16
        torch.manual_seed(len(results))
        q = torch.randn(c["b"], c["nq"], c["h"], c["d"], device="cuda", dtype=dtype)
        k = torch.randn(c["b"], c["nk"], c["hkv"], c["d"], device="cuda", dtype=dtype)
        v = torch.randn(c["b"], c["nk"], c["hkv"], c.get("dv", c["d"]), device="cuda",
                        dtype=dtype)
        scale = 1.0 / math.sqrt(c["d"])
        align = "bottom-right" if c["bottom_right"] else "top-left"
        window = c["window"]
        causal = c["causal"]
        slopes = (torch.tensor([2.0 ** (-(hh + 1)) for hh in range(c["h"])], device="cuda")
                  if c.get("alibi") else None)
        out, lse = attngen.attention(q, k, v, causal=causal, return_lse=True,
                                     causal_align=align, softcap=c["softcap"],
                                     window_size=window, alibi_slopes=slopes)
        dout = torch.randn_like(out)
        specs = [(q.shape, dtype), (k.shape, dtype), (v.shape, dtype)]
        addresses = harness.poison_next_allocations(specs)
        dq, dk, dv = attngen.attention_backward(dout, q, k, v, out, lse, causal=causal,
                                                causal_align=align, softcap=c["softcap"],
                                                window_size=window, alibi_slopes=slopes,
                                                deterministic=c.get("det", False))
        poisoned = harness.reused_poisoned_blocks((dq, dk, dv), addresses)
        torch.cuda.synchronize()
        ref = reference_grads(q, k, v, dout, scale, causal, c["bottom_right"], window,
                              c["softcap"], upcast=True, slopes=slopes)
        pt = reference_grads(q, k, v, dout, scale, causal, c["bottom_right"], window,
                             c["softcap"], upcast=False, slopes=slopes)
        row = dict(c)
        ok = True
        for name, got, want, theirs in zip(("dq", "dk", "dv"), (dq, dk, dv), ref[1:], pt[1:]):
            err = (got.float() - want).abs().max().item()
            bound = 2 * (theirs.float() - want).abs().max().item() + 1e-5
            row[f"{name}_err"] = err
            # 2x the bound's share: at most 2 passes (the 1e-5 floor counts,
            # as where PyTorch's own error is 0, e.g. a single key).
            row[f"{name}_ratio"] = err / bound * 2
            if not (err <= bound) or not torch.isfinite(got).all():
                ok = False
        row["poisoned"] = poisoned
        row["ok"] = ok
        results.append(row)
        status = "ok  " if ok else "FAIL"
        print(f"{status} d{c['d']}{'v' + str(c['dv']) if 'dv' in c else ''} {c['dtype']} {c['nq']}x{c['nk']} h{c['h']}/{c['hkv']} "
              f"causal={causal} br={c['bottom_right']} win={window} cap={c['softcap']}"
              f"{' alibi' if c.get('alibi') else ''}{' det' if c.get('det') else ''}: "
              + " ".join(f"{n}={row[n + '_err']:.2e}({row[n + '_ratio']:.2f}x)"
                         for n in ("dq", "dk", "dv")), flush=True)


def run_determinism(results, runs):
    failed = 0
    for d, causal, (h, hkv), n in ((64, True, (8, 1), 1000), (128, False, (8, 2), 777),
                                   (128, True, (16, 16), 2048), (256, True, (8, 2), 1500)):
        torch.manual_seed(d + n)
        q = torch.randn(2, n, h, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(2, n + 3, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        dout = torch.randn_like(q)
        out, lse = attngen.attention(q, k, v, causal=causal, return_lse=True)
        first = attngen.attention_backward(dout, q, k, v, out, lse, causal=causal,
                                           deterministic=True)
        same = True
        for _ in range(runs - 1):
            again = attngen.attention_backward(dout, q, k, v, out, lse, causal=causal,
                                               deterministic=True)
            same = same and all(torch.equal(a, b) for a, b in zip(first, again))
        results.append(dict(d=d, causal=causal, h=h, hkv=hkv, n=n, runs=runs, bitwise=same))
        print(f"{'ok  ' if same else 'FAIL'} determinism d{d} causal={causal} h{h}/{hkv} "
              f"N={n}: {runs} runs bitwise equal: {same}", flush=True)
        failed += not same
    return failed


def run_autograd(results):
    failed = 0
    torch.manual_seed(3)
    q = torch.randn(2, 333, 8, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(2, 400, 2, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(2, 400, 2, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dout = torch.randn(2, 333, 8, 64, device="cuda", dtype=torch.bfloat16)

    def step(fn):
        q.grad = k.grad = v.grad = None
        out = fn(q, k, v)
        out.backward(dout)
        return q.grad.clone(), k.grad.clone(), v.grad.clone()

    # Bitwise comparisons take the deterministic backward; the default (the
    # one-kernel backward where it applies) is compared with it below.
    eager = step(lambda q, k, v: attngen.attention(q, k, v, causal=True, deterministic=True))
    with torch.no_grad():
        out, lse = attngen.attention(q, k, v, causal=True, return_lse=True)
    direct = attngen.attention_backward(dout, q, k, v, out, lse, causal=True,
                                        deterministic=True)
    same = all(torch.equal(a, b) for a, b in zip(eager, direct))
    print(f"{'ok  ' if same else 'FAIL'} autograd eager == attention_backward: {same}",
          flush=True)
    failed += not same
    # The one-kernel backward: dK and dV are the same sums in the same order
    # (bitwise equal); dQ's additions arrive in a varying order.
    fast = step(lambda q, k, v: attngen.attention(q, k, v, causal=True))
    dq_gap = ((fast[0].float() - direct[0].float()).abs().max()
              / direct[0].float().abs().max()).item()
    same_f = torch.equal(fast[1], direct[1]) and torch.equal(fast[2], direct[2]) \
        and dq_gap < 1e-2
    print(f"{'ok  ' if same_f else 'FAIL'} autograd default (one-kernel) backward: dk, dv "
          f"bitwise equal to the deterministic pair's, dq within {dq_gap:.1e} of its max",
          flush=True)
    failed += not same_f
    try:
        compiled = torch.compile(lambda q, k, v: attngen.attention(q, k, v, causal=True,
                                                                   deterministic=True),
                                 fullgraph=True)
        traced = step(compiled)
        same_c = all(torch.equal(a, b) for a, b in zip(traced, direct))
        why = ""
    except Exception as e:  # noqa: BLE001 -- reported
        same_c, why = False, harness.short_error(e)
    print(f"{'ok  ' if same_c else 'FAIL'} autograd torch.compile(fullgraph) == eager: "
          f"{same_c} {why}", flush=True)
    failed += not same_c
    # Only some inputs require grad.
    qq = q.detach().requires_grad_()
    out = attngen.attention(qq, k.detach(), v.detach(), causal=True, deterministic=True)
    out.backward(dout)
    partial = torch.equal(qq.grad, direct[0])
    print(f"{'ok  ' if partial else 'FAIL'} autograd with only q requiring grad: {partial}",
          flush=True)
    failed += not partial
    results.append(dict(eager=same, compiled=same_c, compile_error=why, partial=partial))
    return failed


def varlen_cases(quick):
    """Packed batches: ragged lengths, empty query and key sequences, masks,
    GQA, soft caps; each (lengths_q, lengths_k, fields)."""
    rng = random.Random(11)
    cases = []
    for d in (32, 64, 96, 128, 192, 256):
        for causal, br, window, cap in ((False, False, (-1, -1), 0.0),
                                        (True, True, (-1, -1), 0.0),
                                        (True, False, (-1, -1), 30.0),
                                        (False, True, (40, 0), 0.0),
                                        (False, True, (17, 9), 30.0)):
            batch = rng.randint(1, 6)
            lengths_q = [rng.choice([0, 1, 7, 64, 129, 300, 511]) for _ in range(batch)]
            lengths_k = [rng.choice([0, 1, 63, 128, 200, 700]) for _ in range(batch)]
            h, hkv = rng.choice([(4, 4), (8, 1), (8, 2)])
            cases.append(dict(d=d, lengths_q=lengths_q, lengths_k=lengths_k, h=h, hkv=hkv,
                              causal=causal, bottom_right=br, window=window, softcap=cap,
                              dtype=rng.choice(["bf16", "bf16", "f16"]), alibi=False))
    cases = cases[::2] if quick else cases
    # ALiBi per (sequence, head): a wrong batch stride or sequence index shows.
    for d, causal, br, window in ((64, False, True, (-1, -1)), (128, True, True, (-1, -1)),
                                  (96, False, False, (17, 9))):
        cases.append(dict(d=d, lengths_q=[129, 0, 300, 7], lengths_k=[200, 63, 511, 0],
                          h=8, hkv=2, causal=causal, bottom_right=br, window=window,
                          softcap=0.0, dtype="bf16", alibi=True))
    return cases


def run_varlen(cases, results):
    """dq, dk, dv of attention_varlen's autograd (poisoned first) against each
    sequence's float32 reference, with the same criterion as the dense cases."""
    failed = 0
    for c in cases:
        dtype = torch.bfloat16 if c["dtype"] == "bf16" else torch.float16
        torch.manual_seed(len(results) + 100)
        total_q, total_k = sum(c["lengths_q"]), sum(c["lengths_k"])
        q = torch.randn(total_q, c["h"], c["d"], device="cuda", dtype=dtype)
        k = torch.randn(total_k, c["hkv"], c["d"], device="cuda", dtype=dtype)
        v = torch.randn(total_k, c["hkv"], c["d"], device="cuda", dtype=dtype)
        dout = torch.randn_like(q)
        cu_q, cu_k = (torch.tensor(harness.cu_seqlens(c[n]), dtype=torch.int32, device="cuda")
                      for n in ("lengths_q", "lengths_k"))
        align = "bottom-right" if c["bottom_right"] else "top-left"
        batch = len(c["lengths_q"])
        slopes = (torch.stack([torch.tensor([2.0 ** (-(hh + 1)) * (1 + 0.5 * b)
                                             for hh in range(c["h"])]) for b in range(batch)])
                  .cuda() if c.get("alibi") else None)
        opts = dict(causal=c["causal"], window_size=c["window"], softcap=c["softcap"],
                    causal_align=align, alibi_slopes=slopes)
        qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
        max_q, max_k = max(c["lengths_q"]), max(c["lengths_k"])
        if FUNCTIONAL_VARLEN:
            # The functional backward with deterministic=False: with
            # ATTNGEN_FUSED_BACKWARD=1 on sm_80 kernels the one-kernel
            # backward (autograd runs the deterministic pair).
            out, lse = attngen.attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k,
                                                return_lse=True, **opts)
            addresses = harness.poison_next_allocations([(q.shape, dtype), (k.shape, dtype),
                                                         (v.shape, dtype)])
            grads = attngen.attention_varlen_backward(dout, q, k, v, out, lse, cu_q, cu_k,
                                                      max_q, max_k, deterministic=False,
                                                      **opts)
        else:
            out = attngen.attention_varlen(qq, kk, vv, cu_q, cu_k, max_q, max_k, **opts)
            addresses = harness.poison_next_allocations([(q.shape, dtype), (k.shape, dtype),
                                                         (v.shape, dtype)])
            out.backward(dout)
            grads = (qq.grad, kk.grad, vv.grad)
        poisoned = harness.reused_poisoned_blocks(grads, addresses)
        torch.cuda.synchronize()
        scale = 1.0 / math.sqrt(c["d"])
        want = [torch.zeros(t.shape, device="cuda") for t in (q, k, v)]
        theirs = [torch.zeros(t.shape, device="cuda") for t in (q, k, v)]
        oq = ok_ = 0
        for b, (nq, nk) in enumerate(zip(c["lengths_q"], c["lengths_k"])):
            if nq and nk:
                sl = [(slice(oq, oq + nq),) * 2, (slice(ok_, ok_ + nk),) * 2]
                args = (q[oq:oq + nq][None], k[ok_:ok_ + nk][None], v[ok_:ok_ + nk][None],
                        dout[oq:oq + nq][None], scale, c["causal"], c["bottom_right"],
                        c["window"], c["softcap"])
                for target, upcast in ((want, True), (theirs, False)):
                    _, dq, dk, dv = reference_grads(
                        *args, upcast=upcast, slopes=None if slopes is None else slopes[b])
                    target[0][sl[0][0]] = dq[0].float()
                    target[1][sl[1][0]] = dk[0].float()
                    target[2][sl[1][0]] = dv[0].float()
            oq, ok_ = oq + nq, ok_ + nk
        row = dict(c)
        ok = True
        for name, got, w, t in zip(("dq", "dk", "dv"), grads, want, theirs):
            err = (got.float() - w).abs().max().item() if got.numel() else 0.0
            bound = 2 * ((t - w).abs().max().item() if got.numel() else 0.0) + 1e-5
            row[f"{name}_err"] = err
            # 2x the bound's share: at most 2 passes (the 1e-5 floor counts,
            # as where PyTorch's own error is 0, e.g. a single key).
            row[f"{name}_ratio"] = err / bound * 2
            if not (err <= bound) or not torch.isfinite(got).all():
                ok = False
        row["poisoned"] = poisoned
        row["ok"] = ok
        results.append(row)
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} varlen d{c['d']} {c['dtype']} q{c['lengths_q']} "
              f"k{c['lengths_k']} h{c['h']}/{c['hkv']} causal={c['causal']} "
              f"br={c['bottom_right']} win={c['window']} cap={c['softcap']}"
              f"{' alibi' if c.get('alibi') else ''}: "
              + " ".join(f"{n}={row[n + '_err']:.2e}({row[n + '_ratio']:.2f}x)"
                         for n in ("dq", "dk", "dv")), flush=True)
    # Determinism on a packed batch with GQA, causal, empty sequences.
    torch.manual_seed(5)
    lengths_q, lengths_k = [300, 0, 777, 1, 512], [400, 17, 0, 64, 1000]
    q = torch.randn(sum(lengths_q), 8, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(sum(lengths_k), 2, 128, device="cuda", dtype=torch.bfloat16)
    v, dout = torch.randn_like(k), torch.randn_like(q)
    cu_q, cu_k = (torch.tensor(harness.cu_seqlens(n), dtype=torch.int32, device="cuda")
                  for n in (lengths_q, lengths_k))
    out, lse = attngen.attention_varlen(q, k, v, cu_q, cu_k, 777, 1000, causal=True,
                                        return_lse=True)
    grads = [attngen.attention_varlen_backward(dout, q, k, v, out, lse, cu_q, cu_k, 777, 1000,
                                               causal=True, deterministic=True)
             for _ in range(20)]
    same = all(torch.equal(a, b) for g in grads[1:] for a, b in zip(grads[0], g))
    print(f"{'ok  ' if same else 'FAIL'} varlen determinism d128 causal h8/2 "
          f"q{lengths_q} k{lengths_k}: 20 runs bitwise equal: {same}", flush=True)
    results.append(dict(determinism=same))
    failed += not same
    return failed


#: Variants the bench times besides the default: (name, attention_backward's
#: extra arguments). "det" is the deterministic pair of kernels.
VARIANTS = [("det", dict(deterministic=True))]


def run_varlen_bench(results):
    """The varlen backward beside the dense one on the same tokens: 16
    sequences of 1k (the dense kernel's shape), and 16 of mixed lengths."""
    d, h = 128, 16
    for lengths in ([1024] * 16, [256, 2048, 512, 1536, 128, 1900, 700, 1300] * 2):
        for causal in (False, True):
            torch.manual_seed(len(lengths))
            total = sum(lengths)
            q = torch.randn(total, h, d, device="cuda", dtype=torch.bfloat16)
            k, v, dout = torch.randn_like(q), torch.randn_like(q), torch.randn_like(q)
            cu = torch.tensor(harness.cu_seqlens(lengths), dtype=torch.int32, device="cuda")
            top = max(lengths)
            out, lse = attngen.attention_varlen(q, k, v, cu, cu, top, top, causal=causal,
                                                return_lse=True)
            flops = 2.5 * harness.varlen_attention_flops(lengths, lengths, h, d, causal)

            def varlen():
                return attngen.attention_varlen_backward(dout, q, k, v, out, lse, cu, cu, top,
                                                         top, causal=causal)
            ms, why = harness.try_time(varlen, 3, 10)
            row = dict(kind="varlen", lengths=lengths, causal=causal,
                       varlen_tflops=harness.tflops(flops, ms) if ms else None, error=why)
            if len(set(lengths)) == 1:
                b, n = len(lengths), lengths[0]
                qd, kd, vd, dod, od = (t.view(b, n, h, d) for t in (q, k, v, dout, out))
                od_out, od_lse = attngen.attention(qd, kd, vd, causal=causal, return_lse=True)
                dms, _ = harness.try_time(lambda: attngen.attention_backward(
                    dod, qd, kd, vd, od_out, od_lse, causal=causal), 3, 10)
                row["dense_tflops"] = harness.tflops(flops, dms) if dms else None
            results.append(row)
            shape = "1k" if len(set(lengths)) == 1 else "mixed"
            print(f"bench varlen d{d} {len(lengths)} seqs {shape} causal={causal}: varlen "
                  f"{harness.fmt(row['varlen_tflops'])} dense "
                  f"{harness.fmt(row.get('dense_tflops'))} TFLOPS", flush=True)


def run_memory(results):
    """Peak memory a backward allocates beyond its three gradients
    (torch.cuda.max_memory_allocated), attngen's beside SDPA's backends."""
    for d, n, causal, (h, hkv) in ((128, 8192, True, (16, 16)), (64, 4096, False, (32, 4))):
        b = 2
        torch.manual_seed(n)
        q = torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, n, hkv, d, device="cuda", dtype=torch.bfloat16)
        v, dout = torch.randn_like(k), torch.randn_like(q)
        out, lse = attngen.attention(q, k, v, causal=causal, return_lse=True)
        gradients = 2 * (q.numel() + k.numel() + v.numel())
        row = dict(d=d, n=n, b=b, h=h, hkv=hkv, causal=causal, gradient_bytes=gradients)

        def extra(call):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            result = call()
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - base
            del result
            return peak - gradients
        row["attngen_extra"] = extra(lambda: attngen.attention_backward(
            dout, q, k, v, out, lse, causal=causal))
        for backend in ("flash", "cudnn"):
            try:
                qt, kt, vt = (t.detach().requires_grad_() for t in (q, k, v))
                o = harness.sdpa_call(backend, qt, kt, vt, causal=causal)()
                row[f"{backend}_extra"] = extra(lambda: torch.autograd.grad(
                    o, (qt, kt, vt), dout.transpose(1, 2), retain_graph=True))
            except Exception as e:  # noqa: BLE001 -- reported
                row[f"{backend}_extra"] = None
                row[f"{backend}_error"] = harness.short_error(e)
        results.append(row)
        mib = 1 << 20
        peers = ", ".join(
            f"{be} {harness.fmt(row[be + '_extra'] / mib)} MiB" if row[be + "_extra"] is not None
            else f"{be} - ({row[be + '_error']})" for be in ("flash", "cudnn"))
        print(f"memory d{d} N{n} B{b} h{h}/{hkv} causal={causal}: beyond the gradients "
              f"({gradients / mib:.0f} MiB) attngen {row['attngen_extra'] / mib:.1f} MiB, "
              f"{peers}", flush=True)


def run_bench(results, quick, bench_dims=None):
    rows = []
    shapes = [(64, 1024), (64, 4096), (128, 1024), (128, 4096), (128, 8192), (256, 1024),
              (256, 8192)]
    if quick:
        shapes = [(64, 1024), (128, 1024), (128, 4096)]
    if bench_dims:
        shapes = [(d, n) for d, n in shapes if d in bench_dims]
    for d, n in shapes:
        for causal in (False, True):
            b, h = 16384 // n, 2048 // d
            torch.manual_seed(n + d)
            q = torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16)
            k, v, dout = torch.randn_like(q), torch.randn_like(q), torch.randn_like(q)
            out, lse = attngen.attention(q, k, v, causal=causal, return_lse=True)
            flops = 2.5 * harness.attention_flops(b, h, n, n, d, causal)
            row = dict(d=d, n=n, b=b, h=h, causal=causal)

            def ours():
                return attngen.attention_backward(dout, q, k, v, out, lse, causal=causal)
            ms, why = harness.try_time(ours, 3, 10)
            row["attngen_ms"] = ms
            row["attngen_tflops"] = harness.tflops(flops, ms) if ms else None
            row["attngen_error"] = why
            for name, extra in VARIANTS:
                vms, vwhy = harness.try_time(
                    lambda: attngen.attention_backward(dout, q, k, v, out, lse, causal=causal,
                                                       **extra), 3, 10)
                row[f"{name}_tflops"] = harness.tflops(flops, vms) if vms else None
                row[f"{name}_error"] = vwhy
            for backend in ("cudnn", "flash"):
                try:
                    qt, kt, vt = (t.detach().requires_grad_() for t in (q, k, v))
                    o = harness.sdpa_call(backend, qt, kt, vt, causal=causal)()
                    dot = dout.transpose(1, 2)

                    def theirs():
                        return torch.autograd.grad(o, (qt, kt, vt), dot, retain_graph=True)
                    pms, pwhy = harness.try_time(theirs, 3, 10)
                except Exception as e:  # noqa: BLE001
                    pms, pwhy = None, harness.short_error(e)
                row[f"{backend}_ms"] = pms
                row[f"{backend}_tflops"] = harness.tflops(flops, pms) if pms else None
                row[f"{backend}_error"] = pwhy
            rows.append(row)
            variants = "".join(
                f" {v[0]} {harness.fmt(row[v[0] + '_tflops'])}"
                + (f" ({row[v[0] + '_error']})" if row[v[0] + "_error"] else "")
                for v in VARIANTS)
            print(f"bench d{d} N{n} causal={causal}: attngen "
                  f"{harness.fmt(row['attngen_tflops'])}{variants} cudnn "
                  f"{harness.fmt(row['cudnn_tflops'])} flash "
                  f"{harness.fmt(row['flash_tflops'])} TFLOPS", flush=True)
    results.extend(rows)


def run_step(results):
    """One training step's attention as torch sees it: the forward with autograd
    (the custom op, which keeps the LSE) plus .backward(), against SDPA's cuDNN
    and flash backends doing the same; bf16, B*N = 16k, H*D = 2048, FLOPs 3.5x
    the forward's (forward 1x, backward 2.5x)."""
    rows = []
    for d, n in ((64, 1024), (128, 1024), (128, 4096), (128, 8192)):
        for causal in (False, True):
            b, h = 16384 // n, 2048 // d
            torch.manual_seed(n + d)
            q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16,
                                   requires_grad=True) for _ in range(3))
            dout = torch.randn_like(q)
            flops = 3.5 * harness.attention_flops(b, h, n, n, d, causal)
            row = dict(d=d, n=n, causal=causal)

            def ours():
                attngen.attention(q, k, v, causal=causal).backward(dout)
            ms, why = harness.try_time(ours, 3, 10)
            row["attngen_tflops"] = harness.tflops(flops, ms) if ms else None
            row["attngen_error"] = why
            dot = dout.transpose(1, 2)
            for backend in ("cudnn", "flash"):
                try:
                    call = harness.sdpa_call(backend, q, k, v, causal=causal)

                    def theirs():
                        call().backward(dot)
                    pms, pwhy = harness.try_time(theirs, 3, 10)
                except Exception as e:  # noqa: BLE001
                    pms, pwhy = None, harness.short_error(e)
                row[f"{backend}_tflops"] = harness.tflops(flops, pms) if pms else None
                row[f"{backend}_error"] = pwhy
            rows.append(row)
            print(f"step d{d} N{n} causal={causal}: attngen {harness.fmt(row['attngen_tflops'])} "
                  f"cudnn {harness.fmt(row['cudnn_tflops'])} flash "
                  f"{harness.fmt(row['flash_tflops'])} TFLOPS (fwd+bwd)", flush=True)
    results.extend(rows)
    print()
    harness.print_table(
        ["d", "N", "causal", "attngen fwd+bwd TF", "cuDNN TF", "flash TF", "vs cuDNN",
         "vs flash"],
        [[r["d"], r["n"], r["causal"], harness.fmt(r["attngen_tflops"]),
          harness.fmt(r["cudnn_tflops"]), harness.fmt(r["flash_tflops"]),
          harness.fmt(r["attngen_tflops"] / r["cudnn_tflops"], ".2f")
          if r["attngen_tflops"] and r["cudnn_tflops"] else "-",
          harness.fmt(r["attngen_tflops"] / r["flash_tflops"], ".2f")
          if r["attngen_tflops"] and r["flash_tflops"] else "-"] for r in rows])


def main():
    global attngen
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-bench", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--only", choices=["correct", "varlen", "determinism", "autograd",
                                           "bench", "varlen-bench", "memory", "step"])
    parser.add_argument("--cases", type=int, default=0,
                        help="only the first N correctness cases (for compute-sanitizer)")
    parser.add_argument("--head-dims", default="",
                        help="only the correctness (and varlen) cases of these head dims "
                        "(comma-separated)")
    parser.add_argument("--bench-dims", default="",
                        help="only the speed rows of these head dims (comma-separated)")
    args = parser.parse_args()
    import attngen as module
    attngen = module
    report = {"env": harness.environment()}
    failed = 0
    if args.only in (None, "correct"):
        rows = []
        cases = correctness_cases(args.quick)
        if args.head_dims:
            dims = {int(d) for d in args.head_dims.split(",")}
            cases = [c for c in cases if c["d"] in dims]
        run_correctness(cases[:args.cases] if args.cases else cases, rows)
        failed += sum(not r["ok"] for r in rows)
        report["correctness"] = rows
    if args.only in (None, "varlen"):
        rows = []
        cases = varlen_cases(args.quick)
        if args.head_dims:
            dims = {int(d) for d in args.head_dims.split(",")}
            cases = [c for c in cases if c["d"] in dims]
        failed += run_varlen(cases[:args.cases] if args.cases else cases, rows)
        report["varlen"] = rows
    if args.only in (None, "determinism"):
        rows = []
        failed += run_determinism(rows, 20)
        report["determinism"] = rows
    if args.only in (None, "autograd"):
        rows = []
        failed += run_autograd(rows)
        report["autograd"] = rows
    if args.only in (None, "memory"):
        rows = []
        run_memory(rows)
        report["memory"] = rows
    if args.only in (None, "varlen-bench") and not args.no_bench:
        harness.warm_up_gpu()
        rows = []
        run_varlen_bench(rows)
        report["varlen_bench"] = rows
    if args.only in (None, "step") and not args.no_bench:
        harness.warm_up_gpu()
        rows = []
        run_step(rows)
        report["step"] = rows
    if args.only in (None, "bench") and not args.no_bench:
        harness.warm_up_gpu()
        rows = []
        run_bench(rows, args.quick,
                  {int(d) for d in args.bench_dims.split(",")} if args.bench_dims else None)
        report["bench"] = rows
        print()
        harness.print_table(
            ["d", "N", "causal", "attngen TF", "det TF", "cuDNN TF", "flash TF", "vs cuDNN",
             "vs flash"],
            [[r["d"], r["n"], r["causal"], harness.fmt(r["attngen_tflops"]),
              harness.fmt(r["det_tflops"]),
              harness.fmt(r["cudnn_tflops"]), harness.fmt(r["flash_tflops"]),
              harness.fmt(r["attngen_tflops"] / r["cudnn_tflops"], ".2f")
              if r["attngen_tflops"] and r["cudnn_tflops"] else "-",
              harness.fmt(r["attngen_tflops"] / r["flash_tflops"], ".2f")
              if r["attngen_tflops"] and r["flash_tflops"] else "-"] for r in rows])
    if "correctness" in report:
        c = report["correctness"]
        print(f"\ncorrectness: {sum(r['ok'] for r in c)}/{len(c)} passed; worst ratio "
              f"{max(max(r['dq_ratio'], r['dk_ratio'], r['dv_ratio']) for r in c):.2f}x "
              "of PyTorch's own error (bound 2x)")
    report["failed"] = failed
    if args.json:
        harness.write_json(args.json, report)
    print(f"backward_check: {'FAILED ' + str(failed) if failed else 'all passed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
