#!/usr/bin/env python3
"""attngen.attention_varlen on a GPU: correctness over ragged packed batches and
speed against the dense kernel and torch's flash varlen, in one run.

    ATTNGEN_LIBRARY=.../libattngen.so PYTHONPATH=python \
        python3 gpu/varlen_check.py [--json OUT.json] [--quick] [--no-bench]
    compute-sanitizer --tool memcheck python3 gpu/varlen_check.py --sanitize
    python3 gpu/varlen_check.py --self-test        # the pure-Python parts, no torch

* Correctness: packed batches with empty sequences (no queries, no keys),
  Nq != Nk per sequence both ways, lengths that are no tile multiple, GQA/MQA,
  head dims 64/96/128/256 (and 40: 16-column swizzle panels), bf16 and f16,
  no mask, causal top-left and causal bottom-right (flash_attn's varlen
  diagonal), sliding windows per sequence (causal windows, two-sided ones,
  right-only ones, both alignments), max_seqlen_q/k larger than any sequence, q/k/v as views of one packed QKV tensor and row-padded views.
  Each case runs twice: through attngen.attention_varlen (its outputs get
  memory just filled with NaN: the caching allocator hands the freed block
  back, which the script checks), and through the same launch into outputs of
  the script's own, NaN-poisoned with SENTINEL guards on both sides (so a
  write past a sequence or past the tensor is seen). The reference is float32
  per sequence (gpu/check_and_bench.py's), tolerances as there; rows without
  keys must be exactly 0 with LSE -inf.
* sm_80 varlen kernels on the same GPU (it runs sm_80 PTX; attention_varlen
  would pick the GPU's own arch): the SM80_COMBOS kernels (plain, causal both
  alignments, windows; d64/d96/d128/d256) from attngen.compile(arch="sm_80",
  varlen=True), launched through the runtime (check_and_bench's ctypes
  mirror over attngen's library) into guarded, poisoned outputs, same cases.
* Argument checks on the GPU: wrong cu_seqlens values raise InvalidInputError
  naming the entry; with check_seqlens=False garbage cu_seqlens must not fault
  nor write outside the outputs.
* Speed (bf16 d128, H = 16, 16k tokens): attngen.attention dense B=16 N=1024
  against attngen.attention_varlen on the same 16 x 1024 tokens packed (the
  bar: within 5%), on 16 sequences of mixed lengths averaging 1k, and torch's
  flash varlen (torch.ops.aten._flash_attention_forward with cum_seq, and
  torch.nn.attention.varlen.varlen_attn where they exist) and SDPA flash /
  cuDNN dense on the same tokens. check_seqlens=False while timing (the check
  synchronizes); its cost is timed on its own.
Exit status 0 when every check passed.
"""

import argparse
import inspect
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# ---------------------------------------------------------------------------
# Pure Python: batches, cu_seqlens, FLOPs (checked by --self-test, no torch)
# ---------------------------------------------------------------------------

#: (name, query lengths, key lengths): empty query and key sequences, Nq < Nk
#: and Nq > Nk per sequence, lengths just past tile multiples (48, 64, 80, 128).
BATCHES = [
    ("ragged", [333, 0, 17, 1000, 1, 129, 64], [77, 50, 0, 1000, 513, 128, 300]),
    ("nq>nk", [500, 77, 1, 200], [1, 64, 300, 0]),
    ("one long", [4097], [4096]),
    ("single rows", [1, 1, 1], [1, 2, 3]),
    ("tile edges", [65, 129, 49, 81, 193], [49, 97, 65, 161, 129]),
]

#: (H, Hkv) head configurations: MHA, GQA 2:1, MQA.
HEADS = [(2, 2), (4, 2), (4, 1)]

#: mask name -> (causal, causal_align, window_size) as attention_varlen takes
#: them. The windows are per sequence: each sequence's own diagonal (i, or
#: i + Nk - Nq bottom-right), cut by its own lengths.
MASKS = {
    "none": (False, "top-left", (-1, -1)),
    "top-left": (True, "top-left", (-1, -1)),
    "bottom-right": (True, "bottom-right", (-1, -1)),
    "window (96, 0) bottom-right": (False, "bottom-right", (96, 0)),
    "causal window (200, -1) top-left": (True, "top-left", (200, -1)),
    "window (100, 30) bottom-right": (False, "bottom-right", (100, 30)),
    "window (-1, 40) top-left": (False, "top-left", (-1, 40)),
}
#: (head_dim, dtype, mask) of the sm_80 varlen kernels also run here: the GPU
#: runs sm_80 PTX too, but attention_varlen compiles for its own arch, so these
#: go through attngen.compile(arch="sm_80") and the runtime directly.
SM80_COMBOS = [(64, "bf16", "none"), (128, "f16", "bottom-right"), (128, "bf16", "top-left"),
               (256, "bf16", "bottom-right"), (96, "bf16", "window (100, 30) bottom-right"),
               (128, "bf16", "window (96, 0) bottom-right"),
               (128, "bf16", "window (-1, 40) top-left"),
               (64, "bf16", "causal window (200, -1) top-left"),
               (96, "bf16", "causal window (200, -1) top-left")]
