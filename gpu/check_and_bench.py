#!/usr/bin/env python3
"""Correctness check and benchmark of attngen kernels on a GPU.

Usage (from the repository root, on the GPU machine):

    python3 gpu/check_and_bench.py --lib build-gpu/lib/libattnrt.so \
        --kernels DIR [--json OUT.json] [--quick] [--no-bench]

DIR holds pairs NAME.ptx + NAME.json (metadata, docs/ABI.md) produced by attngen.
Each kernel is loaded through libattnrt (ctypes on runtime/include/attnrt/attnrt.h)
and run on torch tensors in the ABI layout [B, N, H, D]:

* correctness: many shapes (ragged, GQA, strided views), fresh random inputs, O and
  LSE poisoned with NaN beforehand, compared with a float32 reference on the GPU
  (causal masks of both alignments, sliding windows, soft caps, read off the metadata);
* benchmark: the PEERS table shapes (B*N = 16384 tokens, H*D = 2048), ours against
  torch SDPA's FLASH_ATTENTION and CUDNN_ATTENTION backends on the same memory,
  plus one bf16 GEMM 8192^3 as the compute ceiling. A sliding-window kernel counts
  only its visible FLOPs (4 * D * the keys each row sees), has no SDPA peer, and is
  set beside the plain kernel of the same target, dtype and head dim at the same
  shape (the "window cost" table; issue 9's bar: >= 0.9x the plain kernel). A kernel
  whose name ends in _exp2emu<k>o8 (--exp2-emulate) is set beside the same kernel
  without emulation in the "exp2 emulation" table.

Each kernel runs in its own child process (unless --inprocess), so a kernel that
faults (which poisons its CUDA context) or hangs is reported and the others still
run. Exit status: 0 if every check passed, 1 otherwise, 2 for usage errors.
"""

import argparse
import functools
import glob
import math
import os
import re
import sys
import time
import traceback

import harness
from harness import fmt, print_table

# --------------------------------------------------------------------------------------
# Test shapes
# --------------------------------------------------------------------------------------

#: (nq, nk) pairs of the correctness sweep: 1-row, ragged tails, nq != nk both ways.
FULL_SHAPES = [(1, 1), (17, 17), (1000, 1000), (4097, 4097), (128, 4097), (1000, 333),
               (333, 1000), (64, 64), (4096, 4096)]
QUICK_SHAPES = [(1, 1), (17, 17), (1000, 333), (333, 1000), (4097, 4097)]
#: (nq, nk) pairs whose key count ends just past 1, 2 and 3 key blocks of 32, 48 or 64
#: rows: the K/V rings' prologue and last fills (sm_80 cp.async rings skip fills past
#: the last block but still commit their group) for every block width, nq != nk both
#: ways.
RING_SHAPES = [(130, 33), (33, 130), (97, 97), (200, 49), (49, 200), (65, 129), (129, 193)]
#: Extra (nq, nk) pairs for bottom-right causal kernels: decode-like (nq << nk, one row
#: sees every key), and nq > nk where whole query blocks (and, at (1000, 17), 983 of the
#: rows) see no key at all and must give O = 0, LSE = -inf.
BOTTOM_RIGHT_SHAPES = [(1, 4097), (17, 1000), (200, 201), (1000, 17), (4097, 128), (129, 1)]
QUICK_BOTTOM_RIGHT_SHAPES = [(1, 4097), (1000, 17), (129, 1)]
#: Extra (nq, nk) pairs for sliding-window kernels (either alignment): windows that end
#: before the keys start or start after they end (rows and whole query blocks that see
#: nothing, both ways: nq > nk and nq < nk), long rows over many blocks, ragged tails.
WINDOW_SHAPES = [(1, 4097), (17, 3000), (3000, 17), (2000, 3001), (3001, 2000), (4097, 128),
                 (129, 1), (1, 1)]
QUICK_WINDOW_SHAPES = [(1, 4097), (3000, 17), (2000, 3001), (129, 1)]


