#!/usr/bin/env python3
"""attngen.attention_with_kvcache on a GPU: correctness over decoding cases and
the decode benchmark against torch SDPA (cuDNN and flash), through the Python
API with the JIT compiling on the GPU machine.

    ATTNGEN_LIBRARY=.../libattngen.so PYTHONPATH=python \\
        python3 gpu/decode_check.py [--quick] [--json OUT.json] [--no-bench]
        [--timeout SECONDS]

Every correctness case, the graph/compile check and every benchmark shape
runs in a child process of its own under --timeout (default 300 s): a kernel
that hangs fails its case ("timed out") instead of the run.

* Correctness: contiguous and paged caches (pages of 16, 64 and 256 rows,
  shuffled, some pages unused), GQA 32/8, 4/1 and MHA, head dims
  40/64/96/128/192/256, strided views of q and of the caches,
  bf16 and f16, causal (bottom-right to each sequence's keys) or not,
  soft caps, Nq of 1, 3 and 17, cache_seqlens varying per sequence
  (including 0, 1 and the full capacity), num_splits auto, 1, 3 and more
  splits than key blocks (splits with no key), with and without LSE. The
  cache rows past each sequence's keys hold NaN; the outputs' memory is
  filled with NaN before the call (the caching allocator hands the same
  blocks back; the script checks it did). Reference: float32 per sequence.
  Pass: rel Frobenius error < 1e-2 (bf16) / 3e-3 (f16), no NaN, rows with no
  key exactly 0 with LSE -inf, |LSE - ref| < 2e-2 * max(1, |ref|).
* CUDA graphs (a captured call replayed on new inputs) and torch.compile
  (fullgraph) on one paged split case.
* Benchmark (bf16, d128): decode B=64, Nq=1, Nk=8192, H=32, Hkv=8 with a
  contiguous and a paged (64-row pages) cache, and B=1 (split-KV) at 8k and
  32k, against SDPA's cuDNN and flash backends on contiguous caches of the
  same shape (GQA through enable_gqa, or repeated heads where a backend has
  none). Prints ms, TFLOPS (4 B H Nq Nk D / t) and HBM GB/s (the K and V bytes
  of the cache / t).
Exit status 0 when every check passed.
"""

import argparse
import math
import os
import sys
import tempfile

import torch

import harness

#: The package, imported by main() (the pure-Python parts, which
#: gpu/check_reference.py checks on the CPU, need only torch).
attngen = None

#: H200 HBM3e peak (TB/s), for the share of peak the benchmark prints.
PEAK_TBPS = 4.8


def strided_view(t, pad):
    """t as a view with wider rows (`pad` spare head-dim columns, NaN) in a
    larger buffer: the same values at strides that are not t's own."""
    wide = torch.full((*t.shape[:-1], t.shape[-1] + pad), float("nan"), dtype=t.dtype,
                      device=t.device)
    wide[..., :t.shape[-1]] = t
    return wide[..., :t.shape[-1]]


