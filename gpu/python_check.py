#!/usr/bin/env python3
"""The Python API on a GPU, with the JIT compiling there: correctness over many
shapes and speed against torch SDPA, plus the JIT's compile speed.

    ATTNGEN_LIBRARY=.../libattngen.so PYTHONPATH=python \
        python3 gpu/python_check.py [--json OUT.json] [--quick]

* Compile speed: a fresh cache folder; cold compiles, memory hits, disk hits (a
  second process), the first attention() call of a new process (cold and from
  the disk cache) and of a new kernel (compile + load + launch).
* Correctness: attngen.attention on fresh random inputs (ragged Nq != Nk, GQA,
  strided views, both dtypes, head dims 64/128/256, not causal, causal with the
  default bottom-right alignment and causal top-left, soft caps that bite, sliding
  windows (window_size) of both alignments, wider and narrower than a block, with
  rows that see no key) against gpu/harness.py's float32 reference and
  tolerances (those of check_and_bench.py); the other head dims of {8, 16,
  40, 72, 80, 96, 112, 160, 192, 224} not causal, causal bottom-right and a
  two-sided window. The output is allocated by attngen; the memory it gets
  was filled with NaN just before (the caching allocator hands the same block
  back; the script checks it did). SDPA's
  own error against the same reference is reported beside ours (with the window
  as a boolean mask).
* Speed: attngen.attention (host overhead included) against SDPA's flash and
  cuDNN backends on the PEERS shapes (B*N = 16k tokens, H*D = 2048; d96 and
  d192 with the nearest whole number of heads), bf16; sliding windows (1024, 0)
  and (1024, 1024) at N = 8k counting only their visible FLOPs, beside the plain
  kernel (issue 9's bar: >= 0.9x per visible FLOP).
* FlexAttention: torch.nn.attention.flex_attention under torch.compile with a
  sliding-window block mask and with a tanh soft cap (30) score_mod, against
  attngen.attention on the same tensors: TFLOPS, the ratio (bar: attngen >= 1.5x)
  and Flex's first-call (compile) time; its output is checked against ours.
The summary table is printed last. Exit status 0 when every check passed.
"""

import argparse
import functools
import math
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

import harness

#: The package, imported by main() once ATTNGEN_CACHE_DIR names a fresh folder (the
#: first compiles must be cold); the rest of this file (the flex masks, which
#: gpu/check_reference.py checks on the CPU) needs only torch.
attngen = None


def compile_speed():
    rows = []

    def timed(label, fn, repeat=1):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        seconds = (time.perf_counter() - t0) / repeat
        rows.append({"what": label, "seconds": seconds})
        print(f"  {label}: {seconds * 1e3:.3f} ms", flush=True)

    timed("cold compile sm_90a bf16 d128 (first in process)",
          lambda: attngen.compile(arch="sm_90a", head_dim=128))
    timed("cold compile sm_90a bf16 d128 causal",
          lambda: attngen.compile(arch="sm_90a", head_dim=128, causal=True))
    timed("cold compile sm_80 f16 d64", lambda: attngen.compile(arch="sm_80", head_dim=64,
                                                                 dtype="f16"))
    timed("memory hit (attngen.compile, Python)",
          lambda: attngen.compile(arch="sm_90a", head_dim=128), repeat=1000)
    probe = ("import time, attngen; t = time.perf_counter(); "
             "attngen.compile(arch='sm_90a', head_dim=128); "
             "print(time.perf_counter() - t, attngen.stats()['disk_hits'])")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.split()
    rows.append({"what": "disk hit (new process)", "seconds": float(out[0]),
                 "disk_hits": int(out[1])})
    print(f"  disk hit (new process): {float(out[0]) * 1e3:.3f} ms, disk_hits={out[1]}")
    rows += first_call_in_new_process()
    # Eager calls skip the torch custom op, whose first use in a process costs
    # PyTorch's lazy set-up; this one pays a compile + load.
    x = torch.randn(1, 256, 4, 128, device="cuda", dtype=torch.bfloat16)

    def first_ever():
        attngen.attention(x, x, x)
        torch.cuda.synchronize()

    timed("first attention() in this process (compile + load + launch)", first_ever)
    q = torch.randn(1, 256, 4, 64, device="cuda", dtype=torch.float16)

    def new_kernel():
        attngen.attention(q, q, q, causal=True)
        torch.cuda.synchronize()

    timed("first attention() of a new kernel: compile + load + launch", new_kernel)
    timed("attention() again, 1x256x4x64 (host overhead + tiny kernel)", new_kernel, repeat=200)
    return rows


