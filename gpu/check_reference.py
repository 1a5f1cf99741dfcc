#!/usr/bin/env python3
"""Checks the GPU scripts' pure-Python parts on the CPU, against brute force:
the visibility rule (`check_and_bench.visible`: causal masks of both alignments,
sliding windows), the visible-key count the window TFLOPS use, the float32
reference (O = 0 and LSE = -inf on rows that see no key) and, where
torch.nn.attention.flex_attention exists, that python_check.py's block masks
and soft-cap score_mod compute what attngen computes; and decode_check.py's
parts: its per-sequence float32 reference (bottom-right causal to each
sequence's length, lengths 0 and 1, GQA, soft caps) against brute force, the
paged and strided caches it builds (every sequence's keys found again through
the block table, NaN past the lengths), its case list and benchmark shapes.

    python3 gpu/check_reference.py        # needs torch (the CPU build is enough)

Exit status 0 when every check passed; 2 without torch.
"""

import itertools
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_and_bench as cb  # noqa: E402

#: The masks: (causal, bottom_right, (left, right)), every kind the kernels have.
MASKS = [(False, False, (-1, -1)), (True, False, (-1, -1)), (True, True, (-1, -1)),
         (True, True, (3, -1)), (False, True, (3, 0)), (False, False, (2, 1)),
         (False, True, (0, 0)), (False, True, (-1, 2)), (False, False, (4, -1)),
         (True, False, (0, 0)), (False, True, (7, 7))]
#: Lengths with Nq != Nk both ways, so that some rows see no key.
LENGTHS = [(1, 1), (1, 9), (9, 1), (5, 12), (12, 5), (8, 8)]

failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print(f"FAIL {what}", flush=True)


def brute_visible(i, j, nq, nk, causal, bottom_right, window):
    """The rule from docs/ABI.md, one pair at a time."""
    d = i + (nk - nq if bottom_right else 0)
    left, right = window
    return (0 <= j < nk and (not causal or j <= d) and (right < 0 or j <= d + right)
            and (left < 0 or j >= d - left))


def brute_reference(q, k, v, scale, causal, bottom_right, softcap, window):
    """O and LSE in float64 Python, one query row at a time (B = 1, one head)."""
    nq, nk, d = len(q), len(k), len(q[0])
    out, lse = [], []
    for i in range(nq):
        scores = []
        for j in range(nk):
            if brute_visible(i, j, nq, nk, causal, bottom_right, window):
                s = scale * sum(q[i][t] * k[j][t] for t in range(d))
                if softcap:
                    s = softcap * math.tanh(s / softcap)
                scores.append((j, s))
        if not scores:
            out.append([0.0] * d)
            lse.append(-math.inf)
            continue
        m = max(s for _, s in scores)
        total = sum(math.exp(s - m) for _, s in scores)
        out.append([sum(math.exp(s - m) * v[j][t] for j, s in scores) / total
                    for t in range(d)])
        lse.append(m + math.log(total))
    return out, lse


def test_visible(torch):
    for (nq, nk), (causal, br, window) in itertools.product(LENGTHS, MASKS):
        rows = torch.arange(nq)[:, None]
        cols = torch.arange(nk)[None, :]
        mask = cb.visible(rows, cols, nq, nk, causal, br, window)
        want = [[brute_visible(i, j, nq, nk, causal, br, window) for j in range(nk)]
                for i in range(nq)]
        check(mask.tolist() == want, f"visible nq={nq} nk={nk} causal={causal} br={br} "
                                     f"window={window}")
        check(cb.visible_keys(nq, nk, causal, br, window) == sum(map(sum, want)),
              f"visible_keys nq={nq} nk={nk} causal={causal} br={br} window={window}")
    # The speed rows' counts: N = 8k, (1024, 0) and (1024, 1024).
    n = 8192
    check(cb.visible_keys(n, n, False, True, (1024, 0)) == sum(min(i, 1024) + 1 for i in range(n)),
          "visible_keys of the (1024, 0) speed row")
    check(cb.visible_keys(n, n, False, True, (1024, 1024))
          == sum(min(n - 1, i + 1024) - max(0, i - 1024) + 1 for i in range(n)),
          "visible_keys of the (1024, 1024) speed row")
    check(cb.visible_keys(n, n, True, False, (-1, -1)) == n * (n + 1) // 2,
          "visible_keys of a causal square")


