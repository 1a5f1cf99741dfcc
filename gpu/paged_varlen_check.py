#!/usr/bin/env python3
"""attngen.attention_varlen over a paged KV cache (flash_attn_varlen_func with a
block_table, as chunked-prefill servers call it) on a GPU: correctness over
ragged batches, then speed against the same tokens packed, in one run.

    ATTNGEN_LIBRARY=.../libattngen.so PYTHONPATH=python:gpu \
        python3 gpu/paged_varlen_check.py [--cases N] [--no-bench] [--json OUT]
    ATTNGEN_ARCH=sm_80 python3 gpu/paged_varlen_check.py --no-bench   # sm_80 kernels
    compute-sanitizer --tool memcheck python3 gpu/paged_varlen_check.py --sanitize

* Correctness: random batches of 1-9 sequences whose query and key lengths
  are no tile multiples (some 0, Nq > Nk and Nq < Nk), head dims 64, 96, 128
  and 256 (one value head dim of its own), GQA, bf16 and f16, no mask,
  causal bottom-right, sliding windows, soft caps and ALiBi, pages of 16,
  48, 64 and 256 rows. Pages are handed out in a random order; every cache row
  no sequence owns holds NaN, and a block table's columns past a sequence's
  pages name NaN pages (or pages outside the cache), so a read past a
  sequence's keys shows. The reference is float32 over each sequence's keys
  gathered from its pages (gpu/harness.py's), judged on the kernel's launch
  into NaN-poisoned outputs with guards on both sides; attention_varlen's own
  result must equal it, and the packed kernel's on the same keys must agree
  to within rounding.
* A paged call captured in a CUDA graph and replayed on new queries, under
  torch.compile(fullgraph=True), and through the flash_attn drop-in.
* Speed (bf16, H 32 / Hkv 8, d128; chunked prefill: 16 sequences each with a
  chunk of queries over a cache of keys): the paged kernel against the packed
  varlen kernel on the same keys (the bar: within 5%), the old gather-then-pack
  path, and torch's flash varlen on the packed keys; check_seqlens=False while
  timing. Prints a short table last; exit status 0 when every check passed.
"""

import argparse
import math
import random
import sys

import harness

PAGE_SIZES = (16, 48, 64, 256)
HEAD_DIMS = ((64, 64), (96, 96), (128, 128), (256, 256), (192, 128))


def make_case(rng, index):
    """One random case: lengths, head dims, mask, page size, dtype."""
    batch = rng.randint(1, 9)
    lengths_q = [rng.choice((0, 1, 7, 63, 65, 127, 200, 333)) for _ in range(batch)]
    lengths_k = [rng.choice((0, 1, 17, 64, 100, 255, 513, 700)) for _ in range(batch)]
    d, dv = HEAD_DIMS[index % len(HEAD_DIMS)]
    mask = rng.choice(("none", "causal", "window", "softcap", "alibi"))
    return dict(lengths_q=lengths_q, lengths_k=lengths_k, d=d, dv=dv,
                heads=rng.choice((4, 8)), kv_heads=rng.choice((1, 2, 4)),
                page=PAGE_SIZES[index % len(PAGE_SIZES)], mask=mask,
                dtype=rng.choice(("bf16", "f16")))


def build_cache(torch, case, device):
    """(k pages, v pages, block table, packed k, packed v): each sequence's keys
    in pages handed out in a random order, NaN in every row nobody owns, the
    table's spare columns naming NaN pages or pages past the cache."""
    dtype = torch.bfloat16 if case["dtype"] == "bf16" else torch.float16
    page, lengths = case["page"], case["lengths_k"]
    used = [math.ceil(n / page) for n in lengths]
    max_blocks = max(used + [1]) + 1
    spare = 3  # NaN pages nobody owns
    num_blocks = sum(used) + spare
    hkv, d, dv = case["kv_heads"], case["d"], case["dv"]
    k_pages = torch.full((num_blocks, page, hkv, d), float("nan"), dtype=dtype, device=device)
    v_pages = torch.full((num_blocks, page, hkv, dv), float("nan"), dtype=dtype, device=device)
    order = list(range(num_blocks))
    random.Random(sum(lengths) + page).shuffle(order)
    table = torch.empty(len(lengths), max_blocks, dtype=torch.int32)
    packed_k, packed_v, next_page = [], [], 0
    for b, n in enumerate(lengths):
        keys = torch.randn(n, hkv, d, dtype=dtype, device=device)
        values = torch.randn(n, hkv, dv, dtype=dtype, device=device)
        packed_k.append(keys)
        packed_v.append(values)
        for j in range(max_blocks):
            if j < used[b]:
                p = order[next_page]
                next_page += 1
                rows = slice(j * page, min(n, (j + 1) * page))
                count = rows.stop - rows.start
                k_pages[p, :count] = keys[rows]
                v_pages[p, :count] = values[rows]
                table[b, j] = p
            else:
                # Unused columns: a NaN page, or one outside the cache.
                table[b, j] = order[-1 - (j % spare)] if (b + j) % 3 else num_blocks + 5
    return (k_pages, v_pages, table.to(device), torch.cat(packed_k), torch.cat(packed_v))