def correctness_cases(quick, bottom_right=False, window=False, softcap=False):
    """(B, H, Hkv, nq, nk, layout, with_lse) tuples; `bottom_right` adds the shapes that
    test a bottom-right aligned causal diagonal, `window` those of a sliding window,
    `softcap` the saturated scores of a soft cap (make_saturated_qk)."""
    cases = []
    if softcap:
        cases.append((2, 3, 3, 333, 1000, "saturated", True))
        cases.append((2, 4, 2, 1000, 777, "saturated", True))
    shapes = QUICK_SHAPES if quick else FULL_SHAPES
    if bottom_right:
        shapes = shapes + (QUICK_BOTTOM_RIGHT_SHAPES if quick else BOTTOM_RIGHT_SHAPES)
    if window:
        shapes = shapes + (QUICK_WINDOW_SHAPES if quick else WINDOW_SHAPES)
    combos = [(2, 3)] if quick else [(1, 1), (1, 3), (2, 1), (2, 3)]
    for nq, nk in shapes:
        for b, h in combos:
            cases.append((b, h, h, nq, nk, "contiguous", True))
    for nq, nk in RING_SHAPES:
        cases.append((2, 3, 3, nq, nk, "contiguous", True))
    # A ring's short tail through GQA and a strided view too.
    cases.append((2, 4, 2, 200, 49, "bhnd", True))
    # Grouped-query attention.
    gqa = [(1000, 1000), (333, 1000)] if quick else [(1000, 1000), (333, 1000), (4097, 4097), (17, 17)]
    for nq, nk in gqa:
        cases.append((2, 4, 2, nq, nk, "contiguous", True))
    # Strided views: Q/K/V/O made as (B, H, N, D) and viewed as (B, N, H, D); rows padded.
    cases.append((2, 3, 3, 1000, 333, "bhnd", True))
    cases.append((2, 4, 2, 333, 1000, "padded", True))
    if not quick:
        cases.append((1, 3, 3, 4097, 4097, "bhnd", True))
        cases.append((2, 3, 3, 17, 17, "padded", True))
    # LSE = NULL once.
    cases.append((2, 3, 3, 1000, 1000, "contiguous", False))
    if bottom_right or window:
        # GQA and a strided view with rows that see no key.
        cases.append((2, 4, 2, 1000, 17, "contiguous", True))
        cases.append((2, 3, 3, 1000, 333, "bhnd", False))
    if window:
        cases.append((2, 4, 1, 3001, 2000, "padded", True))
    return cases


def bench_n_list(args, window):
    """The sequence lengths to time: --bench-n, else the PEERS table's (None); a
    window kernel's default is N = 8k only (issue 9's rows beside the plain kernel)."""
    if args.bench_n:
        return [int(x) for x in args.bench_n.split(",")]
    return [8192] if window else None


# --------------------------------------------------------------------------------------
# One kernel
# --------------------------------------------------------------------------------------

def make_saturated_qk(q_shape, k_shape, dtype):
    """Q and K whose scores leave tanh's linear range: every key shares a positive
    direction, query rows 0, 3, 6, ... point against it (all their scores near -cap),
    rows 1, 4, 7, ... along it (all near +cap), the rest are 30x larger random scores.
    A softmax with a fixed max (attn-bounded-softmax) meets its extreme exponents here."""
    import torch
    k = torch.randn(k_shape, device="cuda") + 3.0
    q = 30.0 * torch.randn(q_shape, device="cuda")
    q[:, 0::3] = -20.0
    q[:, 1::3] = 20.0
    return q.to(dtype), k.to(dtype)


def causal_name(info):
    """How a kernel_info dict's mask reads: no, top-left or bottom-right."""
    if not info["causal"]:
        return "no"
    if info["causal_align"] == harness.ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT:
        return "bottom-right"
    return "top-left"


def log(name, text):
    print(f"[{name}] {text}", flush=True)


def case_problems(result):
    """What a judged correctness case got wrong, in words, for its log line."""
    problems = []
    if result["nan_in_o"]:
        problems.append(f"{result['nan_in_o']} NaN in O (elements never written?)")
    if not result["o_guard_intact"]:
        problems.append("O guard overwritten (stray writes)")
    if not result["empty_rows_zero"]:
        problems.append("O is not 0 on rows that see no key")
    if result["lse"] and result["nan_in_lse"]:
        problems.append(f"{result['nan_in_lse']} NaN in LSE")
    if result["lse"] and not result["lse_guard_intact"]:
        problems.append("LSE guard overwritten")
    if result["lse"] and not result["lse_ok"]:
        problems.append("LSE out of tolerance")
    if result["rel"] >= result["rel_tol"]:
        problems.append(f"rel {result['rel']:.2e} >= {result['rel_tol']:.0e}")
    return problems


