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
import json
import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_and_bench as cb  # noqa: E402  (tolerances, timing)

os.environ.setdefault("ATTNGEN_CACHE_DIR", tempfile.mkdtemp(prefix="attngen-decode-"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

#: The package, imported by main() (the pure-Python parts, which
#: gpu/check_reference.py checks on the CPU, need only torch).
attngen = None

#: H200 HBM3e peak (TB/s), for the share of peak the benchmark prints.
PEAK_TBPS = 4.8


def reference(q, k_seqs, v_seqs, scale, causal, softcap):
    """float32 attention of q [B, Nq, H, D] over per-sequence keys k_seqs[b]
    [L_b, Hkv, D]; causal bottom-right to L_b. Rows that see no key: out 0,
    lse -inf."""
    b, nq, h, d = q.shape
    outs, lses = [], []
    for i in range(b):
        kb, vb = k_seqs[i].float(), v_seqs[i].float()
        length = kb.shape[0]
        group = h // kb.shape[1]
        qf = q[i].float().transpose(0, 1)                       # [H, Nq, D]
        kf = kb.repeat_interleave(group, dim=1).transpose(0, 1)  # [H, L, D]
        vf = vb.repeat_interleave(group, dim=1).transpose(0, 1)
        s = torch.matmul(qf, kf.transpose(-1, -2)) * scale      # [H, Nq, L]
        if softcap:
            s = softcap * torch.tanh(s / softcap)
        if causal:
            rows = torch.arange(nq, device=q.device)[:, None]
            cols = torch.arange(length, device=q.device)[None, :]
            s = s.masked_fill(cols > rows + length - nq, float("-inf"))
        lse = torch.logsumexp(s, dim=-1) if length else torch.full(
            (h, nq), float("-inf"), device=q.device)
        finite = torch.where(torch.isinf(lse), 0.0, lse)
        p = torch.exp(s - finite[..., None]) if length else s
        out = torch.matmul(p, vf) if length else torch.zeros(h, nq, d, device=q.device)
        outs.append(out.transpose(0, 1))
        lses.append(lse)
    return torch.stack(outs), torch.stack(lses)


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


def poisoned_call(q, kc, vc, lengths_t, table, kwargs, with_lse):
    b, nq, h, d = q.shape
    bait = torch.full((b, nq, h, d), float("nan"), dtype=q.dtype, device="cuda")
    bait_lse = torch.full((b, h, nq) if with_lse else (0,), float("nan"), device="cuda")
    ptrs = (bait.data_ptr(), bait_lse.data_ptr())
    del bait, bait_lse
    result = attngen.attention_with_kvcache(q, kc, vc, cache_seqlens=lengths_t,
                                            block_table=table, return_lse=with_lse, **kwargs)
    out, lse = result if with_lse else (result, None)
    reused = out.data_ptr() == ptrs[0] and (lse is None or lse.data_ptr() == ptrs[1])
    return out, lse, reused


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


def correctness_case(ci, case):
    """The rows of one case (every dtype and variant)."""
    b, nq, h, hkv, d, cap, page, lengths, splits, strided = case
    results = []
    for dtype, dname in ((torch.bfloat16, "bf16"), (torch.float16, "f16")):
        for causal, softcap in VARIANTS:
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
                out, lse, reused = poisoned_call(q, kc, vc, lengths_t, table, kwargs,
                                                 with_lse)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - report and go on
                row.update(passed=False, error=f"{type(e).__name__}: {e}")
                results.append(row)
                print(f"  FAIL {row}", flush=True)
                continue
            ref, ref_lse = reference(q, keys, values, 1 / math.sqrt(d), causal, softcap)
            rel = cb.rel_error(torch, out, ref) if ref.abs().sum() > 0 else float(
                out.abs().max())
            nan = int(torch.isnan(out).sum())
            empty = torch.isinf(ref_lse).permute(0, 2, 1)
            empty_zero = bool((out[empty] == 0).all())
            ok = nan == 0 and math.isfinite(rel) and rel < cb.REL_TOL[dname] and empty_zero
            if with_lse:
                err, bound = cb.lse_error(torch, lse, ref_lse)
                row["lse_err"] = float(err.max())
                ok = ok and bool((err <= bound).all())
            row.update(rel=rel, nan=nan, empty_rows=int(empty.sum()),
                       empty_rows_zero=empty_zero, poison_reused=reused, passed=ok)
            results.append(row)
            if not ok or not reused:
                print(f"  {'FAIL' if not ok else 'note'}: {row}", flush=True)
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
            ref, _ = reference(x, keys, values, 1 / math.sqrt(d), True, 0.0)
            rel = cb.rel_error(torch, out, ref)
            ok = rel < cb.REL_TOL["bf16"]
            rows.append(dict(what=label, rel=rel, passed=ok))
        except Exception as e:  # noqa: BLE001
            rows.append(dict(what=label, passed=False, error=f"{type(e).__name__}: {e}"))
        print(f"  {label}: {rows[-1]}", flush=True)
    return rows


def sdpa_peer(q, k, v, backend):
    """SDPA on (B, H, N, D) views, GQA through enable_gqa where the backend
    takes it, else with the key/value heads repeated (said in the result)."""
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    group = q.shape[2] // k.shape[2]
    try:
        with sdpa_kernel(backend):
            F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)

        def run():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
        return run, "enable_gqa"
    except (RuntimeError, TypeError):
        kr = kt.repeat_interleave(group, dim=1)
        vr = vt.repeat_interleave(group, dim=1)

        def run():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qt, kr, vr)
        run()
        return run, "repeated heads"