#: Masks every head dim and dtype runs; the windows run in bf16 over WINDOW_DIMS.
BASE_MASKS = ("none", "top-left", "bottom-right")
WINDOW_DIMS = (40, 64, 96, 128, 256)

#: Largest rel error between the varlen kernel on 16 x 1024 packed tokens and
#: the dense kernel on B=16 N=1024: the same tiles and arithmetic, so the
#: results should agree to the last bits (bitwise equality is reported).
VARLEN_VS_DENSE_TOL = 1e-3

#: Mixed lengths for the speed row: 16 sequences, 16384 tokens (average 1k).
#: Most are no multiple of the 128-row tiles, as real sequences.
MIXED_LENGTHS = [2000, 517, 1536, 1001, 250, 1790, 770, 1283,
                 1024, 640, 1400, 900, 383, 1660, 1155, 75]


def cu_seqlens(lengths):
    """[0, l0, l0 + l1, ...]: where each sequence starts, then the total."""
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return out


def random_batch(rng, count, longest, empty_every=4):
    """`count` query and key lengths in 0..longest, every `empty_every`-th
    query or key sequence empty."""
    lq, lk = [], []
    for i in range(count):
        lq.append(0 if i % empty_every == 1 else rng.randint(1, longest))
        lk.append(0 if i % empty_every == 2 else rng.randint(1, longest))
    return lq, lk


def mask_combos(quick=False):
    """(head_dim, dtype name, mask name) of every correctness kernel (--quick:
    fewer head dims, so fewer kernels to compile)."""
    dims = (64, 128) if quick else (64, 96, 128, 256)
    window_dims = (96, 128) if quick else WINDOW_DIMS
    combos = [(d, dname, mask) for d in dims for dname in ("bf16", "f16")
              for mask in BASE_MASKS]
    combos += [(d, "bf16", mask) for d in window_dims for mask in MASKS
               if mask not in BASE_MASKS]
    combos.append((40, "f16", "bottom-right"))
    return combos


def attention_flops(lengths_q, lengths_k, h, d, causal):
    """The FlashAttention FLOP convention summed over the sequences: 4 * H * Nq *
    Nk * D each, halved when causal (as gpu/check_and_bench.py's dense rows)."""
    total = sum(4 * h * nq * nk * d for nq, nk in zip(lengths_q, lengths_k))
    return total / 2 if causal else total


def self_test():
    """Checks the pure-Python helpers without torch or a GPU."""
    import random
    assert cu_seqlens([3, 0, 5]) == [0, 3, 3, 8]
    assert sum(MIXED_LENGTHS) == 16384 and len(MIXED_LENGTHS) == 16
    for name, lq, lk in BATCHES:
        assert len(lq) == len(lk), name
        assert all(n >= 0 for n in lq + lk), name
    assert any(0 in lq for _, lq, _ in BATCHES) and any(0 in lk for _, _, lk in BATCHES)
    assert any(a > b for _, lq, lk in BATCHES for a, b in zip(lq, lk))
    assert any(a < b for _, lq, lk in BATCHES for a, b in zip(lq, lk))
    rng = random.Random(5)
    lq, lk = random_batch(rng, 9, 700)
    assert len(lq) == 9 and lq[1] == 0 and lk[2] == 0 and max(lq + lk) <= 700
    # 16 x 1024 packed counts what the dense B=16 N=1024 row counts.
    dense = 4.0 * 16 * 16 * 1024 * 1024 * 128
    assert attention_flops([1024] * 16, [1024] * 16, 16, 128, False) == dense
    assert attention_flops([1024] * 16, [1024] * 16, 16, 128, True) == dense / 2
    assert attention_flops([3, 0], [5, 7], 2, 8, False) == 4 * 2 * 3 * 5 * 8
    combos = mask_combos()
    assert len(set(combos)) == len(combos)
    assert {m for _, _, m in combos} == set(MASKS)
    for causal, align, (left, right) in MASKS.values():
        assert align in ("top-left", "bottom-right") and left >= -1 and right >= -1
        assert not (causal and right > 0), "a causal window's right side is 0 or -1"
    cases = correctness_cases(False)
    assert len(cases) == len(combos) * (len(BATCHES) + 1)
    assert len(correctness_cases(True)) == len(mask_combos(True)) * 2
    assert {m for _, _, m in mask_combos(True)} == set(MASKS)
    for name, lq, lk, heads, d, dname, mask, layout, extra in cases:
        assert d % 8 == 0 and 8 <= d <= 256 and mask in MASKS, name
        assert layout != "qkv" or (heads[0] == heads[1] and lq == lk), name
    assert any(c[7] == "qkv" for c in cases) and any(c[7] == "padded" for c in cases)
    assert any(c[8] > 0 for c in cases)
    assert sanitize_cases(cases) and all(c[4] in (64, 128, 256) and c[5] == "bf16"
                                         for c in sanitize_cases(cases))
    assert {c[4] for c in sanitize_cases(cases)} == {64, 128, 256}
    assert any(c[6] not in BASE_MASKS for c in sanitize_cases(cases))
    assert set(SM80_COMBOS) <= set(combos)
    for quick in (False, True):
        sm80 = sm80_cases(correctness_cases(quick))
        assert sm80 and {c[6] for c in sm80} & set(BASE_MASKS)
        assert {c[6] for c in sm80} - set(BASE_MASKS), "sm_80 windows"
    print("varlen_check self-test passed")
    return 0