def run_correctness_case(module, name, info, case):
    """One case: fresh random inputs in the case's layout, O and LSE filled with NaN
    inside SENTINEL guards, one launch, the verdict against the float32 reference.
    Never raises: an error is the case's result, marked fatal when it left the CUDA
    context unusable (the kernel's later cases cannot run then)."""
    import torch
    b, h, hkv, nq, nk, layout, with_lse = case
    dtype = harness.torch_dtype(info["dtype"])
    dname = harness.dtype_name(info["dtype"])
    d = info["head_dim"]
    label = f"B={b} H={h} Hkv={hkv} nq={nq} nk={nk} {layout}{'' if with_lse else ' lse=NULL'}"
    result = {"case": label, "B": b, "H": h, "Hkv": hkv, "nq": nq, "nk": nk, "layout": layout,
              "lse": with_lse, "passed": False}
    try:
        if layout == "saturated":
            q, k = make_saturated_qk((b, nq, h, d), (b, nk, hkv, d), dtype)
            layout = "contiguous"
        else:
            q = harness.make_input((b, nq, h, d), dtype, layout)
            k = harness.make_input((b, nk, hkv, d), dtype, layout)
        v = harness.make_input((b, nk, hkv, d), dtype, layout)
        o, o_guards = harness.poisoned_output((b, nq, h, d), dtype, layout)
        guards = {"o_guard_intact": o_guards}
        lse = None
        if with_lse:
            lse, guards["lse_guard_intact"] = harness.poisoned_output((b, h, nq), torch.float32)
        torch.cuda.synchronize()
        module.forward(q, k, v, o, lse)
        torch.cuda.synchronize()
        mask = info["mask"]
        ref_o, ref_lse = harness.reference(q, k, v, info["scale"], mask["causal"],
                                           mask["bottom_right"], mask["softcap"], mask["window"])
        # Rows that see no key (bottom-right causal with nq > nk, windows outside the
        # keys) must be exactly 0: judge counts them.
        verdict = harness.judge(o, lse, ref_o, ref_lse, dname, guards)
        result.update(rel=verdict["rel"], nan_in_o=verdict["nan"],
                      o_guard_intact=verdict["o_guard_intact"], rel_tol=harness.REL_TOL[dname],
                      empty_rows=verdict["empty_rows"], empty_rows_zero=verdict["empty_rows_zero"])
        if with_lse:
            result.update(lse_max_abs_err=verdict["lse_err"], nan_in_lse=verdict["nan_in_lse"],
                          lse_ok=verdict["lse_ok"], lse_guard_intact=verdict["lse_guard_intact"])
        result["passed"] = verdict["passed"]
        extra = f" lse_err={result['lse_max_abs_err']:.2e}" if with_lse else ""
        problems = case_problems(result)
        log(name, f"{'PASS' if result['passed'] else 'FAIL'} {label}: "
                  f"rel={result['rel']:.2e}{extra}"
            + (" -- " + "; ".join(problems) if problems else ""))
    except Exception as e:  # noqa: BLE001 -- reported, the sweep goes on
        result["error"] = f"{type(e).__name__}: {e}"
        log(name, f"FAIL {label}: {result['error']}")
        # A fault kills the CUDA context: later cases of this kernel cannot run.
        result["fatal"] = harness.is_fatal(e)
    return result


def run_correctness(module, name, info, quick):
    """The kernel's correctness sweep; raises FatalCudaError at the first case that
    left the CUDA context unusable."""
    import torch
    mask = info["mask"]
    results = []
    for case in correctness_cases(quick, mask["bottom_right"], harness.has_window(mask["window"]),
                                  mask["softcap"] > 0):
        case_result = run_correctness_case(module, name, info, case)
        results.append(case_result)
        if case_result.get("fatal"):
            cause = case_result["error"].splitlines()[0]
            raise harness.FatalCudaError(f"stopped at {case_result['case']}: {cause}")
        torch.cuda.empty_cache()
    return results