# A user's first eager attngen.attention call in a new process: torch and
# CUDA already set up, then one call, timed. Eager calls launch directly (not
# through the torch custom op), so this should cost about a compile + load,
# and torch._dynamo / sympy should not be imported by it.
FIRST_CALL_PROBE = """
import sys, time, torch
x = torch.randn(1, 256, 4, 128, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
t = time.perf_counter()
import attngen
import_seconds = time.perf_counter() - t
before = {m for m in ("torch._dynamo", "sympy") if m in sys.modules}
t = time.perf_counter()
attngen.attention(x, x, x)
torch.cuda.synchronize()
seconds = time.perf_counter() - t
after = {m for m in ("torch._dynamo", "sympy") if m in sys.modules}
print(seconds, import_seconds, attngen.stats()["compiles"],
      ",".join(sorted(after - before)) or "-")
"""


def first_call_in_new_process():
    """Times the first attention() of a fresh process, once on an empty cache
    (compile + load + launch) and once on the disk cache it left (load +
    launch). Printed, not asserted."""
    rows = []
    cache = tempfile.mkdtemp(prefix="attngen-first-call-")
    for label in ("cold cache", "disk cache hit"):
        env = dict(os.environ, ATTNGEN_CACHE_DIR=cache)
        out = subprocess.run([sys.executable, "-c", FIRST_CALL_PROBE], capture_output=True,
                             text=True, check=True, env=env).stdout.split()
        seconds, import_seconds, compiles, imported = (float(out[0]), float(out[1]),
                                                       int(out[2]), out[3])
        what = f"first attention() in a new process, {label}"
        rows.append({"what": what, "seconds": seconds, "import_seconds": import_seconds,
                     "compiles": compiles, "imported_by_the_call": imported})
        print(f"  {what}: {seconds * 1e3:.3f} ms (import attngen before it: "
              f"{import_seconds * 1e3:.1f} ms; compiles={compiles}; imported by the call: "
              f"{imported})", flush=True)
    return rows


SHAPES = [  # (B, Nq, Nk, H, Hkv); the quick run takes the first four
    (1, 1, 1, 1, 1), (2, 17, 333, 3, 3), (1, 333, 17, 4, 2), (2, 1000, 1000, 2, 1),
    (1, 4097, 4096, 2, 2), (1, 128, 4097, 2, 1), (2, 1, 4097, 4, 1), (1, 1000, 77, 2, 2)]


def make(shape, d, dtype, layout):
    b, nq, nk, h, hkv = shape
    q = harness.make_input((b, nq, h, d), dtype, layout)
    k = harness.make_input((b, nk, hkv, d), dtype, layout)
    v = harness.make_input((b, nk, hkv, d), dtype, layout)
    return q, k, v