def mask_arguments(case, heads, device, torch):
    """attention_varlen's mask keywords and the reference's."""
    kwargs, ref = {}, dict(causal=False, bottom_right=True, softcap=0.0,
                           window=harness.NO_WINDOW)
    if case["mask"] == "causal":
        kwargs["causal"] = True
        ref["causal"] = True
    elif case["mask"] == "window":
        kwargs["window_size"] = (90, 30)
        ref["window"] = (90, 30)
    elif case["mask"] == "softcap":
        kwargs.update(causal=True, softcap=30.0)
        ref.update(causal=True, softcap=30.0)
    elif case["mask"] == "alibi":
        kwargs["alibi_slopes"] = torch.rand(heads, device=device) * 0.1
    return kwargs, ref


def alibi_reference(q, k, v, case, scale, slopes, torch):
    """ALiBi's reference per sequence: bias -slope |i + Nk - Nq - j| (flash_attn's,
    bottom-right), no mask."""
    out = torch.zeros((*q.shape[:-1], v.shape[-1]), dtype=torch.float32, device=q.device)
    lse = torch.full((q.shape[1], q.shape[0]), float("-inf"), device=q.device)
    cq, ck = harness.cu_seqlens(case["lengths_q"]), harness.cu_seqlens(case["lengths_k"])
    group = q.shape[1] // k.shape[1]
    for b, (nq, nk) in enumerate(zip(case["lengths_q"], case["lengths_k"])):
        if nq == 0 or nk == 0:
            continue
        qs = q[cq[b]:cq[b + 1]].float().transpose(0, 1)
        ks = k[ck[b]:ck[b + 1]].float().repeat_interleave(group, 1).transpose(0, 1)
        vs = v[ck[b]:ck[b + 1]].float().repeat_interleave(group, 1).transpose(0, 1)
        i = torch.arange(nq, device=q.device)[:, None]
        j = torch.arange(nk, device=q.device)[None, :]
        bias = -slopes.float()[:, None, None] * (i + nk - nq - j).abs()[None]
        s = qs @ ks.transpose(1, 2) * scale + bias
        lse[:, cq[b]:cq[b + 1]] = torch.logsumexp(s, -1)
        out[cq[b]:cq[b + 1]] = (torch.softmax(s, -1) @ vs).transpose(0, 1)
    return out, lse


