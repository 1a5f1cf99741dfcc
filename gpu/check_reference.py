#!/usr/bin/env python3
"""Checks the GPU scripts' pure-Python parts on the CPU: gpu/harness.py's self-test
with torch (the visibility rule, the visible-key count, the float32 references
against a naive loop, the poisoned outputs and verdicts), then what the scripts
hold themselves: python_check.py's FlexAttention block masks and soft-cap
score_mod against the reference (where torch.nn.attention.flex_attention exists),
check_and_bench.py's case lists and its exp2-emulation and window-cost tables,
decode_check.py's paged and strided caches (every sequence's keys found again
through the block table, NaN past the lengths), its case list and benchmark
shapes; quantize_check.py's self-test (its Hadamard signs against the kernel's,
its reference quantization passing and broken ones caught).

    python3 gpu/check_reference.py        # needs torch (the CPU build is enough)

Exit status 0 when every check passed; 2 without torch.
"""

import math
import sys

import check_and_bench as cb
import harness

check = harness.CheckCounter()


def test_flex(torch):
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except Exception as e:  # noqa: BLE001
        print(f"skip flex: {type(e).__name__}: {e}")
        return
    import python_check  # needs torch; imports attngen only in its main()
    torch.manual_seed(1)
    n, d, h = 256, 16, 2
    for window, causal, softcap in (((40, 0), False, 0.0), ((40, 40), False, 0.0),
                                    ((-1, -1), True, 30.0), ((-1, -1), False, 30.0),
                                    ((130, 0), False, 0.0)):
        q, k, v = (torch.randn(1, h, n, d) for _ in range(3))
        mask_mod = python_check.flex_masks(window, causal, n)
        kwargs = {}
        if mask_mod is not None:
            kwargs["block_mask"] = create_block_mask(mask_mod, None, None, n, n, device="cpu")
        if softcap:
            kwargs["score_mod"] = lambda s, b, hh, qi, ki: softcap * torch.tanh(s / softcap)
        got = flex_attention(q, k, v, **kwargs)
        ref, _ = harness.reference(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                   1 / math.sqrt(d), causal, True, softcap, window)
        rel = harness.rel_error(got.transpose(1, 2), ref)
        check(rel < 1e-4, f"flex window={window} causal={causal} softcap={softcap}: rel {rel:.2e}")


def test_check_and_bench_cases():
    """The correctness sweep's size (gpu/README.md: 53 cases, 18 with --quick) and
    that every case is a shape the kernels take, with the extra shapes of each mask."""
    for quick, count in ((False, 53), (True, 18)):
        check(len(cb.correctness_cases(quick)) == count,
              f"check_and_bench: {count} cases (quick={quick})")
        for flags in ((False, False, False), (True, False, False), (False, True, False),
                      (False, False, True)):
            cases = cb.correctness_cases(quick, *flags)
            for b, h, hkv, nq, nk, layout, with_lse in cases:
                check(b >= 1 and h % hkv == 0 and nq >= 1 and nk >= 1
                      and layout in ("contiguous", "bhnd", "padded", "saturated"),
                      f"check_and_bench case {(b, h, hkv, nq, nk, layout)} is well formed")
            check(any(c[3] > c[4] for c in cases) and any(c[3] < c[4] for c in cases)
                  and any(not c[6] for c in cases), f"nq != nk both ways, lse=NULL: {flags}")
            check(any(c[5] == "saturated" for c in cases) == flags[2],
                  f"saturated scores exactly for soft caps: {flags}")
    plain = set(cb.correctness_cases(False))
    check(plain < set(cb.correctness_cases(False, bottom_right=True))
          and plain < set(cb.correctness_cases(False, window=True)),
          "bottom-right and window kernels run the plain cases and more")


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
    # The caches: contiguous / paged, plain / strided.
    for page, strided in ((0, False), (16, False), (64, True), (0, True)):
        b, cap, hkv, d, lengths = 3, 128, 2, 16, [100, 0, 128]
        kc, vc, table, keys, values = dc.make_cache(b, cap, hkv, d, torch.float32, lengths, page,
                                                    seed=1, device="cpu", strided=strided)
        what = f"decode cache page={page} strided={strided}"
        check(kc.stride(-1) == 1 and all(x % 8 == 0 for x in kc.stride()[:3]),
              f"{what}: strides {kc.stride()} (last 1, others multiples of 8)")
        check(kc.is_contiguous() != strided, f"{what}: contiguous iff not strided")
        got_k = harness.gather_kv_cache(kc, lengths, table)
        got_v = harness.gather_kv_cache(vc, lengths, table)
        # Each sequence's rows up to the end of its last page (or of the capacity).
        spans = [math.ceil(n / page) * page if page else cap for n in lengths]
        for i, n in enumerate(lengths):
            check(torch.equal(got_k[i], keys[i]) and torch.equal(got_v[i], values[i]),
                  f"{what}: sequence {i}'s keys and values")
            if page:
                check(bool((table[i, math.ceil(n / page):] == -1).all()),
                      f"{what}: unused entries -1")
            tail = harness.gather_kv_cache(kc, spans, table)[i][n:]
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
    check(harness.self_test() == 0, "gpu/harness.py --self-test")
    test_flex(torch)
    test_check_and_bench_cases()
    test_exp2_emulation_table()
    test_decode(torch)
    import quantize_check  # imports torch at load
    check(quantize_check.self_test() == 0, "gpu/quantize_check.py --self-test")
    print(f"check_reference: {'all passed' if check.failures == 0 else f'{check.failures} FAILED'}")
    return 0 if check.failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
