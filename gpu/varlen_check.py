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
  right-only ones, both alignments), max_seqlen_q/k larger than any
  sequence, q/k/v as views of one packed QKV tensor and row-padded views.
  Each case runs twice: through attngen.attention_varlen (its outputs get
  memory just filled with NaN: the caching allocator hands the freed block
  back, which the script checks), and the same kernel (attngen.compile for
  this GPU's arch) launched through the runtime into outputs of the script's
  own, NaN-poisoned with SENTINEL guards on both sides (so a write past a
  sequence or past the tensor is seen); both results must be equal. The
  reference is float32 per sequence (gpu/harness.py's), tolerances as there;
  rows without keys must be exactly 0 with LSE -inf.
* sm_80 varlen kernels on the same GPU (it runs sm_80 PTX; attention_varlen
  would pick the GPU's own arch): the SM80_COMBOS kernels (plain, causal both
  alignments, windows; d64/d96/d128/d256) from attngen.compile(arch="sm_80",
  varlen=True), launched through the runtime (gpu/harness.py's ctypes over
  attngen's library) into guarded, poisoned outputs, same cases.
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
import functools
import inspect
import json
import math
import os
import sys
import tempfile
import time

import harness

# ---------------------------------------------------------------------------
# Pure Python: batches, masks, case lists (checked by --self-test, no torch)
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


def self_test():
    """Checks the pure-Python helpers without torch or a GPU (the packing and FLOP
    arithmetic they use: gpu/harness.py --self-test)."""
    import random
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

def packed_inputs(lq, lk, h, hkv, d, dtype, layout):
    """q (total_q, h, d), k, v (total_k, hkv, d) in a layout: contiguous, row-padded
    views, or (when h == hkv and the lengths agree) views of one QKV tensor."""
    import torch
    tq, tk = sum(lq), sum(lk)
    if layout == "qkv" and h == hkv and lq == lk:
        qkv = torch.randn(tq, 3, h, d, dtype=dtype, device="cuda")
        return qkv[:, 0], qkv[:, 1], qkv[:, 2]
    layout = "padded" if layout == "padded" else "contiguous"
    return (harness.make_input((tq, h, d), dtype, layout),
            harness.make_input((tk, hkv, d), dtype, layout),
            harness.make_input((tk, hkv, d), dtype, layout))


class RuntimeKernels:
    """Varlen kernels from attngen.compile, launched through the runtime (libattngen's
    attnrt_*) into outputs of our own: the poisoned, guarded twin of each API call,
    and the sm_80 kernels (this GPU runs sm_80 PTX too, but attention_varlen compiles
    for its own arch). Loads each kernel once; unload() at the end."""

    def __init__(self, attngen, folder):
        self.attngen = attngen
        self.folder = folder
        self.rt = harness.Runtime(attngen._library_path)
        self.modules = {}
        self.arch_of = {}

    def module(self, arch, d, dname, mask, tiles=None):
        """(kernel name, loaded Module) of the varlen kernel of `mask` (MASKS), with
        the tile overrides `tiles` (those attention_varlen picks for the call)."""
        causal, align, window = MASKS[mask]
        diagonal = causal or window != harness.NO_WINDOW
        kernel = self.attngen.compile(arch=arch, head_dim=d, dtype=dname, causal=causal,
                                      causal_align=align if diagonal else "top-left",
                                      window_size=window, varlen=True, **(tiles or {}))
        module = self.modules.get(kernel.kernel_name)
        if module is None:
            base = os.path.join(self.folder, kernel.kernel_name)
            with open(base + ".ptx", "w") as f:
                f.write(kernel.ptx)
            with open(base + ".json", "w") as f:
                json.dump(kernel.metadata, f)
            module = self.modules[kernel.kernel_name] = self.rt.load(base + ".ptx",
                                                                     base + ".json")
            self.arch_of[kernel.kernel_name] = arch
        return kernel.kernel_name, module

    def launch(self, arch, mask, q, k, v, cu_q, cu_k, max_q, max_k, out, lse):
        """The kernel of `mask` for `arch` on a packed batch; returns its name."""
        import torch
        from attngen._torch_launch import short_sequence_tiles
        dname = "bf16" if q.dtype == torch.bfloat16 else "f16"
        causal, _, window = MASKS[mask]
        # The tiles attention_varlen picks for this call's lengths (sm_90a).
        tiles = (short_sequence_tiles(q, max(max_q, max_k), causal, window=window)
                 if arch == "sm_90a" else {})
        name, module = self.module(arch, q.shape[2], dname, mask, tiles)
        module.launch(self.rt.varlen_forward_args(q, k, v, out, lse, cu_q, cu_k, max_q,
                                                   max_k))
        return name

    def loaded(self, arch):
        """How many kernels for `arch` were loaded."""
        return sum(a == arch for a in self.arch_of.values())

    def unload(self):
        for module in self.modules.values():
            module.unload()
        self.modules.clear()


def case_tensors(case):
    """A case's inputs, cu_seqlens, max_seqlen values and float32 reference."""
    import torch
    name, lq, lk, (h, hkv), d, dtype, dname, mask, layout, extra = case
    q, k, v = packed_inputs(lq, lk, h, hkv, d, dtype, layout)
    cu_q = torch.tensor(harness.cu_seqlens(lq), dtype=torch.int32, device="cuda")
    cu_k = torch.tensor(harness.cu_seqlens(lk), dtype=torch.int32, device="cuda")
    causal, align, window = MASKS[mask]
    ref, ref_lse = harness.varlen_reference(q, k, v, lq, lk, 1 / math.sqrt(d), causal,
                                            align == "bottom-right", window=window)
    return q, k, v, cu_q, cu_k, max(lq) + extra, max(lk) + extra, ref, ref_lse


def guarded_outputs(q, dtype):
    """O (total_q, h, d) and LSE (h, total_q) filled with NaN inside SENTINEL guards,
    and the guards of both."""
    import torch
    out, guards = harness.poisoned_output(tuple(q.shape), dtype)
    lse, lse_guards = harness.poisoned_output((q.shape[1], q.shape[0]), torch.float32)
    return out, lse, guards + lse_guards


def judge(out, lse, ref, ref_lse, dname, guards=()):
    """The verdict on one result: rel error, NaNs, rows without keys, LSE, guards."""
    return harness.judge(out, lse, ref, ref_lse, dname, {"guards_ok": list(guards)})


def case_row(case, **extra):
    """A result row's description of a case."""
    name, lq, lk, (h, hkv), d, dtype, dname, mask, layout, max_extra = case
    return dict(extra, batch=name, lengths_q=lq, lengths_k=lk, h=h, hkv=hkv, d=d, dtype=dname,
                mask=mask, layout=layout, max_seqlen_extra=max_extra)


def run_case(attngen, kernels, case):
    """One case through attngen.attention_varlen (its output blocks just filled with
    NaN) and through the same kernel launched by the runtime into guarded, poisoned
    outputs of our own; both judged, and both must agree."""
    import torch
    name, lq, lk, (h, hkv), d, dtype, dname, mask, layout, extra = case
    q, k, v, cu_q, cu_k, max_q, max_k, ref, ref_lse = case_tensors(case)
    causal, align, window = MASKS[mask]
    row = case_row(case)
    # 1. The public API; its output blocks were just filled with NaN.
    out, lse, reused = harness.call_into_poisoned_blocks(
        lambda: attngen.attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal=causal,
                                         causal_align=align, window_size=window,
                                         return_lse=True),
        (q.shape, dtype), ((h, q.shape[0]), torch.float32))
    torch.cuda.synchronize()
    api = judge(out, lse, ref, ref_lse, dname)
    api["poison_reused"] = reused
    # 2. The same kernel into guarded, poisoned outputs of our own.
    out2, lse2, guards = guarded_outputs(q, dtype)
    kernels.launch(attngen.device_arch(), mask, q, k, v, cu_q, cu_k, max_q, max_k, out2, lse2)
    torch.cuda.synchronize()
    own = judge(out2, lse2, ref, ref_lse, dname, guards)
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


def run_sm80_case(kernels, case):
    """One case through an sm_80 varlen kernel, compiled by attngen.compile and
    launched by the runtime (libattngen's attnrt_*) into guarded, NaN-poisoned
    outputs."""
    import torch
    q, k, v, cu_q, cu_k, max_q, max_k, ref, ref_lse = case_tensors(case)
    out, lse, guards = guarded_outputs(q, case[5])
    kernel_name = kernels.launch("sm_80", case[7], q, k, v, cu_q, cu_k, max_q, max_k, out, lse)
    torch.cuda.synchronize()
    row = case_row(case, arch="sm_80", kernel=kernel_name)
    row["guarded"] = judge(out, lse, ref, ref_lse, case[6], guards)
    row["passed"] = row["guarded"]["passed"]
    return row


def run_cases(cases, run_one, seed, failed_fields=None, note=None):
    """Runs each case (the dtype name resolved, the seed `seed` + its index) and
    returns the rows; a case that raises is a failed row, and one that left the CUDA
    context unusable stops the run. Rows that failed are printed, and those `note`
    flags."""
    import torch
    dtypes = {"bf16": torch.bfloat16, "f16": torch.float16}
    results = []
    for n, c in enumerate(cases):
        torch.manual_seed(seed + n)
        try:
            row = run_one(c[:5] + (dtypes[c[5]], c[5]) + c[6:])
        except Exception as e:  # noqa: BLE001 - reported, and fatal ones stop the run
            row = dict(failed_fields or {}, case=repr(c), error=str(e)[:400], passed=False)
            results.append(row)
            print(f"  FAIL {row}", flush=True)
            if harness.is_fatal(e):
                print("  the CUDA context is unusable: stopping", flush=True)
                break
            continue
        results.append(row)
        if not row["passed"] or (note and note(row)):
            print(f"  {'FAIL' if not row['passed'] else 'note'}: {row}", flush=True)
    return results


def sm80_correctness(kernels, quick):
    cases = sm80_cases(correctness_cases(quick))
    results = run_cases(cases, lambda case: run_sm80_case(kernels, case), 500,
                        failed_fields={"arch": "sm_80"})
    passed = sum(r["passed"] for r in results)
    print(f"  sm_80 correctness: {passed}/{len(cases)} passed ({kernels.loaded('sm_80')} "
          "kernels)", flush=True)
    return results, passed == len(cases)


def correctness(attngen, kernels, quick, sanitize):
    cases = correctness_cases(quick)
    if sanitize:
        cases = sanitize_cases(cases)
    results = run_cases(cases, lambda case: run_case(attngen, kernels, case), 100,
                        note=lambda row: not row["api"]["poison_reused"])
    passed = sum(r["passed"] for r in results)
    reused = sum(r.get("api", {}).get("poison_reused", False) for r in results)
    print(f"  correctness: {passed}/{len(cases)} passed; API output block poisoned in "
          f"{reused}/{len(results)}", flush=True)
    return results, passed == len(cases)


def api_checks(attngen, kernels):
    """Wrong cu_seqlens: clear errors with the check on; no fault without it."""
    import torch
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
    # Garbage with the check off (a launch the runtime cannot check: the values are
    # on the GPU): the kernel clamps every sequence into the tensors; the guards
    # around the output must hold and nothing may fault.
    out, guards = harness.poisoned_output(tuple(q.shape), torch.bfloat16)
    garbage_q = torch.tensor([7, -5, 2**30], dtype=torch.int32, device="cuda")
    garbage_k = torch.tensor([2**31 - 1, 3, -1], dtype=torch.int32, device="cuda")
    try:
        kernels.launch(attngen.device_arch(), "bottom-right", q, k, k, garbage_q, garbage_k, 20,
                       40, out, None)
        torch.cuda.synchronize()
        ok = harness.guards_intact(guards)
        message = "guards intact" if ok else "a write past the output"
    except Exception as e:  # noqa: BLE001
        ok, message = False, str(e)[:300]
    rows.append(dict(check="garbage cu_seqlens, check off", passed=ok, message=message))
    print(f"  {'ok  ' if ok else 'FAIL'} garbage cu_seqlens, check off: {message}", flush=True)
    return rows, all(r["passed"] for r in rows)


def torch_varlen_peers():
    """torch's own varlen entry points that exist in this build: name -> fn(q, k,
    v, cu_q, cu_k, max_q, max_k, causal) returning out (total_q, h, d)."""
    import torch
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


def speed_rows(attngen, peers, d, causal, warmup, iters):
    """The speed rows of one head dim, causal or not: attngen dense B=16 N=1024, the
    same tokens packed, 16 mixed lengths; at d128 also the check_seqlens cost, torch's
    varlen entry points, SDPA flash / cuDNN dense, and varlen against dense."""
    import torch
    b, n = 16, 1024
    h = 2048 // d
    tag = "" if d == 128 else f"d{d} "
    rows = []
    torch.manual_seed(7)
    q4, k4, v4 = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16)
                  for _ in range(3))
    flops = harness.attention_flops(b, h, n, n, d, causal)

    def record(label, fn, flop_count, lengths):
        ms, error = harness.try_time(fn, warmup, iters)
        row = dict(case=tag + label, causal=causal, lengths=lengths)
        if error is None:
            row.update(ms=ms, tflops=harness.tflops(flop_count, ms))
        else:
            row["error"] = error
        rows.append(row)
        print(f"  {'causal ' if causal else ''}{tag}{label}: "
              + (f"{row['ms']:.3f} ms, {row['tflops']:.1f} TFLOPS" if "ms" in row
                 else f"error: {row['error']}"), flush=True)
        return row

    dense = record("attngen dense B=16 N=1024",
                   lambda: attngen.attention(q4, k4, v4, causal=causal), flops, "16x1024")
    # The same tokens packed: 16 sequences of 1024.
    q, k, v = (t.reshape(b * n, h, d) for t in (q4, k4, v4))
    cu = torch.tensor(harness.cu_seqlens([n] * b), dtype=torch.int32, device="cuda")
    uniform = record(
        "attngen varlen 16x1024 packed",
        lambda: attngen.attention_varlen(q, k, v, cu, cu, n, n, causal=causal,
                                         check_seqlens=False),
        flops, "16x1024")
    if "ms" in dense and "ms" in uniform:
        uniform["vs_dense"] = dense["ms"] / uniform["ms"]
        print(f"    varlen / dense speed: {uniform['vs_dense']:.3f} (bar: >= 0.95)", flush=True)
    mixed_cu = torch.tensor(harness.cu_seqlens(MIXED_LENGTHS), dtype=torch.int32, device="cuda")
    longest = max(MIXED_LENGTHS)
    mixed_flops = harness.varlen_attention_flops(MIXED_LENGTHS, MIXED_LENGTHS, h, d, causal)
    record("attngen varlen 16 mixed (avg 1k)",
           lambda: attngen.attention_varlen(q, k, v, mixed_cu, mixed_cu, longest, longest,
                                            causal=causal, check_seqlens=False),
           mixed_flops, MIXED_LENGTHS)
    if d != 128:
        return rows
    # The value check's cost (a host synchronization per call), wall clock.
    t0 = time.perf_counter()
    for _ in range(iters):
        attngen.attention_varlen(q, k, v, cu, cu, n, n, causal=causal)
    torch.cuda.synchronize()
    checked_ms = (time.perf_counter() - t0) * 1e3 / iters
    rows.append(dict(case="attngen varlen 16x1024, check_seqlens=True (wall clock)",
                     causal=causal, ms=checked_ms, tflops=harness.tflops(flops, checked_ms)))
    print(f"  {'causal ' if causal else ''}with check_seqlens=True (wall clock, host sync "
          f"per call): {checked_ms:.3f} ms", flush=True)
    for label, fn in peers.items():
        record(f"{label} 16x1024", functools.partial(fn, q, k, v, cu, cu, n, n, causal), flops,
               "16x1024")
        record(f"{label} 16 mixed", functools.partial(fn, q, k, v, mixed_cu, mixed_cu, longest,
                                                      longest, causal),
               mixed_flops, MIXED_LENGTHS)
    for label, backend in (("SDPA flash dense B=16 N=1024", "flash"),
                           ("SDPA cuDNN dense B=16 N=1024", "cudnn")):
        record(label, harness.sdpa_call(backend, q4, k4, v4, causal), flops, "16x1024")
    # The packed result is the dense one: same tiles, same arithmetic.
    ours = attngen.attention_varlen(q, k, v, cu, cu, n, n, causal=causal,
                                    check_seqlens=False).view(b, n, h, d)
    dense_out = attngen.attention(q4, k4, v4, causal=causal)
    agree = dict(case="varlen 16x1024 vs dense B=16 N=1024 (same answer)", causal=causal,
                 bitwise=bool(torch.equal(ours, dense_out)),
                 rel=harness.rel_error(ours, dense_out))
    agree["passed"] = agree["rel"] < VARLEN_VS_DENSE_TOL
    rows.append(agree)
    print(f"    varlen vs dense: bitwise equal {agree['bitwise']}, rel {agree['rel']:.2e}",
          flush=True)
    return rows