def check_case(attngen, torch, case, device):
    """(passed, a one-line description) for one case."""
    heads = case["heads"]
    heads -= heads % case["kv_heads"]
    dtype = torch.bfloat16 if case["dtype"] == "bf16" else torch.float16
    total_q = sum(case["lengths_q"])
    q = torch.randn(total_q, heads, case["d"], dtype=dtype, device=device)
    k_pages, v_pages, table, k, v = build_cache(torch, case, device)
    cu_q = torch.tensor(harness.cu_seqlens(case["lengths_q"]), dtype=torch.int32, device=device)
    cu_k = torch.tensor(harness.cu_seqlens(case["lengths_k"]), dtype=torch.int32, device=device)
    max_q, max_k = max(case["lengths_q"]), max(case["lengths_k"])
    kwargs, ref_kw = mask_arguments(case, heads, device, torch)
    scale = 1 / math.sqrt(case["d"])
    dname = case["dtype"]
    out_spec = ((total_q, heads, case["dv"]), dtype)
    lse_spec = ((heads, total_q), torch.float32)
    out, lse, poisoned = harness.call_into_poisoned_blocks(
        lambda: attngen.attention_varlen(q, k_pages, v_pages, cu_q, cu_k, max_q, max_k,
                                         return_lse=True, block_table=table, **kwargs),
        out_spec, lse_spec)
    # The same kernel into outputs of this script's own: NaN-poisoned, with
    # guards on both sides (a write past the outputs shows).
    own_out, out_guards = harness.poisoned_output(out_spec[0], dtype)
    own_lse, lse_guards = harness.poisoned_output(lse_spec[0], torch.float32)
    window = kwargs.get("window_size", (-1, -1))
    from attngen import _torch_varlen
    _torch_varlen._launch(q, k_pages, v_pages, cu_q, cu_k, max_q, max_k, own_out, own_lse,
                          kwargs.get("causal", False), 0.0, "bottom-right",
                          kwargs.get("softcap", 0.0), window[0], window[1],
                          kwargs.get("alibi_slopes"), table)
    packed_out, packed_lse = attngen.attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k,
                                                      return_lse=True, **kwargs)
    if case["mask"] == "alibi":
        ref, ref_lse = alibi_reference(q, k, v, case, scale, kwargs["alibi_slopes"], torch)
    else:
        ref, ref_lse = harness.varlen_reference(q, k, v, case["lengths_q"], case["lengths_k"],
                                                scale, **ref_kw)
    verdict = harness.judge(own_out, own_lse, ref, ref_lse, dname,
                            guards={"out_guards": out_guards, "lse_guards": lse_guards})
    # The API's result is the same kernel's; the same keys packed give the
    # same math up to the order of the key blocks.
    api_same = (torch.equal(out.nan_to_num(7.0), own_out.nan_to_num(7.0)) and
                torch.equal(lse.nan_to_num(7.0), own_lse.nan_to_num(7.0)))
    same = harness.rel_error(out, packed_out) < harness.REL_TOL[dname]
    passed = verdict["passed"] and same and api_same
    what = (f"{dname} d{case['d']}" + (f"v{case['dv']}" if case["dv"] != case["d"] else "") +
            f" h{heads}/{case['kv_heads']} page{case['page']} {case['mask']:7s} "
            f"q{case['lengths_q']} k{case['lengths_k']}")
    lse_err = "-" if verdict["lse_err"] is None else f"{verdict['lse_err']:.1e}"
    detail = (f"rel {verdict['rel']:.2e} lse {lse_err} nan {verdict['nan']} guards "
              f"{'ok' if verdict.get('out_guards') and verdict.get('lse_guards') else 'HIT'}"
              f" api {'same' if api_same else 'DIFFERS'} vs packed "
              f"{'ok' if same else 'DIFFERS'}"
              f"{'' if poisoned else ' (api outputs not in poisoned blocks)'}")
    return passed, what, detail


def graphs_and_compile(attngen, torch, device):
    """One paged call captured in a CUDA graph and replayed on new queries,
    the same call under torch.compile(fullgraph=True), and the flash_attn
    drop-in's flash_attn_varlen_func with the block table: each against the
    float32 reference. Returns the number of failures."""
    from attngen.flash_attn_interface import flash_attn_varlen_func
    case = dict(lengths_q=[100, 1, 257], lengths_k=[900, 64, 300], d=128, dv=128, heads=8,
                kv_heads=2, page=64, mask="causal", dtype="bf16")
    k_pages, v_pages, table, k, v = build_cache(torch, case, device)
    cu_q = torch.tensor(harness.cu_seqlens(case["lengths_q"]), dtype=torch.int32, device=device)
    cu_k = torch.tensor(harness.cu_seqlens(case["lengths_k"]), dtype=torch.int32, device=device)

    def call(x):
        return attngen.attention_varlen(x, k_pages, v_pages, cu_q, cu_k, 257, 900, causal=True,
                                        check_seqlens=False, block_table=table)

    failures = 0
    for label in ("cuda graph", "torch.compile", "flash_attn_varlen_func"):
        try:
            x = torch.randn(sum(case["lengths_q"]), 8, 128, dtype=torch.bfloat16, device=device)
            if label == "cuda graph":
                static_x = torch.zeros_like(x)
                call(static_x)  # compile and load outside the capture
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    out = call(static_x)
                static_x.copy_(x)
                graph.replay()
            elif label == "torch.compile":
                out = torch.compile(call, fullgraph=True)(x)
            else:
                out = flash_attn_varlen_func(x, k_pages, v_pages, cu_q, cu_k, 257, 900,
                                             causal=True, block_table=table)
            torch.cuda.synchronize()
            ref, _ = harness.varlen_reference(x, k, v, case["lengths_q"], case["lengths_k"],
                                              1 / math.sqrt(128), causal=True, bottom_right=True)
            rel = harness.rel_error(out, ref)
            ok = rel < harness.REL_TOL["bf16"] and not torch.isnan(out).any().item()
            detail = f"rel {rel:.2e}"
        except Exception as e:  # noqa: BLE001 -- a failure to report
            ok, detail = False, harness.short_error(e)
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {label}: {detail}", flush=True)
    return failures


