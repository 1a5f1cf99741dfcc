"""attngen.flash_attn_interface on the CPU: flash_attn's signatures (names,
order, defaults), its conventions (windows, LSE of empty rows, head dim
padding), the clear errors for what attngen lacks, and the KV-cache helpers
(rotary, appending, cache_batch_idx pages, leftpad)
against plain loops. The kernels themselves run in gpu/flash_attn_check.py.

    PYTHONPATH=python python3 -m unittest python/tests/test_flash_attn_interface.py -v
"""

import inspect
import math
import unittest

import attngen

try:
    import torch
    from attngen import flash_attn_interface as fa
except ImportError:
    torch = None

#: flash_attn 2's forward signatures: (name, default) in order.
_COMMON = [("dropout_p", 0.0), ("softmax_scale", None), ("causal", False),
           ("window_size", (-1, -1)), ("softcap", 0.0), ("alibi_slopes", None),
           ("deterministic", False), ("return_attn_probs", False)]
_REQUIRED = inspect.Parameter.empty
SIGNATURES = {
    "flash_attn_func": [("q", _REQUIRED), ("k", _REQUIRED), ("v", _REQUIRED)] + _COMMON + [
        # FlashAttention-3's FP8 descales, keyword-only.
        ("q_descale", None), ("k_descale", None), ("v_descale", None)],
    "flash_attn_qkvpacked_func": [("qkv", _REQUIRED)] + _COMMON,
    "flash_attn_kvpacked_func": [("q", _REQUIRED), ("kv", _REQUIRED)] + _COMMON,
    "flash_attn_varlen_func": [("q", _REQUIRED), ("k", _REQUIRED), ("v", _REQUIRED)] + [
        (n, _REQUIRED) for n in ("cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q",
                                 "max_seqlen_k")] + _COMMON + [
        ("block_table", None), ("q_descale", None), ("k_descale", None), ("v_descale", None)],
    "flash_attn_varlen_qkvpacked_func": [(n, _REQUIRED) for n in
                                         ("qkv", "cu_seqlens", "max_seqlen")] + _COMMON,
    "flash_attn_varlen_kvpacked_func": [(n, _REQUIRED) for n in
                                        ("q", "kv", "cu_seqlens_q", "cu_seqlens_k",
                                         "max_seqlen_q", "max_seqlen_k")] + _COMMON,
    "flash_attn_with_kvcache": [
        ("q", _REQUIRED), ("k_cache", _REQUIRED), ("v_cache", _REQUIRED), ("k", None),
        ("v", None), ("rotary_cos", None), ("rotary_sin", None), ("cache_seqlens", None),
        ("cache_batch_idx", None), ("cache_leftpad", None), ("block_table", None),
        ("softmax_scale", None), ("causal", False), ("window_size", (-1, -1)),
        ("softcap", 0.0), ("rotary_interleaved", True), ("alibi_slopes", None),
        ("num_splits", 0), ("return_softmax_lse", False),
        # FlashAttention-3's FP8 descales, keyword-only.
        ("q_descale", None), ("k_descale", None), ("v_descale", None)],
}