# ---------------------------------------------------------------------------
# On the GPU
# ---------------------------------------------------------------------------

def packed_inputs(torch, lq, lk, h, hkv, d, dtype, layout):
    """q (total_q, h, d), k, v (total_k, hkv, d) in a layout: contiguous, row-padded
    views, or (when h == hkv and the lengths agree) views of one QKV tensor."""
    tq, tk = sum(lq), sum(lk)
    if layout == "qkv" and h == hkv and lq == lk:
        qkv = torch.randn(tq, 3, h, d, dtype=dtype, device="cuda")
        return qkv[:, 0], qkv[:, 1], qkv[:, 2]
    if layout == "padded":
        return (torch.randn(tq, h, d + 8, dtype=dtype, device="cuda")[..., :d],
                torch.randn(tk, hkv, d + 8, dtype=dtype, device="cuda")[..., :d],
                torch.randn(tk, hkv, d + 8, dtype=dtype, device="cuda")[..., :d])
    return (torch.randn(tq, h, d, dtype=dtype, device="cuda"),
            torch.randn(tk, hkv, d, dtype=dtype, device="cuda"),
            torch.randn(tk, hkv, d, dtype=dtype, device="cuda"))


def guarded(torch, shape, dtype, cb):
    """A NaN-filled contiguous tensor of `shape` with SENTINEL guards before and
    after it; returns (tensor, [guards])."""
    numel = math.prod(shape)
    flat = torch.full((cb.GUARD + numel + cb.GUARD,), cb.SENTINEL, dtype=dtype, device="cuda")
    body = flat[cb.GUARD:cb.GUARD + numel]
    body.fill_(float("nan"))
    return body.view(*shape), [flat[:cb.GUARD], flat[cb.GUARD + numel:]]


def varlen_reference(torch, cb, q, k, v, lq, lk, scale, causal, bottom_right,
                     window=(-1, -1)):
    """float32 out (total_q, h, d) and lse (h, total_q), one dense reference per
    sequence (its own mask and window); queries of a sequence without keys, and
    rows the window leaves without a key: out 0, lse -inf."""
    out = torch.zeros(q.shape, dtype=torch.float32, device="cuda")
    lse = torch.full((q.shape[1], q.shape[0]), float("-inf"), device="cuda")
    cq, ck = cu_seqlens(lq), cu_seqlens(lk)
    for b in range(len(lq)):
        if lq[b] == 0 or lk[b] == 0:
            continue
        o, l = cb.reference(torch, q[None, cq[b]:cq[b + 1]], k[None, ck[b]:ck[b + 1]],
                            v[None, ck[b]:ck[b + 1]], scale, causal, bottom_right,
                            window=window)
        out[cq[b]:cq[b + 1]] = o[0]
        lse[:, cq[b]:cq[b + 1]] = l[0]
    return out, lse