def speed(attngen, head_dims=(128,), warmup=10, iters=50):
    """Head dims other than 128 (H = 2048 / D) time attngen dense and varlen
    only; the peers and the check_seqlens cost run at d128."""
    harness.warm_up_gpu()  # clocks up before the first timing
    peers = torch_varlen_peers()
    rows = []
    for d in head_dims:
        for causal in (False, True):
            rows += speed_rows(attngen, peers, d, causal, warmup, iters)
    return rows


def print_summary(checks, sm80, api, bench):
    print("\n== summary")
    worst = {dname: harness.worst_rel(rel for r in checks if "api" in r and r["dtype"] == dname
                                      for rel in (r["api"]["rel"], r["guarded"]["rel"]))
             for dname in sorted({r["dtype"] for r in checks if "api" in r})}
    print(f"correctness: {sum(r['passed'] for r in checks)}/{len(checks)} passed; worst rel "
          + ", ".join(f"{k} {v:.2e}" for k, v in worst.items())
          + f"; sm_80 kernels: {sum(r['passed'] for r in sm80)}/{len(sm80)} passed"
          + f"; argument checks: {sum(r['passed'] for r in api)}/{len(api)} passed")
    for r in bench:
        if "ms" in r:
            extra = f"  varlen/dense speed {r['vs_dense']:.3f}" if "vs_dense" in r else ""
            print(f"{('causal ' if r['causal'] else '') + r['case']:<70} {r['ms']:8.3f} ms "
                  f"{r['tflops']:7.1f} TFLOPS{extra}")
        elif "error" in r:
            print(f"{('causal ' if r['causal'] else '') + r['case']:<70} error: {r['error']}")