#: (causal, the causal_align argument or None for the default, the mask it means,
#: softcap, factor on q, window_size): attngen.attention's default is bottom-right,
#: as flash_attn_func, for causal masks and windows alike. The soft caps bite: 2 on
#: unit-size scores, 30 on scores of about 4x that size (q * 4, exact in bf16/f16).
#: The windows: causal wider than a block (the causal flag and flash_attn's (L, 0)
#: spelling), two-sided narrower than a block, the diagonal alone (top-left), right
#: side only, and with a soft cap.
VARIANTS = [(False, None, "none", 0.0, 1, (-1, -1)), (True, None, "bottom-right", 0.0, 1, (-1, -1)),
            (True, "top-left", "top-left", 0.0, 1, (-1, -1)),
            (True, None, "bottom-right", 2.0, 1, (-1, -1)), (False, None, "none", 30.0, 4, (-1, -1)),
            (True, None, "bottom-right", 0.0, 1, (300, -1)),
            (False, None, "bottom-right", 0.0, 1, (37, 0)),
            (False, None, "bottom-right", 0.0, 1, (100, 50)),
            (False, "top-left", "top-left", 0.0, 1, (0, 0)),
            (False, None, "bottom-right", 0.0, 1, (-1, 64)),
            (False, None, "bottom-right", 2.0, 1, (200, 200))]


#: Head dims checked with every variant, and the others of the issue's set
#: (any multiple of 8 up to 256 is supported), checked not causal and causal
#: bottom-right: tiles padded to 16 columns (8, 40, 72, 112 ...) and 32- and
#: 64-byte swizzles (80, 96, 160, 224).
HEAD_DIMS = (64, 128, 256)
MORE_HEAD_DIMS = (8, 16, 40, 72, 80, 96, 112, 160, 192, 224)


def correctness_plan():
    """(head dim, its variants): every variant at HEAD_DIMS; plain, causal
    bottom-right and the (100, 50) window at MORE_HEAD_DIMS."""
    window_variant = [v for v in VARIANTS if v[5] == (100, 50)]
    return ([(d, VARIANTS) for d in HEAD_DIMS]
            + [(d, VARIANTS[:2] + window_variant) for d in MORE_HEAD_DIMS])


def sdpa_error(q, k, v, causal, bottom_right, window, ref):
    """SDPA's own error (its default backend choice) against the reference ours is
    judged by; a bottom-right mask or a window goes in as a boolean mask (rows that
    see no key come back NaN from SDPA: counted as 0, as the reference does)."""
    group = q.shape[2] // k.shape[2]
    sdpa_mask = None
    if bottom_right or window != harness.NO_WINDOW:
        sdpa_mask = harness.visibility_mask(q.shape[1], k.shape[1], causal, bottom_right, window,
                                            "cuda")
    sdpa = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.repeat_interleave(group, 2).transpose(1, 2),
        v.repeat_interleave(group, 2).transpose(1, 2), attn_mask=sdpa_mask,
        is_causal=causal and sdpa_mask is None).nan_to_num(0.0)
    return harness.rel_error(sdpa.transpose(1, 2), ref)


def check_case(d, dtype, dname, variant, i, shape):
    """One correctness row: attngen.attention on fresh inputs (layout and LSE by the
    shape's index) into poisoned memory, judged against the float32 reference, with
    SDPA's error beside ours (SDPA has no soft cap: None then)."""
    causal, align, mask, softcap, q_factor, window = variant
    layout = ("bnhd", "bhnd", "padded")[i % 3]
    torch.manual_seed(1000 + i)
    q, k, v = make(shape, d, dtype, layout)
    if q_factor != 1:
        q = q * q_factor
    with_lse = i % 2 == 0
    kwargs = {"causal_align": align} if align else {}
    if softcap:
        kwargs["softcap"] = softcap
    if window != harness.NO_WINDOW:
        kwargs["window_size"] = window
    b, nq, h, _ = q.shape
    out, lse, reused = harness.call_into_poisoned_blocks(
        lambda: attngen.attention(q, k, v, causal=causal, return_lse=with_lse, **kwargs),
        (q.shape, q.dtype), ((b, h, nq), torch.float32) if with_lse else None)
    torch.cuda.synchronize()
    bottom_right = mask == "bottom-right"
    ref, ref_lse = harness.reference(q, k, v, 1 / math.sqrt(d), causal, bottom_right, softcap,
                                     window)
    # Rows that see no key (bottom-right, Nq > Nk) must be exactly 0: judge counts them.
    verdict = harness.judge(out, lse, ref, ref_lse, dname)
    sdpa_rel = None if softcap else sdpa_error(q, k, v, causal, bottom_right, window, ref)
    return dict(d=d, dtype=dname, causal=causal, mask=mask, softcap=softcap,
                q_factor=q_factor, window=list(window), shape=shape,
                layout=layout, lse=with_lse, rel=verdict["rel"], sdpa_rel=sdpa_rel,
                lse_err=verdict["lse_err"], nan=verdict["nan"],
                empty_rows=verdict["empty_rows"], empty_rows_zero=verdict["empty_rows_zero"],
                poison_reused=reused, passed=verdict["passed"])