def run_api_checks(module, name, info):
    """Cheap calls that must be refused or be no-ops on a real GPU."""
    import torch
    results = []
    dtype = harness.torch_dtype(info["dtype"])
    d = info["head_dim"]

    def record(label, ok, detail):
        results.append({"case": label, "passed": ok, "detail": detail})
        log(name, f"{'PASS' if ok else 'FAIL'} {label}: {detail}")

    # nq == 0 launches nothing.
    q = torch.empty(2, 0, 3, d, dtype=dtype, device="cuda")
    kv = torch.randn(2, 5, 3, d, dtype=dtype, device="cuda")
    o = torch.empty(2, 0, 3, d, dtype=dtype, device="cuda")
    try:
        module.forward(q, kv, kv, o, None)
        torch.cuda.synchronize()
        record("api: nq == 0 is a no-op", True, "ATTNRT_OK")
    except Exception as e:  # noqa: BLE001
        record("api: nq == 0 is a no-op", False, str(e))
    # Host memory is refused by the pointer check.
    qh = torch.randn(1, 4, 1, d, dtype=dtype)
    kd = torch.randn(1, 4, 1, d, dtype=dtype, device="cuda")
    od = torch.empty(1, 4, 1, d, dtype=dtype, device="cuda")
    try:
        module.forward(qh, kd, kd, od, None)
        torch.cuda.synchronize()
        record("api: host pointer refused", False, "the runtime launched on host memory")
    except harness.AttnrtError as e:
        record("api: host pointer refused", e.status == harness.ATTNRT_ERROR_INVALID_ARGUMENT,
               str(e))
    # A stride that is not a multiple of 8 is refused before launch.
    buf = torch.randn(4 * (d + 4), dtype=dtype, device="cuda")
    qs = buf.as_strided((1, 4, 1, d), (4 * (d + 4), d + 4, d + 4, 1))  # q_stride_n = D + 4
    try:
        module.forward(qs, kd, kd, od, None)
        torch.cuda.synchronize()
        record("api: stride not a multiple of 8 refused", False, "launched")
    except harness.AttnrtError as e:
        record("api: stride not a multiple of 8 refused",
               e.status == harness.ATTNRT_ERROR_INVALID_ARGUMENT and "multiple of 8" in str(e),
               str(e))
    return results


def bench_row(module, info, row, args):
    """Fills one benchmark row: ours, then SDPA's flash and cuDNN backends on the same
    memory (transposed views) in the same run, and ours cross-checked against flash at
    bench size. A window counts the FLOPs of the keys its rows see and has no peer
    (SDPA's flash and cuDNN backends take no window; the window cost table sets it
    beside our plain kernel instead)."""
    import torch
    b, h, hkv, n, d = row["B"], row["H"], row["Hkv"], row["N"], row["D"]
    dtype = harness.torch_dtype(info["dtype"])
    dname = harness.dtype_name(info["dtype"])
    mask = info["mask"]
    causal = mask["causal"]
    window = harness.has_window(mask["window"])
    seen = (harness.visible_keys(n, n, causal, mask["bottom_right"], mask["window"])
            if window else None)
    row["visible_fraction"] = seen / (n * n) if window else (0.5 if causal else 1.0)
    q = torch.randn(b, n, h, d, dtype=dtype, device="cuda")
    k = torch.randn(b, n, hkv, d, dtype=dtype, device="cuda")
    v = torch.randn(b, n, hkv, d, dtype=dtype, device="cuda")
    o = torch.empty(b, n, h, d, dtype=dtype, device="cuda")
    lse = torch.empty(b, h, n, dtype=torch.float32, device="cuda")
    ours = module.launcher(module.rt.forward_args(q, k, v, o, lse))
    ms = harness.time_ms(ours, args.warmup, args.iters)
    row["ours_ms"] = ms
    row["ours_tflops"] = harness.tflops(harness.attention_flops(b, h, n, n, d, causal, seen), ms)
    for label in () if window else ("flash", "cudnn"):
        peer_out = harness.time_peer(
            row, label, functools.partial(harness.sdpa_call, label, q, k, v, causal, info["scale"]),
            args.warmup, args.iters, harness.attention_flops(b, h, n, n, d, causal))
        if label == "flash" and peer_out is not None and not info.get("softcap"):
            # Both in low precision: twice the tolerance (SDPA has no soft cap: not for
            # soft-capped kernels).
            ours()
            torch.cuda.synchronize()
            rel = harness.rel_error(o, peer_out.transpose(1, 2))
            row["crosscheck_rel_vs_flash"] = rel
            row["crosscheck_passed"] = (rel < 2 * harness.REL_TOL[dname]
                                        and not torch.isnan(o).any().item())