def make_cache(b, capacity, hkv, d, dtype, lengths, page_size, seed, device="cuda",
               strided=False):
    """(k_cache, v_cache, block_table or None, per-sequence keys and values).
    Rows past a sequence's length hold NaN; a paged cache's pages are
    shuffled, with spare pages (NaN) between the used ones. strided: the
    caches are views with 8 spare NaN columns per row."""
    g = torch.Generator(device=device).manual_seed(seed)
    keys = [torch.randn(n, hkv, d, device=device, dtype=dtype, generator=g) for n in lengths]
    values = [torch.randn(n, hkv, d, device=device, dtype=dtype, generator=g) for n in lengths]
    nan = float("nan")
    view = (lambda t: strided_view(t, 8)) if strided else (lambda t: t)
    if not page_size:
        kc = torch.full((b, capacity, hkv, d), nan, device=device, dtype=dtype)
        vc = torch.full((b, capacity, hkv, d), nan, device=device, dtype=dtype)
        for i, n in enumerate(lengths):
            kc[i, :n], vc[i, :n] = keys[i], values[i]
        return view(kc), view(vc), None, keys, values
    max_blocks = capacity // page_size
    num_blocks = b * max_blocks + 7
    order = torch.randperm(num_blocks, generator=torch.Generator().manual_seed(seed))
    table = order[:b * max_blocks].reshape(b, max_blocks).to(torch.int32).to(device)
    kc = torch.full((num_blocks, page_size, hkv, d), nan, device=device, dtype=dtype)
    vc = torch.full((num_blocks, page_size, hkv, d), nan, device=device, dtype=dtype)
    for i, n in enumerate(lengths):
        for j in range(math.ceil(n / page_size)):
            rows = slice(j * page_size, min(n, (j + 1) * page_size))
            page = int(table[i, j])
            kc[page, :rows.stop - rows.start] = keys[i][rows]
            vc[page, :rows.stop - rows.start] = values[i][rows]
        # Unused entries of the table may hold anything.
        table[i, math.ceil(n / page_size):] = -1
    return view(kc), view(vc), table, keys, values


def cases(quick):
    """(B, Nq, H, Hkv, D, capacity, page_size, lengths, num_splits, strided)."""
    full = [
        (3, 1, 32, 8, 128, 1024, 0, [1000, 0, 1], 0),
        (3, 1, 32, 8, 128, 1024, 64, [777, 1024, 0], 0),
        (2, 1, 32, 8, 128, 4096, 16, [4095, 33], 0),
        (2, 3, 4, 1, 128, 512, 256, [300, 3], 3),
        (2, 17, 2, 2, 64, 640, 0, [17, 640], 1),
        (1, 1, 8, 8, 256, 512, 64, [511], 7),
        (2, 1, 32, 8, 128, 256, 0, [200, 255], 64),   # more splits than key blocks
        (4, 1, 16, 2, 64, 2048, 128, [2048, 1, 0, 1500], 0),
        (1, 17, 8, 2, 128, 96, 48, [90], 0),           # pages of 48: 96-row blocks
        (3, 1, 32, 8, 96, 1024, 64, [1000, 0, 129], 0),  # d96: 64-byte swizzle panels
        (2, 2, 8, 2, 40, 640, 32, [639, 2], 3),        # d40: 32-byte panels, padded tiles
        (2, 1, 16, 4, 192, 768, 0, [700, 65], 0),      # d192
        (2, 1, 32, 8, 128, 1024, 0, [1000, 77], 0),   # strided q and caches
        (2, 3, 8, 2, 64, 512, 64, [300, 3], 2),        # strided, paged
    ]
    strided = {len(full) - 2, len(full) - 1}
    rows = [c + (i in strided,) for i, c in enumerate(full)]
    return rows[:4] if quick else rows


VARIANTS = [(False, 0.0), (True, 0.0), (True, 30.0)]   # (causal, softcap)


def correctness_row(ci, case, dtype, dname, causal, softcap):
    """One correctness row: a case in one dtype and variant, into poisoned outputs,
    judged against the float32 reference per sequence."""
    b, nq, h, hkv, d, cap, page, lengths, splits, strided = case
    torch.manual_seed(ci)
    q = torch.randn(b, nq, h, d, device="cuda", dtype=dtype)
    if softcap:
        q = q * 4
    if strided:
        q = strided_view(q, 16)
    kc, vc, table, keys, values = make_cache(b, cap, hkv, d, dtype, lengths, page,
                                             seed=ci, strided=strided)
    lengths_t = torch.tensor(lengths, dtype=torch.int32, device="cuda")
    with_lse = (ci + int(causal)) % 2 == 0
    kwargs = dict(causal=causal, softcap=softcap, num_splits=splits)
    row = dict(case=ci, b=b, nq=nq, h=h, hkv=hkv, d=d, capacity=cap, page=page,
               lengths=lengths, num_splits=splits, dtype=dname, causal=causal,
               softcap=softcap, lse=with_lse, strided=strided)
    try:
        out, lse, reused = harness.call_into_poisoned_blocks(
            lambda: attngen.attention_with_kvcache(q, kc, vc, cache_seqlens=lengths_t,
                                                   block_table=table, return_lse=with_lse,
                                                   **kwargs),
            ((b, nq, h, d), q.dtype), ((b, h, nq), torch.float32) if with_lse else None)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - report and go on
        row.update(passed=False, error=f"{type(e).__name__}: {e}")
        return row
    ref, ref_lse = harness.kvcache_reference(q, keys, values, 1 / math.sqrt(d), causal, softcap)
    verdict = harness.judge(out, lse, ref, ref_lse, dname)
    if with_lse:
        row["lse_err"] = verdict["lse_err"]
    row.update(rel=verdict["rel"], nan=verdict["nan"], empty_rows=verdict["empty_rows"],
               empty_rows_zero=verdict["empty_rows_zero"], poison_reused=reused,
               passed=verdict["passed"])
    return row