def run_checks(args, attngen, kernels):
    """Every section the arguments ask for; (results by section, all passed)."""
    print("== correctness (attngen.attention_varlen vs float32 reference per sequence)")
    checks, checks_ok = correctness(attngen, kernels, args.quick, args.sanitize)
    sm80, sm80_ok = [], True
    if not args.sanitize:
        print("== sm_80 varlen kernels on this GPU (attngen.compile(arch='sm_80'), the runtime)")
        sm80, sm80_ok = sm80_correctness(kernels, args.quick)
    print("== argument checks on the GPU")
    api, api_ok = api_checks(attngen, kernels)
    bench = []
    if not (args.no_bench or args.sanitize):
        dims = tuple(int(x) for x in args.bench_head_dims.split(","))
        print(f"== speed (bf16, head dims {dims}, H = 2048 / D, 16k tokens)")
        bench = speed(attngen, dims)
    ok = checks_ok and sm80_ok and api_ok and all(r.get("passed", True) for r in bench)
    return {"checks": checks, "sm80": sm80, "api": api, "bench": bench}, ok


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
    import attngen
    harness.precise_float32()
    print(f"attngen {attngen.__version__}, library {attngen._library_path}; torch "
          f"{torch.__version__}, {torch.cuda.get_device_name()}, arch {attngen.device_arch()}",
          flush=True)
    with tempfile.TemporaryDirectory() as folder:
        kernels = RuntimeKernels(attngen, folder)
        try:
            results, ok = run_checks(args, attngen, kernels)
        finally:
            kernels.unload()
    if args.json:
        harness.write_json(args.json, dict(results, passed=ok, tolerances={
            "rel": harness.REL_TOL, "lse": harness.LSE_TOL}))
    print_summary(results["checks"], results["sm80"], results["api"], results["bench"])
    print(f"varlen_check: {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