def judge(torch, cb, out, lse, ref, ref_lse, dname, guards=()):
    """The verdict on one result: rel error, NaNs, rows without keys, LSE, guards."""
    rel = cb.rel_error(torch, out, ref) if out.numel() else 0.0
    nan = int(torch.isnan(out).sum().item())
    empty = torch.isinf(ref_lse)                       # (h, total_q)
    empty_zero = bool((out.permute(1, 0, 2)[empty] == 0).all().item())
    ok = math.isfinite(rel) and rel < cb.REL_TOL[dname] and nan == 0 and empty_zero
    lse_err = None
    if lse is not None and lse.numel():
        err, bound = cb.lse_error(torch, lse, ref_lse)
        lse_err = float(err.max().item())
        ok = ok and bool((err <= bound).all())
    guards_ok = all(bool((g == cb.SENTINEL).all().item()) for g in guards)
    return dict(rel=rel, nan=nan, lse_err=lse_err, empty_rows=int(empty.sum().item()),
                empty_rows_zero=empty_zero, guards_ok=guards_ok, passed=ok and guards_ok)


def run_case(torch, cb, attngen, varlen, case):
    name, lq, lk, (h, hkv), d, dtype, dname, mask, layout, extra = case
    q, k, v = packed_inputs(torch, lq, lk, h, hkv, d, dtype, layout)
    cu_q = torch.tensor(cu_seqlens(lq), dtype=torch.int32, device="cuda")
    cu_k = torch.tensor(cu_seqlens(lk), dtype=torch.int32, device="cuda")
    max_q, max_k = max(lq) + extra, max(lk) + extra
    causal, align, window = MASKS[mask]
    scale = 1 / math.sqrt(d)
    ref, ref_lse = varlen_reference(torch, cb, q, k, v, lq, lk, scale, causal,
                                    align == "bottom-right", window)
    row = dict(batch=name, lengths_q=lq, lengths_k=lk, h=h, hkv=hkv, d=d, dtype=dname,
               mask=mask, layout=layout, max_seqlen_extra=extra)
    # 1. The public API; its output blocks were just filled with NaN.
    bait = torch.full(q.shape, float("nan"), dtype=dtype, device="cuda")
    bait_lse = torch.full((h, q.shape[0]), float("nan"), dtype=torch.float32, device="cuda")
    ptrs = (bait.data_ptr(), bait_lse.data_ptr())
    del bait, bait_lse
    out, lse = attngen.attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal=causal,
                                        causal_align=align, window_size=window,
                                        return_lse=True)
    torch.cuda.synchronize()
    api = judge(torch, cb, out, lse, ref, ref_lse, dname)
    api["poison_reused"] = out.data_ptr() == ptrs[0] and (lse.numel() == 0 or
                                                          lse.data_ptr() == ptrs[1])
    # 2. The same launch into guarded, poisoned outputs of our own.
    out2, guards = guarded(torch, tuple(q.shape), dtype, cb)
    lse2, lse_guards = guarded(torch, (h, q.shape[0]), torch.float32, cb)
    diagonal = causal or window != (-1, -1)
    varlen._launch(q, k, v, cu_q, cu_k, max_q, max_k, out2, lse2, causal, 0.0,
                   align if diagonal else "top-left", 0.0, window[0], window[1])
    torch.cuda.synchronize()
    own = judge(torch, cb, out2, lse2, ref, ref_lse, dname, guards + lse_guards)
    same = bool(torch.equal(out.nan_to_num(7.0), out2.nan_to_num(7.0)))
    row.update(api=api, guarded=own, same_result=same,
               passed=api["passed"] and own["passed"] and same)
    return row