def correctness_case(ci, case):
    """The rows of one case (every dtype and variant)."""
    results = []
    for dtype, dname in ((torch.bfloat16, "bf16"), (torch.float16, "f16")):
        for causal, softcap in VARIANTS:
            row = correctness_row(ci, case, dtype, dname, causal, softcap)
            results.append(row)
            if "error" in row:
                print(f"  FAIL {row}", flush=True)
            elif not row["passed"] or not row["poison_reused"]:
                print(f"  {'FAIL' if not row['passed'] else 'note'}: {row}", flush=True)
    return results


def graphs_and_compile():
    """A paged split call captured in a CUDA graph and replayed on new
    inputs, and the same call under torch.compile(fullgraph=True)."""
    rows = []
    b, nq, h, hkv, d, cap, page = 2, 1, 32, 8, 128, 2048, 64
    lengths = [2000, 5]
    q = torch.randn(b, nq, h, d, device="cuda", dtype=torch.bfloat16)
    kc, vc, table, keys, values = make_cache(b, cap, hkv, d, torch.bfloat16, lengths, page, 7)
    lengths_t = torch.tensor(lengths, dtype=torch.int32, device="cuda")

    def call(x):
        return attngen.attention_with_kvcache(x, kc, vc, cache_seqlens=lengths_t,
                                              block_table=table, causal=True, num_splits=4)

    for label in ("cuda graph", "torch.compile"):
        try:
            if label == "cuda graph":
                static_q = q.clone()
                call(static_q)  # compile + load outside the capture
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    static_out = call(static_q)
                static_q.copy_(torch.randn_like(q))
                graph.replay()
                torch.cuda.synchronize()
                out, x = static_out, static_q
            else:
                compiled = torch.compile(call, fullgraph=True)
                x = torch.randn_like(q)
                out = compiled(x)
                torch.cuda.synchronize()
            ref, _ = harness.kvcache_reference(x, keys, values, 1 / math.sqrt(d), True)
            rel = harness.rel_error(out, ref)
            ok = rel < harness.REL_TOL["bf16"]
            rows.append(dict(what=label, rel=rel, passed=ok))
        except Exception as e:  # noqa: BLE001
            rows.append(dict(what=label, passed=False, error=f"{type(e).__name__}: {e}"))
        print(f"  {label}: {rows[-1]}", flush=True)
    return rows


def sdpa_peer(q, k, v, backend):
    """SDPA on (B, H, N, D) views, GQA through enable_gqa where the backend
    takes it, else with the key/value heads repeated (said in the result)."""
    try:
        run = harness.sdpa_call(backend, q, k, v)
        run()
        return run, "enable_gqa"
    except (RuntimeError, TypeError):
        run = harness.sdpa_call(backend, q, k, v, repeat_heads=True)
        run()
        return run, "repeated heads"


#: The decode benchmark shapes (B, Nq, Nk, H, Hkv, page_size), bf16 d128:
#: the decode bar's row (contiguous and paged) first, then B=1 split-KV rows.
BENCH_SHAPES = [(64, 1, 8192, 32, 8, 0), (64, 1, 8192, 32, 8, 64), (1, 1, 8192, 32, 8, 0),
                (1, 1, 32768, 32, 8, 64)]