def test_reference(torch):
    torch.manual_seed(0)
    for (nq, nk), (causal, br, window), softcap in itertools.product(
            LENGTHS, MASKS, (0.0, 2.0)):
        d = 4
        q = torch.randn(1, nq, 1, d, dtype=torch.float32)
        k = torch.randn(1, nk, 1, d, dtype=torch.float32)
        v = torch.randn(1, nk, 1, d, dtype=torch.float32)
        scale = 0.7
        out, lse = cb.reference(torch, q, k, v, scale, causal, br, softcap, window)
        want_o, want_lse = brute_reference(q[0, :, 0].tolist(), k[0, :, 0].tolist(),
                                           v[0, :, 0].tolist(), scale, causal, br, softcap,
                                           window)
        label = f"reference nq={nq} nk={nk} causal={causal} br={br} window={window} cap={softcap}"
        got_o = out[0, :, 0].tolist()
        got_lse = lse[0, 0].tolist()
        for i in range(nq):
            if math.isinf(want_lse[i]):
                check(got_lse[i] == -math.inf and all(x == 0 for x in got_o[i]),
                      f"{label}: row {i} sees no key, want O = 0, LSE = -inf; got "
                      f"{got_o[i]}, {got_lse[i]}")
            else:
                check(abs(got_lse[i] - want_lse[i]) < 1e-4
                      and all(abs(a - b) < 1e-4 for a, b in zip(got_o[i], want_o[i])),
                      f"{label}: row {i}")
        # The check's rule for such rows (lse_error): -inf must be matched exactly.
        err, bound = cb.lse_error(torch, lse, lse)
        check(bool((err <= bound).all()), f"{label}: lse_error accepts the reference itself")


def test_flex(torch):
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except Exception as e:  # noqa: BLE001
        print(f"skip flex: {type(e).__name__}: {e}")
        return
    sys.argv = sys.argv[:1]
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "python_check_masks", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                           "python_check.py"))
    source = open(spec.origin).read()
    # Only the mask helper: python_check.py imports attngen and needs a GPU.
    start = source.index("def flex_masks(")
    end = source.index("\ndef flex_comparison(")
    namespace = {}
    exec(compile(source[start:end], spec.origin, "exec"), namespace)  # noqa: S102
    flex_masks = namespace["flex_masks"]
    torch.manual_seed(1)
    n, d, h = 256, 16, 2
    for window, causal, softcap in (((40, 0), False, 0.0), ((40, 40), False, 0.0),
                                    ((-1, -1), True, 30.0), ((-1, -1), False, 30.0),
                                    ((130, 0), False, 0.0)):
        q, k, v = (torch.randn(1, h, n, d) for _ in range(3))
        mask_mod = flex_masks(window, causal, n)
        kwargs = {}
        if mask_mod is not None:
            kwargs["block_mask"] = create_block_mask(mask_mod, None, None, n, n, device="cpu")
        if softcap:
            kwargs["score_mod"] = lambda s, b, hh, qi, ki: softcap * torch.tanh(s / softcap)
        got = flex_attention(q, k, v, **kwargs)
        ref, _ = cb.reference(torch, q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                              1 / math.sqrt(d), causal, True, softcap, window)
        rel = cb.rel_error(torch, got.transpose(1, 2), ref)
        check(rel < 1e-4, f"flex window={window} causal={causal} softcap={softcap}: rel {rel:.2e}")


def test_exp2_emulation_table():
    """The exp2-emulation table pairs _exp2emu<k>o8 kernels with their MUFU-only kernel
    and soft-capped ones with the plain kernel, at the same shape only."""
    def kernel(name, tflops, n=8192):
        return {"name": name, "info": {"kernel": "attn_fwd_" + name},
                "bench": [{"B": 2, "H": 16, "N": n, "case": f"N={n}", "ours_tflops": tflops,
                           "cudnn_tflops": 680.0}]}
    results = [kernel("sm90a_bf16_d128", 674.0), kernel("sm90a_bf16_d128_softcap2", 547.0),
               kernel("sm90a_bf16_d128_softcap2_exp2emu4o8", 620.0),
               kernel("sm90a_bf16_d64_exp2emu2o8", 500.0),
               kernel("sm90a_bf16_d128_exp2emu3o8", 670.0, n=1024)]
    rows = {r[0]: r for r in cb.exp2_emulation_costs(results)}
    check(len(rows) == 3, f"exp2 table: {len(rows)} rows, expected 3")
    sc = rows["sm90a_bf16_d128_softcap2_exp2emu4o8"]
    check(sc[2] == 4 and sc[4] == "attn_fwd_sm90a_bf16_d128_softcap2"
          and abs(sc[6] - 620.0 / 547.0) < 1e-12 and abs(sc[8] - 620.0 / 674.0) < 1e-12,
          f"exp2 table: softcap row {sc}")
    check(rows["sm90a_bf16_d64_exp2emu2o8"][5] is None, "exp2 table: no d64 base in the run")
    check(rows["sm90a_bf16_d128_exp2emu3o8"][5] is None, "exp2 table: base at another N")
    check(not cb.window_costs(results), "exp2 kernels are not window kernels")