def bench_summary(row, window):
    """A benchmark row's log line."""
    parts = [f"ours {row['ours_tflops']:.1f} TFLOPS ({row['ours_ms']:.3f} ms)"]
    for label in () if window else ("flash", "cudnn"):
        if f"{label}_tflops" in row:
            parts.append(f"{label} {row[label + '_tflops']:.1f}")
        else:
            parts.append(f"{label} refused ({row.get(label + '_error', '?')[:80]})")
    if window:
        parts.append(f"visible FLOPs only ({100 * row['visible_fraction']:.1f}% of N^2)")
    if "crosscheck_rel_vs_flash" in row:
        parts.append(f"rel vs flash {row['crosscheck_rel_vs_flash']:.2e}")
    return "BENCH " + row["case"] + ": " + ", ".join(parts)


def run_bench(module, name, info, args):
    """The kernel's benchmark rows (PEERS shapes); a fault stops them (re-raised)."""
    import torch
    d = info["head_dim"]
    mask = info["mask"]
    window = harness.has_window(mask["window"])
    rows = []
    for b, h, hkv, n in harness.bench_shapes(d, bench_n_list(args, window), args.bench_gqa):
        heads = f"H={h}" if hkv == h else f"H={h}/{hkv}"
        label = " causal" if mask["causal"] else ""
        if window:
            label += " window=({},{})".format(*mask["window"])
        row = {"B": b, "H": h, "Hkv": hkv, "N": n, "D": d, "causal": mask["causal"],
               "window": list(mask["window"]), "case": f"B={b} {heads} N={n} D={d}{label}"}
        try:
            bench_row(module, info, row, args)
            log(name, bench_summary(row, window))
        except Exception as e:  # noqa: BLE001
            row["error"] = f"{type(e).__name__}: {e}"
            log(name, f"BENCH {row['case']}: error {row['error']}")
            if harness.is_fatal(e):
                rows.append(row)
                raise
        rows.append(row)
        torch.cuda.empty_cache()
    return rows


def load_kernel(args, result, ptx_path, json_path):
    """The kernel's Module and its info dict (kernel_info's members and its mask,
    which the reference follows). A kernel for another GPU is marked skipped."""
    rt = harness.Runtime(args.lib)
    try:
        module = rt.load(ptx_path, json_path)
    except harness.AttnrtError as e:
        if e.status == harness.ATTNRT_ERROR_UNSUPPORTED_DEVICE:
            result["skipped"] = True
        raise
    info = harness.struct_dict(module.info)
    info["mask"] = harness.kernel_mask(info)
    return module, info


def describe_kernel(info):
    """The "loaded:" log line of a kernel."""
    mask = info["mask"]
    window = "({},{})".format(*mask["window"]) if harness.has_window(mask["window"]) else "none"
    return (f"loaded: {info['arch']} {harness.dtype_name(info['dtype'])} "
            f"d={info['head_dim']} causal={causal_name(info)} "
            f"window={window} "
            f"align={'bottom-right' if mask['bottom_right'] else 'top-left'} "
            f"softcap={info['softcap']} block_m={info['block_m']} "
            f"threads={info['num_threads']} smem={info['smem_bytes']} tma={info['uses_tma']} "
            f"regs={info['num_regs']} local(spill)={info['local_bytes']}B "
            f"on device {info['device']} (cc {info['cc_major']}.{info['cc_minor']})")