def bench_shapes(quick):
    return BENCH_SHAPES[:2] if quick else BENCH_SHAPES


def paged_copy(k, v, page):
    """(k_cache, v_cache, block_table): the keys and values [B, N, Hkv, D] in
    shuffled pages of `page` rows."""
    b, nk, hkv, d = k.shape
    blocks = nk // page
    perm = torch.randperm(b * blocks, device="cuda")
    table = perm.reshape(b, blocks).to(torch.int32)
    kc = torch.empty(b * blocks, page, hkv, d, device="cuda", dtype=k.dtype)
    vc = torch.empty_like(kc)
    kc[perm.long()] = k.reshape(b * blocks, page, hkv, d)
    vc[perm.long()] = v.reshape(b * blocks, page, hkv, d)
    return kc, vc, table


def bench_shape(shape, warmup=10, iters=50):
    """One benchmark row: ours (auto splits and one split) against SDPA's
    cuDNN and flash backends on contiguous K/V of the same shape, in the same
    run; ms, TFLOPS and HBM GB/s (the cache's K and V bytes / time) of each."""
    b, nq, nk, h, hkv, page = shape
    d = 128
    torch.manual_seed(3)
    q = torch.randn(b, nq, h, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, nk, hkv, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, nk, hkv, d, device="cuda", dtype=torch.bfloat16)
    lengths = torch.full((b,), nk, dtype=torch.int32, device="cuda")
    kc, vc, table = paged_copy(k, v, page) if page else (k, v, None)
    kv_bytes = harness.kv_bytes(b, nk, hkv, d)
    row = dict(b=b, nq=nq, nk=nk, h=h, hkv=hkv, d=d, page=page, kv_bytes=kv_bytes)

    def ours(splits=0):
        return attngen.attention_with_kvcache(q, kc, vc, cache_seqlens=lengths,
                                              block_table=table, num_splits=splits)

    for label, splits in (("ours", 0), ("ours_nosplit", 1)):
        ours(splits)
        row[f"{label}_ms"] = harness.time_ms(lambda: ours(splits), warmup, iters)
    ref = None
    for label in ("cudnn", "flash"):
        try:
            run, how = sdpa_peer(q, k, v, label)
            row[f"{label}_ms"] = harness.time_ms(run, warmup, iters)
            row[f"{label}_gqa"] = how
            if ref is None:
                ref = run().transpose(1, 2)
        except RuntimeError as e:
            row[f"{label}_error"] = str(e).splitlines()[0][:200]
    if ref is not None:
        row["rel_vs_peer"] = harness.rel_error(ours(), ref)
    flops = harness.attention_flops(b, h, nq, nk, d)
    for key in [k_ for k_ in row if k_.endswith("_ms")]:
        name = key[:-3]
        row[f"{name}_tflops"] = harness.tflops(flops, row[key])
        row[f"{name}_gbps"] = harness.gbps(kv_bytes, row[key])
    peers = [row[f"{p}_ms"] for p in ("cudnn", "flash") if f"{p}_ms" in row]
    row["vs_best_peer"] = min(peers) / row["ours_ms"] if peers else float("nan")
    print(f"  B={b} Nk={nk} page={page}: ours {row['ours_ms']:.3f} ms "
          f"({row['ours_gbps']:.0f} GB/s, {row['ours_gbps'] / PEAK_TBPS / 10:.0f}% of peak), "
          f"cudnn {row.get('cudnn_ms', float('nan')):.3f}, "
          f"flash {row.get('flash_ms', float('nan')):.3f} ms; "
          f"vs best peer {row['vs_best_peer']:.2f}x", flush=True)
    # The benchmarked output is checked too (against the first peer's).
    row["passed"] = ref is None or row["rel_vs_peer"] < harness.REL_TOL["bf16"]
    return row