def bf16(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(torch.bfloat16)


@unittest.skipIf(torch is None, "needs torch")
class SignatureTest(unittest.TestCase):
    def test_flash_attn_signatures(self):
        self.assertEqual(sorted(fa.__all__), sorted(SIGNATURES))
        for name, expected in SIGNATURES.items():
            with self.subTest(function=name):
                params = inspect.signature(getattr(fa, name)).parameters.values()
                self.assertEqual([(p.name, p.default) for p in params], expected)


@unittest.skipIf(torch is None, "needs torch")
class ConventionTest(unittest.TestCase):
    def setUp(self):
        self.q, self.k, self.v = bf16(2, 5, 4, 64), bf16(2, 7, 2, 64, seed=1), bf16(2, 7, 2, 64)

    def assertFails(self, needle, call, error=attngen.InvalidInputError):
        with self.assertRaises(error) as caught:
            call()
        self.assertIn(needle, str(caught.exception))

    def test_right_calls_fail_only_on_the_device(self):
        on_device = "q is on cpu; attngen runs on CUDA devices"
        q, k, v = self.q, self.k, self.v
        self.assertFails(on_device, lambda: fa.flash_attn_func(q, k, v, 0.0, None, True))
        self.assertFails(on_device, lambda: fa.flash_attn_func(
            q, k, v, causal=True, window_size=(3, 64), softcap=30.0, return_attn_probs=True))
        qkv = bf16(2, 5, 3, 4, 64)
        self.assertFails(on_device, lambda: fa.flash_attn_qkvpacked_func(qkv, causal=True))
        kv = bf16(2, 7, 2, 2, 64)
        self.assertFails(on_device, lambda: fa.flash_attn_kvpacked_func(q, kv))
        # A head dim flash_attn pads (59 -> 64) is taken, and so is a last
        # dimension that is not contiguous (copied).
        q59, k59 = bf16(2, 5, 4, 59), bf16(2, 7, 2, 59)
        self.assertFails(on_device, lambda: fa.flash_attn_func(q59, k59, k59))
        strided = bf16(2, 5, 64, 4).transpose(-1, -2)
        self.assertFails(on_device, lambda: fa.flash_attn_func(strided, k, v))
        # flash_attn_varlen_func over a paged cache: the pages go to
        # attention_varlen as they are (its paged checks, then the device).
        pages, table = bf16(6, 16, 2, 64), torch.tensor([[5, 0], [3, 1]], dtype=torch.int32)
        q_packed = bf16(9, 4, 64)
        cu_q = torch.tensor([0, 4, 9], dtype=torch.int32)
        cu_k = torch.tensor([0, 20, 27], dtype=torch.int32)
        self.assertFails(on_device, lambda: fa.flash_attn_varlen_func(
            q_packed, pages, pages, cu_q, cu_k, 5, 20, causal=True, block_table=table))
        self.assertFails("block_table has 1 rows but cu_seqlens describe 2 sequences",
                         lambda: fa.flash_attn_varlen_func(q_packed, pages, pages, cu_q, cu_k,
                                                           5, 20, block_table=table[:1]))
        self.assertFails("k must be 4-D (num_blocks, page_size, kv_heads, head_dim)",
                         lambda: fa.flash_attn_varlen_func(q_packed, pages[0], pages[0], cu_q,
                                                           cu_k, 5, 20, block_table=table))

    def test_missing_features_are_clear_errors(self):
        q, k, v = self.q, self.k, self.v
        self.assertFails("dropout_p = 0.1: attngen has no attention dropout yet",
                         lambda: fa.flash_attn_func(q, k, v, 0.1))
        # ALiBi: checked as flash_attn takes it (the KV cache too), then the
        # device is what is wrong.
        self.assertFails("alibi_slopes must be float32", lambda: fa.flash_attn_func(
            q, k, v, alibi_slopes=torch.ones(4, dtype=torch.float64)))
        self.assertFails("alibi_slopes has shape (3,); it must be (heads,) = (4,) or "
                         "(batch, heads) = (2, 4)",
                         lambda: fa.flash_attn_func(q, k, v, alibi_slopes=torch.ones(3)))
        self.assertFails("must be contiguous in its last dimension", lambda: fa.flash_attn_func(
            q, k, v, alibi_slopes=torch.ones(4, 2).t()))
        self.assertFails("on cpu", lambda: fa.flash_attn_func(
            q, k, v, alibi_slopes=torch.ones(2, 4)))
        self.assertFails("alibi_slopes has shape (3,); it must be (heads,) = (4,)",
                         lambda: fa.flash_attn_with_kvcache(q, k, v, alibi_slopes=torch.ones(3)))
        self.assertFails("on cpu", lambda: fa.flash_attn_with_kvcache(
            q, k, v, alibi_slopes=torch.ones(4)))
        self.assertFails("dropout_p must be a float", lambda: fa.flash_attn_func(
            q, k, v, dropout_p="0"), TypeError)
        # Both errors are what flash_attn users catch: RuntimeError, ValueError.
        with self.assertRaises(RuntimeError):
            fa.flash_attn_func(q, k, v, 0.5)
        self.assertFails("head dimension 264 is not supported", lambda: fa.flash_attn_func(
            bf16(1, 2, 1, 264), bf16(1, 2, 1, 264), bf16(1, 2, 1, 264)))

    def test_window(self):
        # A side of seqlen_k or more is unbounded; causal forces right to 0.
        self.assertEqual(fa._window((100, 7), False, 7), (-1, -1))
        self.assertEqual(fa._window((6, 6), False, 7), (6, 6))
        self.assertEqual(fa._window((6, 50), True, 7), (6, 0))
        self.assertEqual(fa._window((-1, -1), True, 7), (-1, 0))
        self.assertEqual(fa._window((-2, 0), False, 7), (-2, 0))  # attngen refuses it

    def test_outputs(self):
        out = torch.zeros(1, 2, 1, 64)
        lse = torch.tensor([[[-math.inf, 0.5]]])
        got_out, got_lse, probs = fa._outputs((out, lse), True, 59, probs=True)
        self.assertEqual(got_out.shape[-1], 59)
        self.assertEqual(got_lse.tolist(), [[[math.inf, 0.5]]])
        self.assertIsNone(probs)
        self.assertEqual(len(fa._outputs((out, lse), True, 64, probs=False)), 2)
        self.assertIs(fa._outputs(out, False, 64, probs=False), out)

    def test_packing_errors(self):
        self.assertFails("qkv must be 5-D (batch, seqlen, 3, heads, headdim)",
                         lambda: fa.flash_attn_qkvpacked_func(bf16(2, 5, 2, 4, 64)))
        self.assertFails("kv must be 4-D (total, 2, heads, headdim)",
                         lambda: fa.flash_attn_varlen_kvpacked_func(
                             bf16(5, 4, 64), bf16(7, 3, 2, 64), None, None, 5, 7))


@unittest.skipIf(torch is None, "needs torch")
class KvCacheTest(unittest.TestCase):
    def assertFails(self, needle, call, error=attngen.InvalidInputError):
        with self.assertRaises(error) as caught:
            call()
        self.assertIn(needle, str(caught.exception))

    def test_argument_errors(self):
        q, kc = bf16(2, 1, 4, 64), bf16(2, 32, 2, 64)
        new = bf16(2, 1, 2, 64)
        lengths = torch.tensor([3, 9], dtype=torch.int32)
        table = torch.zeros(2, 2, dtype=torch.int32)
        self.assertFails("pass both k and v", lambda: fa.flash_attn_with_kvcache(
            q, kc, kc, k=new, cache_seqlens=lengths))
        self.assertFails("appending k and v needs cache_seqlens",
                         lambda: fa.flash_attn_with_kvcache(q, kc, kc, new, new))
        # The new keys and values must match their caches, v's head dim v_cache's
        # (which may be its own), before anything is written.
        vc = bf16(2, 32, 2, 128)
        before = kc.clone()
        self.assertFails("headdim those of k_cache (v's those of v_cache)",
                         lambda: fa.flash_attn_with_kvcache(q, kc, vc, new, new,
                                                            cache_seqlens=lengths))
        self.assertTrue(torch.equal(kc, before))
        self.assertFails("cache_batch_idx is not supported with a paged KV cache",
                         lambda: fa.flash_attn_with_kvcache(
                             q, bf16(4, 16, 2, 64), bf16(4, 16, 2, 64), cache_seqlens=lengths,
                             block_table=table, cache_batch_idx=lengths))
        # flash_attn raises (RuntimeError) for lengths its cache cannot hold.
        self.assertFails("a sequence needs 33 keys (cache_seqlens + seqlen_new) but the "
                         "block_table addresses 32: give the block_table more pages",
                         lambda: fa.flash_attn_with_kvcache(
                             q, bf16(4, 16, 2, 64), bf16(4, 16, 2, 64), new, new,
                             cache_seqlens=torch.tensor([3, 32], dtype=torch.int32),
                             block_table=table), RuntimeError)
        self.assertFails("k_cache holds 32: use a larger cache",
                         lambda: fa.flash_attn_with_kvcache(q, kc, kc, new, new,
                                                            cache_seqlens=32))
        cos = torch.ones(32, 16, dtype=torch.bfloat16)
        self.assertFails("rotary_cos has 8 positions but the cache holds 32",
                         lambda: fa.flash_attn_with_kvcache(
                             q, kc, kc, new, new, cos[:8], cos[:8], cache_seqlens=lengths))
        self.assertFails("rotary_dim = 24", lambda: fa.flash_attn_with_kvcache(
            q, kc, kc, new, new, cos[:, :12], cos[:, :12], cache_seqlens=lengths))
        self.assertFails("q is on cpu", lambda: fa.flash_attn_with_kvcache(
            q, kc.clone(), kc.clone(), new, new, cos, cos, cache_seqlens=lengths, causal=True,
            window_size=(8, 0), return_softmax_lse=True))

    def test_rotary_matches_a_loop(self):
        x = torch.randn(2, 3, 2, 32)
        theta = torch.randn(40, 8)
        cos, sin = theta.cos(), theta.sin()
        positions = torch.tensor([[0, 5, 9], [39, 1, 2]])
        for interleaved in (True, False):
            got = fa._apply_rotary(x, cos, sin, positions, interleaved)
            want = x.clone()
            for b in range(2):
                for s in range(3):
                    p = positions[b, s]
                    for i in range(8):
                        a, c = (2 * i, 2 * i + 1) if interleaved else (i, i + 8)
                        xa, xc = x[b, s, :, a], x[b, s, :, c]
                        want[b, s, :, a] = xa * cos[p, i] - xc * sin[p, i]
                        want[b, s, :, c] = xa * sin[p, i] + xc * cos[p, i]
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(got[..., 16:], x[..., 16:])

    def test_append_contiguous_and_batch_idx(self):
        kc, vc = torch.zeros(3, 10, 1, 8), torch.zeros(3, 10, 1, 8)
        k, v = torch.randn(2, 2, 1, 8), torch.randn(2, 2, 1, 8)
        lengths = torch.tensor([4, 7], dtype=torch.int32)
        index = torch.tensor([2, 0], dtype=torch.int32)
        fa._append_to_cache(kc, vc, k, v, lengths, cache_batch_idx=index)
        torch.testing.assert_close(kc[2, 4:6], k[0])
        torch.testing.assert_close(vc[0, 7:9], v[1])
        self.assertEqual(int((kc != 0).any(-1).sum()), 4)

    def test_append_paged(self):
        kc, vc = torch.zeros(6, 4, 1, 8), torch.zeros(6, 4, 1, 8)
        k, v = torch.randn(2, 3, 1, 8), torch.randn(2, 3, 1, 8)
        table = torch.tensor([[5, 1, 3], [0, 2, 4]], dtype=torch.int32)
        lengths = torch.tensor([3, 4], dtype=torch.int32)
        fa._append_to_cache(kc, vc, k, v, lengths, block_table=table)
        # Sequence 0: positions 3, 4, 5 -> page 5 row 3, page 1 rows 0, 1.
        torch.testing.assert_close(kc[5, 3], k[0, 0])
        torch.testing.assert_close(kc[1, :2], k[0, 1:])
        # Sequence 1: positions 4, 5, 6 -> page 2 rows 0-2.
        torch.testing.assert_close(vc[2, :3], v[1])

    def test_batch_idx_as_pages(self):
        kc = torch.randn(3, 48, 2, 8)
        index = torch.tensor([2, 0], dtype=torch.int32)
        pages_k, pages_v, table = fa._select_cache_rows(kc, kc, index)
        self.assertEqual(pages_k.data_ptr(), kc.data_ptr())  # a view, no copy
        self.assertEqual(tuple(pages_k.shape), (9, 16, 2, 8))
        for b in range(2):
            rows = pages_k[table[b].long()].flatten(0, 1)
            torch.testing.assert_close(rows, kc[index[b]])
        # Rows that are not whole pages of 16: copies of the rows.
        odd = torch.randn(3, 40, 2, 8)
        k_rows, _, none = fa._select_cache_rows(odd, odd, index)
        self.assertIsNone(none)
        torch.testing.assert_close(k_rows, odd[index.long()])

    def test_leftpad_shift(self):
        kc = torch.randn(2, 10, 1, 8)
        leftpad = torch.tensor([3, 0], dtype=torch.int32)
        k, _ = fa._shift_left(kc, kc, None, leftpad, 10)
        torch.testing.assert_close(k[0, :7], kc[0, 3:])
        torch.testing.assert_close(k[1], kc[1])

    @unittest.skipUnless(hasattr(torch, "float8_e4m3fn") if torch else False,
                         "needs torch with float8_e4m3fn")
    def test_fp8_batch_idx_and_leftpad_rows(self):
        """cache_batch_idx's row copies and cache_leftpad's shift move an FP8
        cache's bytes as they are (through uint8 views)."""
        e4m3 = torch.float8_e4m3fn
        odd = torch.randn(3, 40, 2, 16).to(e4m3)
        index = torch.tensor([2, 0], dtype=torch.int32)
        k_rows, _, none = fa._select_cache_rows(odd, odd, index)
        self.assertIsNone(none)
        self.assertEqual(k_rows.dtype, e4m3)
        self.assertTrue(torch.equal(k_rows.view(torch.uint8), odd.view(torch.uint8)[[2, 0]]))
        kc = torch.randn(2, 10, 1, 16).to(e4m3)
        leftpad = torch.tensor([3, 0], dtype=torch.int32)
        k, _ = fa._shift_left(kc, kc, None, leftpad, 10)
        self.assertEqual(k.dtype, e4m3)
        self.assertTrue(torch.equal(k[0, :7].view(torch.uint8), kc[0, 3:].view(torch.uint8)))
        self.assertTrue(torch.equal(k[1].view(torch.uint8), kc[1].view(torch.uint8)))

    @unittest.skipUnless(hasattr(torch, "float8_e4m3fn") if torch else False,
                         "needs torch with float8_e4m3fn")
    def test_fp8_descales_reach_attention(self):
        """flash_attn_func and flash_attn_varlen_func pass FA3's descales to
        attention() and attention_varlen(): their FP8 checks word the errors,
        and a bf16 call with a descale is refused."""
        e4m3 = torch.float8_e4m3fn
        q, k = bf16(2, 5, 4, 64).to(e4m3), bf16(2, 7, 2, 64, seed=1).to(e4m3)
        self.assertFails("k_descale has shape (4,)",
                         lambda: fa.flash_attn_func(q, k, k, k_descale=torch.ones(4)))
        self.assertFails("q is on cpu", lambda: fa.flash_attn_func(
            q, k, k, causal=True, q_descale=torch.ones(2, 2), v_descale=torch.ones(1)))
        self.assertFails("q has dtype torch.bfloat16: FP8 attention",
                         lambda: fa.flash_attn_func(bf16(2, 5, 4, 64), bf16(2, 7, 2, 64),
                                                    bf16(2, 7, 2, 64), q_descale=torch.ones(1)))
        cu = torch.tensor([0, 3, 5], dtype=torch.int32)
        self.assertFails("with varlen it must hold one element",
                         lambda: fa.flash_attn_varlen_func(q[0], k[0, :5], k[0, :5], cu, cu,
                                                           3, 3, v_descale=torch.ones(3)))

    @unittest.skipUnless(hasattr(torch, "float8_e4m3fn") if torch else False,
                         "needs torch with float8_e4m3fn")
    def test_fp8_caches(self):
        """FP8 caches: e4m3 k / v appended as they are (a copy of bytes), other
        dtypes refused before anything is written, no rotary, and the
        descales passed on to attention_with_kvcache."""
        e4m3 = torch.float8_e4m3fn

        def fp8(*shape, seed=0):
            return bf16(*shape, seed=seed).float().to(e4m3)
        q, kc, vc = fp8(2, 1, 4, 64), fp8(2, 32, 2, 64, seed=1), fp8(2, 32, 2, 64, seed=2)
        new_k, new_v = fp8(2, 1, 2, 64, seed=3), fp8(2, 1, 2, 64, seed=4)
        lengths = torch.tensor([3, 9], dtype=torch.int32)
        before = kc.view(torch.uint8).clone()
        self.assertFails("k_cache is float8_e4m3fn but the new k has dtype torch.bfloat16: new "
                         "keys and values are copied into an FP8 cache as they are",
                         lambda: fa.flash_attn_with_kvcache(q, kc, vc, new_k.to(torch.bfloat16),
                                                            new_v, cache_seqlens=lengths))
        self.assertFails("the new v is float8_e4m3fn but v_cache has dtype torch.bfloat16",
                         lambda: fa.flash_attn_with_kvcache(
                             q, kc, vc.to(torch.bfloat16), new_k, new_v, cache_seqlens=lengths))
        self.assertTrue(torch.equal(kc.view(torch.uint8), before))
        cos = torch.ones(32, 16)
        self.assertFails("rotary embeddings are not supported on FP8",
                         lambda: fa.flash_attn_with_kvcache(q, kc, vc, new_k, new_v, cos, cos,
                                                            cache_seqlens=lengths))
        self.assertTrue(torch.equal(kc.view(torch.uint8), before))
        # The descales reach attention_with_kvcache's checks ...
        self.assertFails("k_descale has shape (4,)", lambda: fa.flash_attn_with_kvcache(
            q, kc, vc, cache_seqlens=lengths, k_descale=torch.ones(4)))
        self.assertFails("block scales (one per 128 rows) are not supported with a KV cache",
                         lambda: fa.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=lengths,
                                                            q_descale=torch.ones(2, 4, 1)))
        # ... and a right call appends, then fails only on the device.
        self.assertFails("q is on cpu", lambda: fa.flash_attn_with_kvcache(
            q, kc, vc, new_k, new_v, cache_seqlens=lengths, causal=True,
            q_descale=torch.ones(1), k_descale=torch.ones(2, 2), v_descale=torch.ones(1)))
        self.assertTrue(torch.equal(kc[0, 3].view(torch.uint8), new_k[0, 0].view(torch.uint8)))
        self.assertTrue(torch.equal(vc[1, 9].view(torch.uint8), new_v[1, 0].view(torch.uint8)))
        # Paged: into page block_table[b, position // page_size].
        kp, vp = fp8(4, 16, 2, 64), fp8(4, 16, 2, 64)
        table = torch.tensor([[3, 1], [0, 2]], dtype=torch.int32)
        fa._append_to_cache(kp, vp, new_k, new_v, torch.tensor([17, 5], dtype=torch.int32),
                            block_table=table)
        self.assertTrue(torch.equal(kp[1, 1].view(torch.uint8), new_k[0, 0].view(torch.uint8)))
        self.assertTrue(torch.equal(vp[0, 5].view(torch.uint8), new_v[1, 0].view(torch.uint8)))


if __name__ == "__main__":
    unittest.main()