def run_kernel(args, name, ptx_path, json_path):
    """Everything for one kernel; returns its result dict (never raises)."""
    result = {"name": name, "ptx": ptx_path, "json": json_path, "cases": [], "api_checks": [],
              "bench": [], "error": None, "skipped": False}
    try:
        import torch

        harness.precise_float32()  # float32 reference in full precision
        torch.manual_seed(args.seed)
        torch.zeros(1, device="cuda")  # make the primary context current first
        module, info = load_kernel(args, result, ptx_path, json_path)
        result["info"] = info
        log(name, describe_kernel(info))
        expected_scale = 1.0 / math.sqrt(info["head_dim"])
        if abs(info["scale"] - expected_scale) > 1e-6 * expected_scale:
            log(name, f"note: metadata scale {info['scale']} != 1/sqrt(D) = {expected_scale}; "
                      "the reference uses the metadata's")
        try:
            result["cases"] = run_correctness(module, name, info, args.quick)
            result["api_checks"] = run_api_checks(module, name, info)
            if not args.no_bench:
                result["bench"] = run_bench(module, name, info, args)
        finally:
            module.unload()
    except Exception as e:  # noqa: BLE001 -- reported, other kernels go on
        result["error"] = f"{type(e).__name__}: {e}"
        log(name, ("SKIP" if result["skipped"] else "ERROR") + f": {result['error']}")
        if not isinstance(e, (harness.AttnrtError, harness.FatalCudaError)):
            traceback.print_exc()
    return result


# --------------------------------------------------------------------------------------
# Driver: one child process per kernel
# --------------------------------------------------------------------------------------

def find_kernels(directory):
    pairs = []
    for json_path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        stem = json_path[: -len(".json")]
        if os.path.exists(stem + ".ptx"):
            pairs.append((os.path.basename(stem), stem + ".ptx", json_path))
    return pairs


def run_child(args, name):
    """Runs this script for one kernel in a fresh process; returns its result."""
    cmd = [sys.executable, os.path.abspath(__file__), "--lib", args.lib, "--kernels", args.kernels,
           "--only", name, "--seed", str(args.seed),
           "--warmup", str(args.warmup), "--iters", str(args.iters)]
    if args.quick:
        cmd.append("--quick")
    if args.no_bench:
        cmd.append("--no-bench")
    if args.bench_n:
        cmd += ["--bench-n", args.bench_n]
    if args.bench_gqa:
        cmd.append("--bench-gqa")
    result, error = harness.run_child_for_json(cmd, args.timeout, "--child-json")
    if result is None:
        result = {"name": name, "cases": [], "api_checks": [], "bench": [], "skipped": False,
                  "error": error}
        print(f"[{name}] ERROR: {result['error']}", flush=True)
    elif error:
        result["error"] = result.get("error") or error
    return result


def measure_gemm(args):
    """bf16 GEMM 8192^3 through torch.matmul: the practical compute ceiling."""
    try:
        import torch

        a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
        b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
        ms = harness.time_ms(lambda: torch.matmul(a, b), args.warmup, args.iters)
        tflops = harness.tflops(2.0 * 8192 ** 3, ms)
        print(f"[gemm] bf16 8192^3: {tflops:.1f} TFLOPS ({ms:.3f} ms)", flush=True)
        return {"ms": ms, "tflops": tflops}
    except Exception as e:  # noqa: BLE001
        print(f"[gemm] error: {e}", flush=True)
        return {"error": str(e)}


def kernel_passed(r):
    if r.get("skipped"):
        return True
    if r.get("error"):
        return False
    checks = r.get("cases", []) + r.get("api_checks", [])
    bench_ok = all(b.get("crosscheck_passed", True) for b in r.get("bench", []))
    return bool(checks) and all(c.get("passed") for c in checks) and bench_ok