def row_line(r):
    if "error" in r:
        return f"bench shape {r['index']}: FAILED: {r['error']}"
    case = f"B{r['b']} Nk{r['nk']} {'page' + str(r['page']) if r['page'] else 'contig'}"
    return (f"{case:<26} {r['ours_ms']:8.3f} {r['ours_gbps']:6.0f} "
            f"{r['ours_gbps'] / PEAK_TBPS / 10:5.0f}% {r['ours_tflops']:7.2f} "
            f"{r['ours_nosplit_ms']:8.3f} {r.get('cudnn_ms', float('nan')):7.3f} "
            f"{r.get('cudnn_gbps', float('nan')):6.0f} {r.get('flash_ms', float('nan')):7.3f} "
            f"{r.get('flash_gbps', float('nan')):6.0f} {r['vs_best_peer']:6.2f}x")


def run_child(args, what, index):
    """Runs `what` (correctness case / graphs / bench shape) `index` in a
    child process under the timeout; returns its JSON rows (a failed row when
    it crashed or timed out)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", what, str(index)] + (
        ["--quick"] if args.quick else [])
    rows, error = harness.run_child_for_json(cmd, args.timeout, "--child-out")
    if error is not None:
        rows = [dict(what=what, index=index, passed=False, error=error)]
        print(f"  FAIL {what} {index}: {error}", flush=True)
    return rows


def child(what, index, quick):
    """The child's work: the rows of one correctness case, the graph/compile
    check or one benchmark shape."""
    if what == "case":
        return correctness_case(index, cases(quick)[index])
    if what == "graphs":
        return graphs_and_compile()
    if what == "bench":
        return [bench_shape(bench_shapes(quick)[index])]
    raise ValueError(f"unknown child work {what!r}")


def main():
    global attngen
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-bench", action="store_true")
    parser.add_argument("--timeout", type=int, default=300,
                        help="seconds per child (a correctness case, a benchmark shape)")
    parser.add_argument("--child", nargs=2, metavar=("WHAT", "INDEX"), help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    harness.precise_float32()
    if "ATTNGEN_CACHE_DIR" not in os.environ:  # the children inherit the parent's
        os.environ["ATTNGEN_CACHE_DIR"] = tempfile.mkdtemp(prefix="attngen-decode-")
    import attngen as package
    attngen = package
    if args.child:
        rows = child(args.child[0], int(args.child[1]), args.quick)
        harness.write_json(args.child_out, rows)
        return 0 if all(r.get("passed", True) for r in rows) else 1
    print(f"attngen {attngen.__version__}, {torch.cuda.get_device_name()}, torch "
          f"{torch.__version__}, arch {attngen.device_arch()}", flush=True)
    print("== correctness (attention_with_kvcache vs float32 reference)", flush=True)
    checks = []
    for ci in range(len(cases(args.quick))):
        checks += run_child(args, "case", ci)
    print(f"  correctness: {sum(r['passed'] for r in checks)}/{len(checks)} passed", flush=True)
    print("== CUDA graphs and torch.compile", flush=True)
    checks += run_child(args, "graphs", 0)
    rows = []
    if not args.no_bench:
        print("== decode benchmark (bf16, d128)", flush=True)
        for i in range(len(bench_shapes(args.quick))):
            rows += run_child(args, "bench", i)
    ok = all(r["passed"] for r in checks + rows)
    if args.json:
        harness.write_json(args.json, {"checks": checks, "bench": rows, "passed": ok})
    print("\n== summary")
    print(f"correctness: {sum(r['passed'] for r in checks)}/{len(checks)} passed")
    print(f"{'case':<26} {'ours ms':>8} {'GB/s':>6} {'peak':>6} {'TFLOPS':>7} "
          f"{'no split':>8} {'cudnn':>7} {'GB/s':>6} {'flash':>7} {'GB/s':>6} {'vs best':>7}")
    for r in rows:
        print(row_line(r))
    print(f"decode_check: {'all checks passed' if ok else 'SOME CHECKS FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