def correctness(quick):
    results = []
    dtypes = [(torch.bfloat16, "bf16"), (torch.float16, "f16")]
    for d, variants in correctness_plan():
        for dtype, dname in dtypes:
            for variant in variants:
                shapes = SHAPES[:4] if quick or variant[3] else SHAPES
                for i, shape in enumerate(shapes):
                    row = check_case(d, dtype, dname, variant, i, shape)
                    results.append(row)
                    if not row["passed"] or not row["poison_reused"]:
                        print(f"  {'FAIL' if not row['passed'] else 'note'}: {row}", flush=True)
    passed = sum(r["passed"] for r in results)
    print(f"  correctness: {passed}/{len(results)} passed; poisoned output block reused in "
          f"{sum(r['poison_reused'] for r in results)}/{len(results)}", flush=True)
    return results


#: The window speed rows (issue 9): (left, right) at N = 8k, d128 and d64, each beside
#: the plain kernel of the same shape.
SPEED_WINDOWS = [(1024, 0), (1024, 1024)]


def speed_cases(quick):
    """(d, causal, N, softcap, window) of the speed rows."""
    none = harness.NO_WINDOW
    cases = [(128, False, 8192, 0.0, none), (128, True, 8192, 0.0, none),
             (128, False, 1024, 0.0, none), (128, True, 1024, 0.0, none),
             (64, False, 8192, 0.0, none), (256, False, 8192, 0.0, none),
             (128, False, 8192, 30.0, none), (128, True, 8192, 30.0, none)]
    cases += [(d, False, 8192, 0.0, w) for d in (128, 64) for w in SPEED_WINDOWS]
    # The first-class head dims between the powers of two (issue 9 item 4).
    cases += [(96, False, 8192, 0.0, none), (96, False, 1024, 0.0, none),
              (192, False, 8192, 0.0, none), (192, False, 1024, 0.0, none)]
    if not quick:
        cases += [(128, False, 4096, 0.0, none), (64, True, 8192, 0.0, none),
                  (256, True, 8192, 0.0, none), (96, True, 8192, 0.0, none),
                  (192, True, 8192, 0.0, none)]
    return cases


def speed_row(d, causal, n, softcap, window, warmup, iters):
    """One speed row: attngen.attention (host overhead included), then SDPA's flash
    and cuDNN backends on the same tensors in the same run, and ours against flash's
    output (both low precision; SDPA has no soft cap and its flash backend no window:
    not checked then)."""
    h = harness.bench_heads(d)
    b = harness.bench_batch(n)
    windowed = window != harness.NO_WINDOW
    torch.manual_seed(7)
    q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    row = dict(d=d, causal=causal, n=n, b=b, h=h, softcap=softcap, window=list(window))

    def ours():
        return attngen.attention(q, k, v, causal=causal, softcap=softcap,
                                 window_size=window)

    ours()
    row["ours_ms"] = harness.time_ms(ours, warmup, iters)
    # A window counts the FLOPs of the keys its rows see (bottom-right, the
    # default; Nq = Nk, so top-left is the same).
    seen = harness.visible_keys(n, n, causal, True, window) if windowed else None
    row["ours_tflops"] = harness.tflops(harness.attention_flops(b, h, n, n, d, causal, seen),
                                        row["ours_ms"])
    # SDPA's flash and cuDNN backends take no window: plain peers only.
    flash_out = None
    for label in () if windowed else ("flash", "cudnn"):
        out = harness.time_peer(row, label, functools.partial(harness.sdpa_call, label, q, k, v,
                                                              causal),
                                warmup, iters, harness.attention_flops(b, h, n, n, d, causal))
        if label == "flash":
            flash_out = out
    row["rel_vs_flash"] = float("nan")
    if not softcap and not windowed and flash_out is not None:
        row["rel_vs_flash"] = harness.rel_error(ours(), flash_out.transpose(1, 2))
    print(f"  {speed_label(row)}: ours {row['ours_tflops']:.1f}"
          + (" (visible FLOPs)" if windowed else
             f", flash {row.get('flash_tflops', float('nan')):.1f}, "
             f"cudnn {row.get('cudnn_tflops', float('nan')):.1f}") + " TFLOPS", flush=True)
    return row