def print_tables(results, gemm):
    print("\n=== Benchmark (TFLOPS; causal counts half the FLOPs) ===")
    if gemm and "tflops" in gemm:
        print(f"bf16 GEMM 8192^3 ceiling: {gemm['tflops']:.1f} TFLOPS")
    header = ["kernel", "case", "ours", "flash", "cudnn", "ours/flash", "ours/cudnn"]
    rows = []
    for r in results:
        for b in r.get("bench", []):
            ours, fl, cu = b.get("ours_tflops"), b.get("flash_tflops"), b.get("cudnn_tflops")
            rows.append([r["name"], b["case"], fmt(ours), fmt(fl), fmt(cu),
                         fmt(ours / fl, ".2f") if ours and fl else "-",
                         fmt(ours / cu, ".2f") if ours and cu else "-"])
    print_table(header, rows)
    print_window_costs(results)
    print_exp2_emulation(results)
    print("\n=== Correctness ===")
    header = ["kernel", "passed", "failed", "worst rel", "worst lse err", "status"]
    rows = []
    for r in results:
        checks = r.get("cases", []) + r.get("api_checks", [])
        passed = sum(1 for c in checks if c.get("passed"))
        worst = harness.worst_rel(c["rel"] for c in r.get("cases", [])
                                  if isinstance(c.get("rel"), float))
        lses = [c["lse_max_abs_err"] for c in r.get("cases", [])
                if isinstance(c.get("lse_max_abs_err"), float)]
        bench_bad = sum(1 for b in r.get("bench", []) if not b.get("crosscheck_passed", True))
        status = "skipped" if r.get("skipped") else ("ok" if kernel_passed(r) else "FAILED")
        if r.get("error"):
            status += ": " + r["error"][:100]
        elif bench_bad:
            status += f" ({bench_bad} bench cross-checks off)"
        rows.append([r["name"], str(passed), str(len(checks) - passed),
                     fmt(worst, ".2e") if worst is not None else "-",
                     fmt(max(lses), ".2e") if lses else "-", status])
    print_table(header, rows)


#: The sliding-window part of a kernel name: _window_l<L>_r<R> (inf for an unbounded
#: side), and _tl when top-left aligned.
WINDOW_NAME = re.compile(r"_window_l(\d+|inf)_r(\d+|inf)(_tl)?")


def window_costs(results):
    """Rows (kernel, case, window TFLOPS, plain TFLOPS, ratio) pairing each window
    kernel's bench rows with the plain kernel of the same name less the window
    (same target, dtype, head dim, schedule) at the same (B, H, N): issue 9's bar is
    ratio >= 0.9 (a window costs at most 10% per visible FLOP)."""
    plain = {}
    for r in results:
        kernel = r.get("info", {}).get("kernel", "")
        if kernel and not WINDOW_NAME.search(kernel):
            for b in r.get("bench", []):
                plain[(kernel, b["B"], b["H"], b["N"])] = b.get("ours_tflops")
    rows = []
    for r in results:
        kernel = r.get("info", {}).get("kernel", "")
        if not WINDOW_NAME.search(kernel):
            continue
        base = WINDOW_NAME.sub("", kernel)
        for b in r.get("bench", []):
            ours, ref = b.get("ours_tflops"), plain.get((base, b["B"], b["H"], b["N"]))
            rows.append([r["name"], b["case"], ours, base, ref,
                         ours / ref if ours and ref else None])
    return rows


def print_window_costs(results):
    rows = window_costs(results)
    if not rows:
        return
    print("\n=== Window cost (visible FLOPs; bar: window/plain >= 0.9) ===")
    header = ["kernel", "case", "window", "plain kernel", "plain", "window/plain", "bar"]
    print_table(header, [[k, c, fmt(w), p, fmt(pl) if pl else "(not in this run)",
                          fmt(x, ".2f") if x else "-",
                          ("met" if x >= 0.9 else "MISSED") if x else "-"]
                         for k, c, w, p, pl, x in rows])


#: The exp2-emulation part of a kernel name: _exp2emu<k>o8 (k eighths of the score
#: exponentials on the FMA pipe, --exp2-emulate).
EXP2EMU_NAME = re.compile(r"_exp2emu(\d+)o8")
#: The soft-cap part of a kernel name: _softcap<c> ('.' spelled 'p').
SOFTCAP_NAME = re.compile(r"_softcap[0-9pm]+")


def exp2_emulation_costs(results):
    """Rows (kernel, case, eighths, TFLOPS, base kernel, base TFLOPS, ratio, cuDNN)
    pairing each _exp2emu<k>o8 kernel's bench rows with the kernel of the same name
    less the suffix (the MUFU-only kernel) at the same (B, H, N): the gain (or loss)
    of moving k/8 of the exponentials to the FMA pipe, measured in one run."""
    base_tflops = {}
    for r in results:
        kernel = r.get("info", {}).get("kernel", "")
        if kernel and not EXP2EMU_NAME.search(kernel):
            for b in r.get("bench", []):
                base_tflops[(kernel, b["B"], b["H"], b["N"])] = b.get("ours_tflops")
    rows = []
    for r in results:
        kernel = r.get("info", {}).get("kernel", "")
        match = EXP2EMU_NAME.search(kernel)
        if not match:
            continue
        base = EXP2EMU_NAME.sub("", kernel)
        for b in r.get("bench", []):
            ours, ref = b.get("ours_tflops"), base_tflops.get((base, b["B"], b["H"], b["N"]))
            # A soft-capped kernel also against the plain kernel (no cap, no
            # emulation): the soft cap's bar is >= 0.9x of it.
            plain = (base_tflops.get((SOFTCAP_NAME.sub("", base), b["B"], b["H"], b["N"]))
                     if SOFTCAP_NAME.search(base) else None)
            rows.append([r["name"], b["case"], int(match.group(1)), ours, base, ref,
                         ours / ref if ours and ref else None, b.get("cudnn_tflops"),
                         ours / plain if ours and plain else None])
    return rows