def test_decode(torch):
    import decode_check as dc
    # The reference against brute force: B = 2 sequences of lengths 0..9,
    # GQA 4/2, Nq 1 and 3, causal (bottom-right to each length) or not.
    for nq, lengths, causal, softcap in ((1, [5, 0], False, 0.0), (3, [1, 9], True, 0.0),
                                          (3, [2, 7], True, 5.0), (1, [1, 4], True, 0.0)):
        h, hkv, d = 4, 2, 8
        q = torch.randn(len(lengths), nq, h, d, dtype=torch.float64)
        keys = [torch.randn(n, hkv, d, dtype=torch.float64) for n in lengths]
        values = [torch.randn(n, hkv, d, dtype=torch.float64) for n in lengths]
        out, lse = dc.reference(q, keys, values, 0.3, causal, softcap)
        for b, n in enumerate(lengths):
            for head in range(h):
                kv = head // (h // hkv)
                want, want_lse = brute_reference(
                    q[b, :, head].tolist(), keys[b][:, kv].tolist(), values[b][:, kv].tolist(),
                    0.3, causal, True, softcap, (-1, -1))
                got = out[b, :, head].tolist()
                for i in range(nq):
                    close = all(abs(x - y) < 1e-4 for x, y in zip(got[i], want[i]))
                    lse_ok = (lse[b, head, i].item() == want_lse[i] if math.isinf(want_lse[i])
                              else abs(lse[b, head, i].item() - want_lse[i]) < 1e-4)
                    check(close and lse_ok, f"decode reference nq={nq} length={n} causal={causal} "
                                            f"softcap={softcap} head={head} row={i}")
    # The caches: contiguous / paged, plain / strided.
    for page, strided in ((0, False), (16, False), (64, True), (0, True)):
        b, cap, hkv, d, lengths = 3, 128, 2, 16, [100, 0, 128]
        kc, vc, table, keys, values = dc.make_cache(b, cap, hkv, d, torch.float32, lengths, page,
                                                    seed=1, device="cpu", strided=strided)
        what = f"decode cache page={page} strided={strided}"
        check(kc.stride(-1) == 1 and all(x % 8 == 0 for x in kc.stride()[:3]),
              f"{what}: strides {kc.stride()} (last 1, others multiples of 8)")
        check(kc.is_contiguous() != strided, f"{what}: contiguous iff not strided")
        for i, n in enumerate(lengths):
            if page:
                used = (n + page - 1) // page
                rows = torch.cat([kc[int(table[i, j])] for j in range(used)]) if used else \
                    kc[:0].reshape(0, hkv, d)
                vrows = torch.cat([vc[int(table[i, j])] for j in range(used)]) if used else \
                    vc[:0].reshape(0, hkv, d)
                check(bool((table[i, used:] == -1).all()), f"{what}: unused entries -1")
                tail = rows[n:]
            else:
                rows, vrows, tail = kc[i], vc[i], kc[i, n:]
            check(torch.equal(rows[:n], keys[i]) and torch.equal(vrows[:n], values[i]),
                  f"{what}: sequence {i}'s keys and values")
            check(bool(torch.isnan(tail).all()), f"{what}: NaN past length {n}")
        if page:
            used = table[table >= 0]
            check(len(set(used.tolist())) == len(used) and int(used.max()) < kc.shape[0],
                  f"{what}: distinct pages inside the cache")
    # The case list: valid shapes, and the cases the brief asks for.
    rows = dc.cases(quick=False)
    for c in rows:
        b, nq, h, hkv, d, cap, page, lengths, splits, strided = c
        check(h % hkv == 0 and len(lengths) == b and max(lengths) <= cap and
              (page == 0 or (page % 16 == 0 and cap % page == 0)) and d % 8 == 0 and
              8 <= d <= 256, f"decode case {c} is well formed")
    lengths = [n for c in rows for n in c[7]]
    check(0 in lengths and 1 in lengths, "decode cases have lengths 0 and 1")
    check(any(c[6] for c in rows) and any(not c[6] for c in rows), "paged and contiguous cases")
    check(any(c[9] for c in rows), "strided cases")
    check({64, 128, 256, 96, 40} <= {c[4] for c in rows}, "head dims 40, 64, 96, 128, 256")
    check(any(c[8] > math.ceil(max(c[7]) / 64) for c in rows), "a case with splits that get "
                                                               "no key")
    check(dc.bench_shapes(quick=True) == [(64, 1, 8192, 32, 8, 0), (64, 1, 8192, 32, 8, 64)],
          "the decode bar's rows (contiguous, paged) lead the benchmark")


def main():
    try:
        import torch
    except ImportError:
        print("check_reference.py needs torch (pip install torch; the CPU build will do)")
        return 2
    test_visible(torch)
    test_reference(torch)
    test_flex(torch)
    test_exp2_emulation_table()
    test_decode(torch)
    print(f"check_reference: {'all passed' if failures == 0 else f'{failures} FAILED'}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