#: The decode benchmark shapes (B, Nq, Nk, H, Hkv, page_size), bf16 d128:
#: the decode bar's row (contiguous and paged) first, then B=1 split-KV rows.
BENCH_SHAPES = [(64, 1, 8192, 32, 8, 0), (64, 1, 8192, 32, 8, 64), (1, 1, 8192, 32, 8, 0),
                (1, 1, 32768, 32, 8, 64)]


def bench_shapes(quick):
    return BENCH_SHAPES[:2] if quick else BENCH_SHAPES


def bench_shape(shape, warmup=10, iters=50):
    """One benchmark row: ours (auto splits and one split) against SDPA's
    cuDNN and flash backends on contiguous K/V of the same shape."""
    b, nq, nk, h, hkv, page = shape
    d = 128
    torch.manual_seed(3)
    q = torch.randn(b, nq, h, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, nk, hkv, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, nk, hkv, d, device="cuda", dtype=torch.bfloat16)
    lengths = torch.full((b,), nk, dtype=torch.int32, device="cuda")
    if page:
        # The same keys in shuffled pages.
        blocks = nk // page
        perm = torch.randperm(b * blocks, device="cuda")
        table = perm.reshape(b, blocks).to(torch.int32)
        kc = torch.empty(b * blocks, page, hkv, d, device="cuda", dtype=torch.bfloat16)
        vc = torch.empty_like(kc)
        kc[perm.long()] = k.reshape(b * blocks, page, hkv, d)
        vc[perm.long()] = v.reshape(b * blocks, page, hkv, d)
    else:
        kc, vc, table = k, v, None
    kv_bytes = 2 * b * nk * hkv * d * 2
    row = dict(b=b, nq=nq, nk=nk, h=h, hkv=hkv, d=d, page=page, kv_bytes=kv_bytes)

    def ours(splits=0):
        return attngen.attention_with_kvcache(q, kc, vc, cache_seqlens=lengths,
                                              block_table=table, num_splits=splits)

    for label, splits in (("ours", 0), ("ours_nosplit", 1)):
        ours(splits)
        ms = cb.time_ms(torch, lambda: ours(splits), warmup, iters)
        row[f"{label}_ms"] = ms
    ref = None
    for label, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                           ("flash", SDPBackend.FLASH_ATTENTION)):
        try:
            run, how = sdpa_peer(q, k, v, backend)
            row[f"{label}_ms"] = cb.time_ms(torch, run, warmup, iters)
            row[f"{label}_gqa"] = how
            if ref is None:
                ref = run().transpose(1, 2)
        except RuntimeError as e:
            row[f"{label}_error"] = str(e).splitlines()[0][:200]
    if ref is not None:
        row["rel_vs_peer"] = cb.rel_error(torch, ours(), ref)
    for key in [k_ for k_ in row if k_.endswith("_ms")]:
        name = key[:-3]
        row[f"{name}_tflops"] = 4.0 * b * h * nq * nk * d / (row[key] * 1e-3) / 1e12
        row[f"{name}_gbps"] = kv_bytes / (row[key] * 1e-3) / 1e9
    peers = [row[f"{p}_ms"] for p in ("cudnn", "flash") if f"{p}_ms" in row]
    row["vs_best_peer"] = min(peers) / row["ours_ms"] if peers else float("nan")
    print(f"  B={b} Nk={nk} page={page}: ours {row['ours_ms']:.3f} ms "
          f"({row['ours_gbps']:.0f} GB/s, {row['ours_gbps'] / PEAK_TBPS / 10:.0f}% of peak), "
          f"cudnn {row.get('cudnn_ms', float('nan')):.3f}, "
          f"flash {row.get('flash_ms', float('nan')):.3f} ms; "
          f"vs best peer {row['vs_best_peer']:.2f}x", flush=True)
    # The benchmarked output is checked too (against the first peer's).
    row["passed"] = ref is None or row["rel_vs_peer"] < cb.REL_TOL["bf16"]
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
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    cmd = [sys.executable, os.path.abspath(__file__), "--child", what, str(index), "--child-out",
           path] + (["--quick"] if args.quick else [])
    error = cb.run_child_process(cmd, args.timeout)
    rows = []
    if error is None:
        try:
            with open(path) as f:
                rows = json.load(f)
        except (OSError, ValueError) as e:
            error = f"no result from the child ({e})"
    os.unlink(path)
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
    import attngen as package
    attngen = package
    if args.child:
        rows = child(args.child[0], int(args.child[1]), args.quick)
        with open(args.child_out, "w") as f:
            json.dump(rows, f)
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
        with open(args.json, "w") as f:
            json.dump({"checks": checks, "bench": rows, "passed": ok}, f, indent=1)
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