def speed(quick, warmup=10, iters=50):
    harness.warm_up_gpu()
    return [speed_row(*case, warmup, iters) for case in speed_cases(quick)]


def speed_label(r):
    window = r.get("window", [-1, -1])
    return (f"d{r['d']} {'causal ' if r['causal'] else ''}"
            f"{'sc ' if r.get('softcap') else ''}"
            f"{'w({},{}) '.format(*window) if window != [-1, -1] else ''}N={r['n']}")


def window_costs(bench):
    """(label, window TFLOPS, plain TFLOPS, ratio) for each window row beside the
    plain row of the same d and N (issue 9's bar: ratio >= 0.9)."""
    plain = {(r["d"], r["n"]): r["ours_tflops"] for r in bench
             if not r["causal"] and not r.get("softcap") and r.get("window") == [-1, -1]}
    out = []
    for r in bench:
        if r.get("window", [-1, -1]) != [-1, -1]:
            base = plain.get((r["d"], r["n"]))
            out.append((speed_label(r), r["ours_tflops"], base,
                        r["ours_tflops"] / base if base else None))
    return out


#: FlexAttention cases: (label, d, window, softcap, causal). Sliding windows as block
#: masks, the soft cap as a score_mod; the same shapes as the speed rows.
FLEX_CASES = [("window (1024, 0)", 128, (1024, 0), 0.0, False),
              ("window (1024, 1024)", 128, (1024, 1024), 0.0, False),
              ("softcap 30", 128, (-1, -1), 30.0, False),
              ("softcap 30 causal", 128, (-1, -1), 30.0, True),
              ("window (1024, 0)", 64, (1024, 0), 0.0, False),
              ("softcap 30 causal", 64, (-1, -1), 30.0, True)]


def load_flex():
    """flex_attention and create_block_mask, or None and the reason (the API is
    torch >= 2.5's torch.nn.attention.flex_attention)."""
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        return (flex_attention, create_block_mask), None
    except Exception as e:  # noqa: BLE001 -- any import problem is reported
        return None, (f"torch {torch.__version__} has no usable "
                      f"torch.nn.attention.flex_attention ({type(e).__name__}: {e})")


def flex_masks(window, causal, n):
    """FlexAttention's mask_mod for a sliding window (q_idx - left <= kv_idx <=
    q_idx + right, Nq = Nk) and / or a causal mask; None when there is neither."""
    left, right = window
    if left < 0 and right < 0 and not causal:
        return None

    def mask_mod(b, h, q_idx, kv_idx):
        seen = kv_idx >= 0  # a tensor of the right shape and dtype
        if causal:
            seen = seen & (kv_idx <= q_idx)
        if left >= 0:
            seen = seen & (kv_idx >= q_idx - left)
        if right >= 0:
            seen = seen & (kv_idx <= q_idx + right)
        return seen
    return mask_mod