def print_exp2_emulation(results):
    rows = exp2_emulation_costs(results)
    if not rows:
        return
    print("\n=== exp2 emulation (k/8 of the score exponentials on the FMA pipe) ===")
    header = ["kernel", "case", "emulated", "TFLOPS", "MUFU-only kernel", "MUFU-only",
              "emulated/MUFU-only", "cudnn", "emulated/cudnn", "softcap/plain (bar 0.9)"]
    print_table(header, [[k, c, f"{e}/8", fmt(t), base, fmt(ref) if ref else "(not in this run)",
                          fmt(x, ".3f") if x else "-", fmt(cu),
                          fmt(t / cu, ".2f") if t and cu else "-",
                          (fmt(p, ".2f") + (" met" if p >= 0.9 else " MISSED")) if p else "-"]
                         for k, c, e, t, base, ref, x, cu, p in rows])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", required=True, help="path of libattnrt.so")
    parser.add_argument("--kernels", required=True, help="directory of NAME.ptx + NAME.json pairs")
    parser.add_argument("--json", help="write all results to this JSON file")
    parser.add_argument("--quick", action="store_true", help="fewer correctness shapes")
    parser.add_argument("--no-bench", action="store_true", help="skip the benchmark")
    parser.add_argument("--bench-n", help="comma-separated sequence lengths to benchmark "
                                          "(default: PEERS table)")
    parser.add_argument("--bench-gqa", action="store_true",
                        help="also time d128 kernels on 64 query heads over 8 KV heads (N = 8k)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls before timing")
    parser.add_argument("--iters", type=int, default=30, help="timed calls (median reported)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=int, default=300, help="seconds per kernel (child)")
    parser.add_argument("--inprocess", action="store_true",
                        help="run every kernel in this process (a faulting kernel stops the rest)")
    parser.add_argument("--only", help=argparse.SUPPRESS)
    parser.add_argument("--child-json", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if not os.path.exists(args.lib):
        print(f"error: --lib {args.lib} does not exist", file=sys.stderr)
        return 2
    kernels = find_kernels(args.kernels)
    if args.only:
        kernels = [k for k in kernels if k[0] == args.only]
    if not kernels:
        print(f"error: no NAME.ptx + NAME.json pairs in {args.kernels}", file=sys.stderr)
        return 2

    if args.child_json:  # child: one kernel
        result = run_kernel(args, *kernels[0])
        harness.write_json(args.child_json, result)
        return 0 if kernel_passed(result) else 1

    started = time.time()
    print(f"attngen check_and_bench: {len(kernels)} kernel(s) in {args.kernels}, lib {args.lib}",
          flush=True)
    results = []
    for name, ptx, js in kernels:
        if args.inprocess:
            results.append(run_kernel(args, name, ptx, js))
        else:
            results.append(run_child(args, name))
    gemm = measure_gemm(args) if not args.no_bench else None
    env = harness.environment()
    print_tables(results, gemm)
    ok = all(kernel_passed(r) for r in results)
    summary = {"passed": ok, "environment": env, "gemm_bf16_8192": gemm, "kernels": results,
               "quick": args.quick, "seconds": time.time() - started,
               "tolerances": {"rel": harness.REL_TOL, "lse": harness.LSE_TOL}}
    if args.json:
        harness.write_json(args.json, summary)
        print(f"\nresults written to {args.json}")
    print(f"\n{'ALL PASSED' if ok else 'SOME CHECKS FAILED'} in {time.time() - started:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