def correctness_cases(quick):
    import random
    rng = random.Random(11)
    batches = list(BATCHES)
    batches.append(("random",) + random_batch(rng, 9, 700))
    if quick:
        batches = batches[:2]
    cases = []
    i = 0
    for d, dname, mask in mask_combos(quick):
        for name, lq, lk in batches:
            heads = HEADS[i % len(HEADS)]
            layout = ("contiguous", "padded", "qkv")[(i // len(HEADS)) % 3]
            if layout == "qkv":
                if heads[0] != heads[1]:
                    layout = "contiguous"
                else:
                    lk = lq  # self-attention: views of one QKV tensor
            extra = 1000 if i % 4 == 3 else 0  # max_seqlen past every sequence
            cases.append((name, lq, lk, heads, d, dname, mask, layout, extra))
            i += 1
    return cases


def sanitize_cases(cases):
    """The few small cases compute-sanitizer runs: bf16 d128, a plain and a
    causal one and two windows; and a causal case at d64 and at d256, whose
    persistent schedules (pair units, the TMA epilogue) differ in tiles."""
    d128 = [c for c in cases if c[4] == 128 and c[5] == "bf16"]
    plain = [c for c in d128 if c[6] in BASE_MASKS][:3]
    windows = [c for c in d128 if c[6] not in BASE_MASKS][:2]
    others = [next(c for c in cases if c[4] == d and c[5] == "bf16" and c[6] == "bottom-right")
              for d in (64, 256) if any(c[4] == d for c in cases)]
    return plain + windows + others


def sm80_cases(cases):
    """The cases of the SM80_COMBOS kernels."""
    return [c for c in cases if (c[4], c[5], c[6]) in SM80_COMBOS]


def run_sm80_case(torch, cb, attngen, rt, modules, tmpdir, case):
    """One case through an sm_80 varlen kernel, compiled by attngen.compile and
    launched by the runtime (libattngen's attnrt_*) into guarded, NaN-poisoned
    outputs."""
    name, lq, lk, (h, hkv), d, dtype, dname, mask, layout, extra = case
    causal, align, window = MASKS[mask]
    diagonal = causal or window != (-1, -1)
    kernel = attngen.compile(arch="sm_80", head_dim=d, dtype=dname, causal=causal,
                             causal_align=align if diagonal else "top-left",
                             window_size=window, varlen=True)
    module = modules.get(kernel.kernel_name)
    if module is None:
        base = os.path.join(tmpdir, kernel.kernel_name)
        with open(base + ".ptx", "w") as f:
            f.write(kernel.ptx)
        with open(base + ".json", "w") as f:
            json.dump(kernel.metadata, f)
        module = modules[kernel.kernel_name] = rt.load(base + ".ptx", base + ".json")
    q, k, v = packed_inputs(torch, lq, lk, h, hkv, d, dtype, layout)
    cu_q = torch.tensor(cu_seqlens(lq), dtype=torch.int32, device="cuda")
    cu_k = torch.tensor(cu_seqlens(lk), dtype=torch.int32, device="cuda")
    ref, ref_lse = varlen_reference(torch, cb, q, k, v, lq, lk, 1 / math.sqrt(d), causal,
                                    align == "bottom-right", window)
    out, guards = guarded(torch, tuple(q.shape), dtype, cb)
    lse, lse_guards = guarded(torch, (h, q.shape[0]), torch.float32, cb)
    a = rt.ForwardArgs()
    a.q, a.k, a.v, a.o, a.lse = (q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
                                 lse.data_ptr())
    a.batch, a.nq, a.nk = len(lq), q.shape[0], k.shape[0]
    a.num_heads, a.num_kv_heads, a.head_dim = h, hkv, d
    for field, t in (("q_strides", q), ("k_strides", k), ("v_strides", v), ("o_strides", out)):
        getattr(a, field)[:] = (0,) + tuple(t.stride())  # packed: no batch stride
    a.dtype = cb.ATTNRT_DTYPE_BF16 if dtype == torch.bfloat16 else cb.ATTNRT_DTYPE_F16
    a.cu_seqlens_q, a.cu_seqlens_k = cu_q.data_ptr(), cu_k.data_ptr()
    a.max_seqlen_q, a.max_seqlen_k = max(lq) + extra, max(lk) + extra
    module.launch(a, torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    row = dict(arch="sm_80", kernel=kernel.kernel_name, batch=name, lengths_q=lq, lengths_k=lk,
               h=h, hkv=hkv, d=d, dtype=dname, mask=mask, layout=layout,
               max_seqlen_extra=extra)
    row["guarded"] = judge(torch, cb, out, lse, ref, ref_lse, dname, guards + lse_guards)
    row["passed"] = row["guarded"]["passed"]
    return row


def sm80_correctness(torch, cb, attngen, quick):
    import tempfile
    dtypes = {"bf16": torch.bfloat16, "f16": torch.float16}
    rt = cb.Runtime(attngen._library_path)
    modules, results = {}, []
    cases = sm80_cases(correctness_cases(quick))
    with tempfile.TemporaryDirectory() as tmpdir:
        for n, c in enumerate(cases):
            case = c[:5] + (dtypes[c[5]], c[5]) + c[6:]
            torch.manual_seed(500 + n)
            try:
                row = run_sm80_case(torch, cb, attngen, rt, modules, tmpdir, case)
            except Exception as e:  # noqa: BLE001 - reported, and fatal ones stop the run
                row = dict(arch="sm_80", case=repr(c), error=str(e)[:400], passed=False)
                results.append(row)
                print(f"  FAIL {row}", flush=True)
                if cb.is_fatal(e):
                    print("  the CUDA context is unusable: stopping", flush=True)
                    break
                continue
            results.append(row)
            if not row["passed"]:
                print(f"  FAIL: {row}", flush=True)
        for module in modules.values():
            module.unload()
    passed = sum(r["passed"] for r in results)
    print(f"  sm_80 correctness: {passed}/{len(cases)} passed ({len(modules)} kernels)",
          flush=True)
    return results, passed == len(cases)


def correctness(torch, cb, attngen, quick, sanitize):
    from attngen import _torch_varlen as varlen
    dtypes = {"bf16": torch.bfloat16, "f16": torch.float16}
    cases = correctness_cases(quick)
    if sanitize:
        cases = sanitize_cases(cases)
    results = []
    for n, c in enumerate(cases):
        case = c[:5] + (dtypes[c[5]], c[5]) + c[6:]
        torch.manual_seed(100 + n)
        try:
            row = run_case(torch, cb, attngen, varlen, case)
        except Exception as e:  # noqa: BLE001 - reported, and fatal ones stop the run
            row = dict(case=repr(c), error=str(e)[:400], passed=False)
            results.append(row)
            print(f"  FAIL {row}", flush=True)
            if cb.is_fatal(e):
                print("  the CUDA context is unusable: stopping", flush=True)
                break
            continue
        results.append(row)
        if not row["passed"] or not row["api"]["poison_reused"]:
            print(f"  {'FAIL' if not row['passed'] else 'note'}: {row}", flush=True)
    passed = sum(r["passed"] for r in results)
    reused = sum(r.get("api", {}).get("poison_reused", False) for r in results)
    print(f"  correctness: {passed}/{len(cases)} passed; API output block poisoned in "
          f"{reused}/{len(results)}", flush=True)
    return results, passed == len(cases)


def api_checks(torch, attngen):
    """Wrong cu_seqlens: clear errors with the check on; no fault without it."""
    rows = []
    q = torch.randn(30, 4, 128, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(70, 2, 128, dtype=torch.bfloat16, device="cuda")
    good_q = torch.tensor([0, 10, 30], dtype=torch.int32, device="cuda")
    good_k = torch.tensor([0, 30, 70], dtype=torch.int32, device="cuda")

    def expect(name, fragment, **changes):
        args = dict(cu_seqlens_q=good_q, cu_seqlens_k=good_k, max_seqlen_q=20, max_seqlen_k=40)
        args.update(changes)
        try:
            attngen.attention_varlen(q, k, k, **args)
            ok, message = False, "no error"
        except attngen.InvalidInputError as e:
            message = str(e)
            ok = fragment in message
        rows.append(dict(check=name, passed=ok, message=message[:300]))
        print(f"  {'ok  ' if ok else 'FAIL'} {name}: {message[:160]}", flush=True)

    expect("not monotone", "cu_seqlens_q is not monotone",
           cu_seqlens_q=torch.tensor([0, 20, 10], dtype=torch.int32, device="cuda"))
    expect("last entry != total_k", "cu_seqlens_k[2] = 60 ends the last sequence",
           cu_seqlens_k=torch.tensor([0, 30, 60], dtype=torch.int32, device="cuda"))
    expect("int64 cu_seqlens", "must be torch.int32", cu_seqlens_q=good_q.long())
    expect("cu_seqlens on the host", "cu_seqlens_q is on cpu", cu_seqlens_q=good_q.cpu())
    expect("max_seqlen_q too small", "more than max_seqlen_q = 15", max_seqlen_q=15)
    # Garbage with the check off: the kernel clamps every sequence into the
    # tensors; the guards around the output must hold and nothing may fault.
    from attngen import _torch_varlen as varlen
    import check_and_bench as cb
    out, guards = guarded(torch, tuple(q.shape), torch.bfloat16, cb)
    garbage_q = torch.tensor([7, -5, 2**30], dtype=torch.int32, device="cuda")
    garbage_k = torch.tensor([2**31 - 1, 3, -1], dtype=torch.int32, device="cuda")
    try:
        varlen._launch(q, k, k, garbage_q, garbage_k, 20, 40, out, None, True, 0.0,
                       "bottom-right", 0.0)
        torch.cuda.synchronize()
        ok = all(bool((g == cb.SENTINEL).all().item()) for g in guards)
        message = "guards intact" if ok else "a write past the output"
    except Exception as e:  # noqa: BLE001
        ok, message = False, str(e)[:300]
    rows.append(dict(check="garbage cu_seqlens, check off", passed=ok, message=message))
    print(f"  {'ok  ' if ok else 'FAIL'} garbage cu_seqlens, check off: {message}", flush=True)
    return rows, all(r["passed"] for r in rows)


def torch_varlen_peers(torch):
    """torch's own varlen entry points that exist in this build: name -> fn(q, k,
    v, cu_q, cu_k, max_q, max_k, causal) returning out (total_q, h, d)."""
    peers = {}
    op = getattr(torch.ops.aten, "_flash_attention_forward", None)
    if op is not None:
        def flash(q, k, v, cu_q, cu_k, max_q, max_k, causal):
            return op(q, k, v, cu_q, cu_k, max_q, max_k, 0.0, causal, False)[0]
        peers["torch flash varlen (aten._flash_attention_forward)"] = flash
    try:
        from torch.nn.attention import varlen as varlen_module
        varlen_attn = getattr(varlen_module, "varlen_attn", None)
    except ImportError:
        varlen_attn = None
    if varlen_attn is not None:
        params = inspect.signature(varlen_attn).parameters

        def nn_varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal):
            kwargs = {}
            if "is_causal" in params:
                kwargs["is_causal"] = causal
            elif causal:
                raise RuntimeError("varlen_attn takes no is_causal here")
            result = varlen_attn(q, k, v, cu_q, cu_k, max_q, max_k, **kwargs)
            return result[0] if isinstance(result, tuple) else result
        peers["torch.nn.attention.varlen.varlen_attn"] = nn_varlen
    return peers


def speed(torch, cb, attngen, head_dims=(128,), warmup=10, iters=50):
    """Head dims other than 128 (H = 2048 / D) time attngen dense and varlen
    only; the peers and the check_seqlens cost run at d128."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = []
    b, n = 16, 1024
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    end = time.perf_counter() + 2.0
    while time.perf_counter() < end:  # clocks up before the first timing
        a @ a
        torch.cuda.synchronize()
    del a
    peers = torch_varlen_peers(torch)
    for d, causal in ((d, c) for d in head_dims for c in (False, True)):
        h = 2048 // d
        tag = "" if d == 128 else f"d{d} "
        torch.manual_seed(7)
        q4, k4, v4 = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16)
                      for _ in range(3))
        flops = 4.0 * b * h * n * n * d / (2 if causal else 1)

        def record(label, fn, flop_count, lengths):
            try:
                fn()
                ms = cb.time_ms(torch, fn, warmup, iters)
                row = dict(case=label, causal=causal, lengths=lengths, ms=ms,
                           tflops=flop_count / (ms * 1e-3) / 1e12)
            except Exception as e:  # noqa: BLE001 - a missing peer is reported
                row = dict(case=label, causal=causal, lengths=lengths,
                           error=str(e).splitlines()[0][:200])
            row["case"] = tag + label
            rows.append(row)
            print(f"  {'causal ' if causal else ''}{tag}{label}: "
                  + (f"{row['ms']:.3f} ms, {row['tflops']:.1f} TFLOPS" if "ms" in row
                     else f"error: {row['error']}"), flush=True)
            return row

        dense = record("attngen dense B=16 N=1024",
                       lambda: attngen.attention(q4, k4, v4, causal=causal), flops, "16x1024")
        # The same tokens packed: 16 sequences of 1024.
        q, k, v = (t.reshape(b * n, h, d) for t in (q4, k4, v4))
        cu = torch.tensor(cu_seqlens([n] * b), dtype=torch.int32, device="cuda")
        uniform = record(
            "attngen varlen 16x1024 packed",
            lambda: attngen.attention_varlen(q, k, v, cu, cu, n, n, causal=causal,
                                             check_seqlens=False),
            flops, "16x1024")
        if "ms" in dense and "ms" in uniform:
            uniform["vs_dense"] = dense["ms"] / uniform["ms"]
            print(f"    varlen / dense speed: {uniform['vs_dense']:.3f} (bar: >= 0.95)",
                  flush=True)
        mixed_cu = torch.tensor(cu_seqlens(MIXED_LENGTHS), dtype=torch.int32, device="cuda")
        longest = max(MIXED_LENGTHS)
        mixed_flops = attention_flops(MIXED_LENGTHS, MIXED_LENGTHS, h, d, causal)
        record("attngen varlen 16 mixed (avg 1k)",
               lambda: attngen.attention_varlen(q, k, v, mixed_cu, mixed_cu, longest, longest,
                                                causal=causal, check_seqlens=False),
               mixed_flops, MIXED_LENGTHS)
        if d != 128:
            del q4, k4, v4, q, k, v
            continue
        # The value check's cost (a host synchronization per call), wall clock.
        t0 = time.perf_counter()
        for _ in range(iters):
            attngen.attention_varlen(q, k, v, cu, cu, n, n, causal=causal)
        torch.cuda.synchronize()
        checked_ms = (time.perf_counter() - t0) * 1e3 / iters
        rows.append(dict(case="attngen varlen 16x1024, check_seqlens=True (wall clock)",
                         causal=causal, ms=checked_ms, tflops=flops / (checked_ms * 1e-3) / 1e12))
        print(f"  {'causal ' if causal else ''}with check_seqlens=True (wall clock, host sync "
              f"per call): {checked_ms:.3f} ms", flush=True)
        for label, fn in peers.items():
            record(f"{label} 16x1024", lambda fn=fn: fn(q, k, v, cu, cu, n, n, causal), flops,
                   "16x1024")
            record(f"{label} 16 mixed", lambda fn=fn: fn(q, k, v, mixed_cu, mixed_cu, longest,
                                                         longest, causal),
                   mixed_flops, MIXED_LENGTHS)
        qt, kt, vt = (t.transpose(1, 2) for t in (q4, k4, v4))
        for label, backend in (("SDPA flash dense B=16 N=1024", SDPBackend.FLASH_ATTENTION),
                               ("SDPA cuDNN dense B=16 N=1024", SDPBackend.CUDNN_ATTENTION)):
            def peer(backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
            record(label, peer, flops, "16x1024")
        # The packed result is the dense one: same tiles, same arithmetic.
        ours = attngen.attention_varlen(q, k, v, cu, cu, n, n, causal=causal,
                                        check_seqlens=False).view(b, n, h, d)
        dense_out = attngen.attention(q4, k4, v4, causal=causal)
        agree = dict(case="varlen 16x1024 vs dense B=16 N=1024 (same answer)", causal=causal,
                     bitwise=bool(torch.equal(ours, dense_out)),
                     rel=cb.rel_error(torch, ours, dense_out))
        agree["passed"] = agree["rel"] < VARLEN_VS_DENSE_TOL
        rows.append(agree)
        print(f"    varlen vs dense: bitwise equal {agree['bitwise']}, rel {agree['rel']:.2e}",
              flush=True)
        del q4, k4, v4, q, k, v, qt, kt, vt, ours, dense_out
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true", help="fewer correctness cases")
    parser.add_argument("--no-bench", action="store_true")
    parser.add_argument("--bench-head-dims", default="128",
                        help="head dims to time, e.g. 64,128,256 (H = 2048 / D)")
    parser.add_argument("--sanitize", action="store_true",
                        help="7 small correctness cases and the argument checks, no bench "
                             "(for compute-sanitizer)")
    parser.add_argument("--self-test", action="store_true",
                        help="check the pure-Python helpers (no torch, no GPU)")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    import torch
    import check_and_bench as cb
    import attngen
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"attngen {attngen.__version__}, library {attngen._library_path}; torch "
          f"{torch.__version__}, {torch.cuda.get_device_name()}, arch {attngen.device_arch()}",
          flush=True)
    print("== correctness (attngen.attention_varlen vs float32 reference per sequence)")
    checks, checks_ok = correctness(torch, cb, attngen, args.quick, args.sanitize)
    sm80, sm80_ok = [], True
    if not args.sanitize:
        print("== sm_80 varlen kernels on this GPU (attngen.compile(arch='sm_80'), the runtime)")
        sm80, sm80_ok = sm80_correctness(torch, cb, attngen, args.quick)
    print("== argument checks on the GPU")
    api, api_ok = api_checks(torch, attngen)
    bench = []
    if not (args.no_bench or args.sanitize):
        dims = tuple(int(x) for x in args.bench_head_dims.split(","))
        print(f"== speed (bf16, head dims {dims}, H = 2048 / D, 16k tokens)")
        bench = speed(torch, cb, attngen, dims)
    ok = checks_ok and sm80_ok and api_ok and all(r.get("passed", True) for r in bench)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"checks": checks, "sm80": sm80, "api": api, "bench": bench, "passed": ok,
                       "tolerances": {"rel": cb.REL_TOL, "lse": cb.LSE_TOL}}, f, indent=1)
    print("\n== summary")
    worst = {}
    for r in checks:
        if "api" in r:
            worst[r["dtype"]] = max(worst.get(r["dtype"], 0.0), r["api"]["rel"],
                                    r["guarded"]["rel"])
    print(f"correctness: {sum(r['passed'] for r in checks)}/{len(checks)} passed; worst rel "
          + ", ".join(f"{k} {v:.2e}" for k, v in sorted(worst.items()))
          + f"; sm_80 kernels: {sum(r['passed'] for r in sm80)}/{len(sm80)} passed"
          + f"; argument checks: {sum(r['passed'] for r in api)}/{len(api)} passed")
    for r in bench:
        if "ms" in r:
            extra = f"  varlen/dense speed {r['vs_dense']:.3f}" if "vs_dense" in r else ""
            print(f"{('causal ' if r['causal'] else '') + r['case']:<70} {r['ms']:8.3f} ms "
                  f"{r['tflops']:7.1f} TFLOPS{extra}")
        elif "error" in r:
            print(f"{('causal ' if r['causal'] else '') + r['case']:<70} error: {r['error']}")
    print(f"varlen_check: {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