def flex_row_header(case, n=8192):
    """A FlexAttention row's description: the FLEX_CASES entry at N = n, bf16, B*N =
    16k, H*D = 2048."""
    label, d, window, softcap, causal = case
    return dict(case=f"d{d} {label} N={n}", d=d, n=n, b=max(1, 16384 // n), h=2048 // d,
                window=list(window), softcap=softcap, causal=causal)


def fill_flex_row(row, flex, create_block_mask, warmup, iters):
    """Fills one FlexAttention row: torch.compile(flex_attention) with the case's
    block mask and score_mod against attngen.attention on the same tensors: TFLOPS,
    the ratio, Flex's first-call (compile) time and the two outputs' difference."""
    b, n, h, d = row["b"], row["n"], row["h"], row["d"]
    window, softcap, causal = tuple(row["window"]), row["softcap"], row["causal"]
    torch.manual_seed(11)
    q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    mask_mod = flex_masks(window, causal, n)
    block_mask = (create_block_mask(mask_mod, None, None, n, n, device="cuda")
                  if mask_mod else None)

    def score_mod(score, b_, h_, q_idx, kv_idx):
        return softcap * torch.tanh(score / softcap)

    kwargs = {"block_mask": block_mask}
    if softcap:
        kwargs["score_mod"] = score_mod

    def flex_call():
        return flex(qt, kt, vt, **kwargs)

    t0 = time.perf_counter()
    flex_out = flex_call()
    torch.cuda.synchronize()
    row["flex_first_call_s"] = time.perf_counter() - t0

    def ours():
        return attngen.attention(q, k, v, causal=causal, softcap=softcap, window_size=window)

    ours_out = ours()
    torch.cuda.synchronize()
    # Both compute the same: bottom-right = top-left at Nq = Nk.
    row["rel_ours_vs_flex"] = harness.rel_error(ours_out, flex_out.transpose(1, 2))
    windowed = window != harness.NO_WINDOW
    seen = harness.visible_keys(n, n, causal, True, window) if windowed else None
    flops = harness.attention_flops(b, h, n, n, d, causal, seen)
    row["flex_ms"] = harness.time_ms(flex_call, warmup, iters)
    row["ours_ms"] = harness.time_ms(ours, warmup, iters)
    row["flex_tflops"] = harness.tflops(flops, row["flex_ms"])
    row["ours_tflops"] = harness.tflops(flops, row["ours_ms"])
    row["ratio"] = row["ours_tflops"] / row["flex_tflops"]
    print(f"  {row['case']}: attngen {row['ours_tflops']:.1f}, flex "
          f"{row['flex_tflops']:.1f} TFLOPS ({row['ratio']:.2f}x; bar 1.5x), flex "
          f"first call {row['flex_first_call_s']:.2f} s, rel attngen vs flex "
          f"{row['rel_ours_vs_flex']:.2e}", flush=True)


def flex_comparison(warmup=10, iters=50):
    """attngen.attention against torch.compile(flex_attention) on the speed rows'
    shapes (bf16, B*N = 16k, H*D = 2048, N = 8k); returns rows and a note."""
    loaded, why = load_flex()
    if loaded is None:
        print(f"  FlexAttention not compared: {why}", flush=True)
        return [], why
    flex_attention, create_block_mask = loaded
    try:
        flex = torch.compile(flex_attention, dynamic=False)
    except Exception as e:  # noqa: BLE001
        why = f"torch.compile(flex_attention) failed: {type(e).__name__}: {e}"
        print(f"  FlexAttention not compared: {why}", flush=True)
        return [], why
    rows = []
    for case in FLEX_CASES:
        row = flex_row_header(case)
        try:
            fill_flex_row(row, flex, create_block_mask, warmup, iters)
        except Exception as e:  # noqa: BLE001 -- an API difference is reported, not fatal
            row["error"] = harness.short_error(e)
            print(f"  {row['case']}: FlexAttention failed ({row['error']}); check the "
                  f"flex_attention API of torch {torch.__version__}", flush=True)
        rows.append(row)
        torch.cuda.empty_cache()
    return rows, None


def import_attngen():
    """Imports the package with a fresh cache folder, so the first compiles are cold."""
    global attngen
    os.environ["ATTNGEN_CACHE_DIR"] = tempfile.mkdtemp(prefix="attngen-cache-")
    import attngen as package
    attngen = package


def worst_by_dtype(checks):
    """{dtype: worst rel} of the correctness rows (NaN ranked worst)."""
    return {dname: harness.worst_rel(r["rel"] for r in checks if r["dtype"] == dname)
            for dname in sorted({r["dtype"] for r in checks})}


def print_summary(checks, compile_rows, bench, flex_rows, flex_note, stats):
    print("\n== summary")
    print(f"correctness: {sum(r['passed'] for r in checks)}/{len(checks)} passed; worst rel "
          + ", ".join(f"{k} {v:.2e}" for k, v in worst_by_dtype(checks).items())
          + f" (tol {harness.REL_TOL}); JIT stats {stats}")
    print("compile: " + "; ".join(f"{r['what']} {r['seconds'] * 1e3:.2f} ms" for r in compile_rows))
    print(f"{'case':<22} {'ours':>7} {'flash':>7} {'cudnn':>7} {'ours/flash':>10} "
          f"{'ours/cudnn':>10} {'rel vs flash':>12}")
    for r in bench:
        case = speed_label(r)
        fl, cu = r.get("flash_tflops"), r.get("cudnn_tflops")
        print(f"{case:<22} {r['ours_tflops']:7.1f} {fl or float('nan'):7.1f} "
              f"{cu or float('nan'):7.1f} {r['ours_tflops'] / fl if fl else float('nan'):9.2f}x "
              f"{r['ours_tflops'] / cu if cu else float('nan'):9.2f}x {r['rel_vs_flash']:12.2e}")
    print("window cost (visible FLOPs; bar: window/plain >= 0.9):")
    for label, w, base, ratio in window_costs(bench):
        print(f"  {label:<24} {w:7.1f} vs plain {base or float('nan'):7.1f}: "
              + (f"{ratio:.2f}x ({'met' if ratio >= 0.9 else 'MISSED'})" if ratio else "-"))
    if flex_note:
        print(f"FlexAttention: not compared ({flex_note})")
    for r in flex_rows:
        if "error" in r:
            print(f"  flex {r['case']}: {r['error']}")
        else:
            print(f"  flex {r['case']:<28} attngen {r['ours_tflops']:7.1f} flex "
                  f"{r['flex_tflops']:7.1f}: {r['ratio']:.2f}x "
                  f"({'met' if r['ratio'] >= 1.5 else 'MISSED'} 1.5x), flex first call "
                  f"{r['flex_first_call_s']:.2f} s, rel {r['rel_ours_vs_flex']:.2e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    harness.precise_float32()
    import_attngen()
    print(f"attngen {attngen.__version__}, compiler {attngen.compiler_id()}, "
          f"library {attngen._library_path}")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"attngen arch {attngen.device_arch()}, cache {attngen.cache_dir()}", flush=True)
    print("== compile speed (the JIT on this machine)")
    compile_rows = compile_speed()
    print("== correctness (attngen.attention vs float32 reference)")
    checks = correctness(args.quick)
    print("== speed (bf16, attngen.attention vs SDPA)")
    bench = speed(args.quick)
    print("== FlexAttention (torch.compile) vs attngen.attention, bf16, N = 8k")
    flex_rows, flex_note = flex_comparison()
    stats = attngen.stats()
    # Flex and we must compute the same (bf16 both: twice the bf16 tolerance).
    flex_ok = all(r.get("rel_ours_vs_flex", 0.0) < 2 * harness.REL_TOL["bf16"] for r in flex_rows)
    ok = all(r["passed"] for r in checks) and flex_ok
    if args.json:
        harness.write_json(args.json, {
            "compile": compile_rows, "checks": checks, "bench": bench, "flex": flex_rows,
            "flex_note": flex_note, "stats": stats, "passed": ok,
            "tolerances": {"rel": harness.REL_TOL, "lse": harness.LSE_TOL}})
    print_summary(checks, compile_rows, bench, flex_rows, flex_note, stats)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