def bench(attngen, torch, device, rows):
    """Chunked prefill: 16 sequences, each a chunk of `chunk` queries after
    `cached` keys already in the cache (causal bottom-right)."""
    h, hkv, d = 32, 8, 128
    for chunk, cached, page in ((512, 3584, 256), (512, 3584, 16), (2048, 2048, 256),
                                (128, 8064, 64)):
        b = 16
        nk = cached + chunk
        lengths_q, lengths_k = [chunk] * b, [nk] * b
        q = torch.randn(b * chunk, h, d, dtype=torch.bfloat16, device=device)
        k = torch.randn(b * nk, hkv, d, dtype=torch.bfloat16, device=device)
        v = torch.randn_like(k)
        per_seq = math.ceil(nk / page)
        k_pages = torch.randn(b * per_seq + 1, page, hkv, d, dtype=torch.bfloat16, device=device)
        v_pages = torch.randn_like(k_pages)
        order = torch.randperm(b * per_seq, device=device).to(torch.int32)
        table = order.view(b, per_seq)
        cu_q = torch.tensor(harness.cu_seqlens(lengths_q), dtype=torch.int32, device=device)
        cu_k = torch.tensor(harness.cu_seqlens(lengths_k), dtype=torch.int32, device=device)
        # Causal bottom-right: query i of a chunk sees cached + i + 1 keys.
        flops = b * 4 * h * d * (chunk * cached + chunk * (chunk + 1) // 2)
        calls = {
            "paged": lambda: attngen.attention_varlen(
                q, k_pages, v_pages, cu_q, cu_k, chunk, nk, causal=True, check_seqlens=False,
                block_table=table),
            "packed": lambda: attngen.attention_varlen(
                q, k, v, cu_q, cu_k, chunk, nk, causal=True, check_seqlens=False),
            # What flash_attn_varlen_func with a block_table did before: gather
            # the pages into packed k and v, then the packed kernel.
            "gather+packed": lambda: attngen.attention_varlen(
                q, k_pages[table.long()].flatten(1, 2).flatten(0, 1)[:b * nk],
                v_pages[table.long()].flatten(1, 2).flatten(0, 1)[:b * nk], cu_q, cu_k,
                chunk, nk, causal=True, check_seqlens=False),
        }
        if page * per_seq != nk:
            del calls["gather+packed"]  # the sketch above assumes whole pages
        row = dict(shape=f"B{b} q{chunk} k{nk} page{page}")
        for name, call in calls.items():
            ms, why = harness.try_time(call, 10, 50)
            row[name] = harness.tflops(flops, ms) if ms else None
            if why:
                print(f"{row['shape']} {name}: {why}", flush=True)
        flash = getattr(torch.ops.aten, "_flash_attention_forward", None)
        if flash is not None:
            def torch_flash():
                return flash(q, k.repeat_interleave(h // hkv, 1),
                             v.repeat_interleave(h // hkv, 1), cu_q, cu_k, chunk, nk, 0.0,
                             True, False, scale=1 / math.sqrt(d))
            ms, why = harness.try_time(torch_flash, 10, 50)
            row["torch flash (packed, MHA)"] = harness.tflops(flops, ms) if ms else None
            if why:
                print(f"{row['shape']} torch flash: {why}", flush=True)
        rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--no-bench", action="store_true")
    parser.add_argument("--sanitize", action="store_true",
                        help="a few small cases, no timing (under compute-sanitizer)")
    parser.add_argument("--json")
    args = parser.parse_args()
    import torch
    import attngen
    device = "cuda"
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    cases = args.cases if not args.sanitize else 6
    failures = 0
    results = []
    for index in range(cases):
        case = make_case(rng, index)
        try:
            passed, what, detail = check_case(attngen, torch, case, device)
        except Exception as e:  # a failure to report, not to stop at
            passed, what, detail = False, str(case), harness.short_error(e)
        failures += not passed
        results.append(dict(case=case, passed=passed, detail=detail))
        print(f"{'ok  ' if passed else 'FAIL'} {what}: {detail}", flush=True)
    print(f"paged varlen correctness: {cases - failures}/{cases} passed", flush=True)
    if not args.sanitize:
        failures += graphs_and_compile(attngen, torch, device)
    rows = []
    if not args.no_bench and not args.sanitize:
        harness.warm_up_gpu()
        rows = bench(attngen, torch, device, rows)
        names = ["paged", "packed", "gather+packed", "torch flash (packed, MHA)"]
        table = [[r["shape"]] + [harness.fmt(r.get(n)) for n in names] +
                 [harness.fmt(r["paged"] / r["packed"] if r.get("paged") and r.get("packed")
                              else None, ".2f")] for r in rows]
        harness.print_table(["TFLOPS (bf16 d128 H32/8 causal)"] + names + ["paged/packed"],
                            table)
    if args.json:
        harness.write_json(args.json, dict(environment=harness.environment(),
                                           cases=results, bench=rows))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
