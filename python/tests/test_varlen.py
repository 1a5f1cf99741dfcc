"""attngen.attention_varlen without a GPU: varlen kernels through compile(),
and (with torch, on CPU tensors) the argument checks that run before any
device is touched, the cu_seqlens value checks on host copies included.

    PYTHONPATH=python ATTNGEN_CACHE_DIR=/tmp/x python3 -m unittest python/tests/test_varlen.py -v
"""

import unittest

import attngen

try:
    import torch
except ImportError:
    torch = None


class VarlenCompileTest(unittest.TestCase):
    def test_compile_varlen(self):
        for arch in ("sm_80", "sm_90a"):
            k = attngen.compile(arch=arch, head_dim=64, dtype="f16", causal=True,
                                causal_align="bottom-right", varlen=True)
            self.assertTrue(k.kernel_name.endswith("_f16_d64_varlen_causal"), k.kernel_name)
            self.assertIs(k.metadata["varlen"], True)
            self.assertEqual(k.metadata["grid"]["tiles"][0]["size"], "max_seqlen_q")
            names = [p["name"] for p in k.metadata["params"]]
            for name in ("cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "q_stride_n"):
                self.assertIn(name, names)
            self.assertNotIn("q_stride_b", names)
            self.assertIn("varlen=1", k.cache_key)
            dense = attngen.compile(arch=arch, head_dim=64, dtype="f16")
            self.assertIs(dense.metadata["varlen"], False)
            self.assertNotEqual(dense.cache_key, k.cache_key)

    def test_compile_varlen_window(self):
        # Per-sequence sliding windows, in a head dim of 32-byte panels too.
        for arch in ("sm_80", "sm_90a"):
            for head_dim in (64, 96, 40):
                k = attngen.compile(arch=arch, head_dim=head_dim, dtype="bf16",
                                    causal_align="bottom-right", window_size=(128, 0),
                                    varlen=True)
                self.assertTrue(k.kernel_name.endswith(
                    f"_bf16_d{head_dim}_varlen_window_l128_r0"), k.kernel_name)
                self.assertIs(k.metadata["varlen"], True)
                self.assertEqual(k.metadata["window_left"], 128)

    def test_varlen_flag_must_be_a_bool(self):
        with self.assertRaises(TypeError):
            attngen.compile(varlen=1)

    def test_persistent_where_dense_is(self):
        # The C API has no persistent switch: a varlen kernel is persistent
        # where the dense kernel of its mask is (unmasked and causal d128 on
        # sm_90a), and its full output tiles go out through TMA.
        for causal in (False, True):
            k = attngen.compile(arch="sm_90a", varlen=True, causal=causal)
            self.assertEqual(k.metadata["grid"]["ctas_per_sm"], 1)
            self.assertIn("tma_o", [p["name"] for p in k.metadata["params"]])
        windowed = attngen.compile(arch="sm_90a", varlen=True, window_size=(256, 0))
        self.assertEqual(windowed.metadata["grid"]["ctas_per_sm"], 0)
        self.assertEqual(attngen.compile(arch="sm_80", varlen=True)
                         .metadata["grid"]["ctas_per_sm"], 0)

    def test_compile_paged(self):
        # A varlen kernel over a paged K/V (flash_attn_varlen_func with a
        # block_table): k and v keep their page stride, the block table and
        # its extents are parameters, and no cache_seqlens.
        for arch in ("sm_80", "sm_90a"):
            for page in (16, 256):
                k = attngen.compile(arch=arch, head_dim=128, dtype="bf16", causal=True,
                                    causal_align="bottom-right", varlen=True, page_size=page)
                self.assertTrue(k.kernel_name.endswith(f"_varlen_causal_page{page}"),
                                k.kernel_name)
                self.assertIs(k.metadata["varlen"], True)
                self.assertIs(k.metadata["kv_cache"], False)
                self.assertEqual(k.metadata["page_size"], page)
                names = [p["name"] for p in k.metadata["params"]]
                for name in ("block_table", "k_stride_b", "max_blocks", "num_blocks",
                             "cu_seqlens_k"):
                    self.assertIn(name, names)
                self.assertNotIn("q_stride_b", names)
                self.assertNotIn("cache_seqlens", names)
        with self.assertRaises(attngen.InvalidInputError) as caught:
            attngen.compile(arch="sm_90a", varlen=True, page_size=24)
        self.assertIn("page size 24 is not supported", str(caught.exception))
        with self.assertRaises(attngen.InvalidInputError) as caught:
            attngen.compile(arch="sm_90a", page_size=64)
        self.assertIn("page_size reads keys and values from a paged cache, which KV-cache and "
                      "varlen forward kernels do",
                      str(caught.exception))


@unittest.skipUnless(torch is not None, "needs torch (a CPU build is enough)")
class VarlenArgumentTest(unittest.TestCase):
    """Checks that come before the device check run on CPU tensors."""

    def inputs(self, **changes):
        args = dict(q=torch.zeros(300, 8, 64, dtype=torch.float16),
                    k=torch.zeros(500, 2, 64, dtype=torch.float16),
                    v=torch.zeros(500, 2, 64, dtype=torch.float16),
                    cu_seqlens_q=torch.tensor([0, 100, 100, 300], dtype=torch.int32),
                    cu_seqlens_k=torch.tensor([0, 250, 250, 500], dtype=torch.int32),
                    max_seqlen_q=200, max_seqlen_k=250)
        args.update(changes)
        return args

    def expect(self, error, fragment, kwargs=None, **changes):
        with self.assertRaises(error) as caught:
            attngen.attention_varlen(**self.inputs(**changes), **(kwargs or {}))
        self.assertIn(fragment, str(caught.exception))

    def test_argument_checks(self):
        bad = attngen.InvalidInputError
        self.expect(TypeError, "q must be a torch.Tensor", q="q")
        self.expect(bad, "q must be 3-D (total_tokens, heads, head_dim)",
                    q=torch.zeros(1, 300, 8, 64, dtype=torch.float16))
        self.expect(TypeError, "cu_seqlens_k must be a torch.Tensor", cu_seqlens_k=[0, 500])
        self.expect(bad, "cu_seqlens_q has dtype torch.int64; it must be torch.int32",
                    cu_seqlens_q=torch.tensor([0, 100, 100, 300]))
        self.expect(bad, "cu_seqlens_q must be 1-D with batch + 1 entries",
                    cu_seqlens_q=torch.zeros(2, 2, dtype=torch.int32))
        self.expect(bad, "cu_seqlens_k must be 1-D with batch + 1 entries",
                    cu_seqlens_k=torch.zeros(0, dtype=torch.int32))
        self.expect(bad, "cu_seqlens_q has 4 entries but cu_seqlens_k has 3",
                    cu_seqlens_k=torch.tensor([0, 250, 500], dtype=torch.int32))
        self.expect(bad, "must be contiguous (stride 1)",
                    cu_seqlens_q=torch.tensor([0, 9, 100, 9, 100, 9, 300, 9],
                                              dtype=torch.int32)[::2])
        self.expect(TypeError, "max_seqlen_q must be an int", max_seqlen_q=200.0)
        self.expect(TypeError, "max_seqlen_k must be an int", max_seqlen_k=True)
        self.expect(bad, "max_seqlen_q = -1 is out of range", max_seqlen_q=-1)
        self.expect(bad, "k has dtype torch.bfloat16 but q has torch.float16",
                    k=torch.zeros(500, 2, 64, dtype=torch.bfloat16),
                    v=torch.zeros(500, 2, 64, dtype=torch.bfloat16))
        self.expect(bad, "supports torch.float16 and torch.bfloat16",
                    q=torch.zeros(300, 8, 64))
        self.expect(bad, "k and v must have the same shape", v=torch.zeros(499, 2, 64,
                                                                          dtype=torch.float16))
        self.expect(bad, "the number of q heads must be a multiple",
                    q=torch.zeros(300, 3, 64, dtype=torch.float16))
        self.expect(bad, "the last dimension (head_dim) must be contiguous",
                    q=torch.zeros(300, 64, 8, dtype=torch.float16).transpose(1, 2))
        self.expect(bad, "must be multiples of 8 elements",
                    q=torch.zeros(300, 8, 68, dtype=torch.float16)[..., :64])
        # Everything else is right: the device is what is wrong.
        self.expect(bad, "q is on cpu; attngen runs on CUDA devices")

    def test_flag_checks(self):
        bad = attngen.InvalidInputError
        self.expect(TypeError, "causal must be a bool", kwargs={"causal": 1})
        self.expect(TypeError, "check_seqlens must be a bool", kwargs={"check_seqlens": "no"})
        self.expect(TypeError, "window_size must be a (left, right) pair of ints",
                    kwargs={"window_size": None})
        self.expect(TypeError, "window_size left must be an int",
                    kwargs={"window_size": (1.5, 0)})
        # A valid window passes the argument checks: the device is what is wrong.
        self.expect(bad, "q is on cpu", kwargs={"window_size": (128, 0)})
        self.expect(bad, "causal_align 'bottom_right' is not supported",
                    kwargs={"causal": True, "causal_align": "bottom_right"})
        self.expect(TypeError, "softcap must be a number", kwargs={"softcap": "30"})

    def test_paged_argument_checks(self):
        bad = attngen.InvalidInputError
        pages = torch.zeros(10, 64, 2, 64, dtype=torch.float16)
        table = torch.arange(12, dtype=torch.int32).remainder(10).view(3, 4)
        paged = dict(k=pages, v=pages, kwargs={"block_table": table})

        def expect(fragment, error=bad, kwargs=None, **changes):
            merged = dict(paged)
            merged.update(changes)
            merged["kwargs"] = dict(merged["kwargs"], **(kwargs or {}))
            self.expect(error, fragment, **merged)

        expect("k must be 4-D (num_blocks, page_size, kv_heads, head_dim)",
               k=torch.zeros(500, 2, 64, dtype=torch.float16))
        expect("k and v must have the same pages and kv_heads",
               v=torch.zeros(10, 32, 2, 64, dtype=torch.float16))
        expect("got k (10, 64, 2, 64) and v (10, 64, 1, 64)",
               v=torch.zeros(10, 64, 1, 64, dtype=torch.float16))
        expect("pages of 24 rows (dim 1); attngen needs a multiple of 16",
               k=torch.zeros(10, 24, 2, 64, dtype=torch.float16),
               v=torch.zeros(10, 24, 2, 64, dtype=torch.float16))
        expect("the paged k and v hold no page",
               k=torch.zeros(0, 64, 2, 64, dtype=torch.float16),
               v=torch.zeros(0, 64, 2, 64, dtype=torch.float16))
        expect("block_table has dtype torch.int64", kwargs={"block_table": table.long()})
        expect("block_table has 2 rows but cu_seqlens describe 3 sequences",
               kwargs={"block_table": table[:2]})
        expect("block_table has no columns", kwargs={"block_table": table[:, :0]})
        expect("its rows must be contiguous",
               kwargs={"block_table": table.t().contiguous().t()})
        expect("its rows must not overlap", kwargs={"block_table": table[:1].expand(3, 4)})
        expect("k has dtype torch.bfloat16 but q has torch.float16",
               k=pages.bfloat16(), v=pages.bfloat16())
        fp8 = torch.float8_e4m3fn
        expect("k has dtype torch.float16: FP8 attention_varlen takes torch.float8_e4m3fn",
               q=torch.zeros(300, 8, 64).to(fp8))
        expect("FP8 attention reads keys in blocks of 128, which must lie in one page or "
               "cover whole pages",
               q=torch.zeros(300, 8, 64).to(fp8), k=torch.zeros(10, 48, 2, 64).to(fp8),
               v=torch.zeros(10, 48, 2, 64).to(fp8))
        # Everything else is right: the device is what is wrong.
        expect("q is on cpu; attngen runs on CUDA devices")
        with torch.enable_grad():
            expect("no gradients through a paged K/V", NotImplementedError,
                   q=torch.zeros(300, 8, 64, dtype=torch.float16, requires_grad=True))

    def test_paged_seqlen_values(self):
        # A paged K/V has no packed total: each sequence's keys must fit its
        # row of the block table (max_blocks * page_size = 4 * 64 = 256).
        from attngen import _varlen_seqlens
        q = torch.zeros(300, 8, 64, dtype=torch.float16)
        pages = torch.zeros(10, 64, 2, 64, dtype=torch.float16)
        table = torch.zeros(3, 4, dtype=torch.int32)
        cu_q = torch.tensor([0, 100, 100, 300], dtype=torch.int32)

        def values(cu_k, max_k=300):
            _varlen_seqlens.check_seqlen_values(q, pages, cu_q,
                                               torch.tensor(cu_k, dtype=torch.int32),
                                               200, max_k, table)

        values([0, 256, 256, 300])  # the total is free; each sequence fits
        with self.assertRaises(attngen.InvalidInputError) as caught:
            values([0, 100, 357, 400])
        self.assertIn("sequence 1 has 257 keys but its row of block_table addresses 256 "
                      "(max_blocks = 4 pages of 64 rows): give the block_table more pages",
                      str(caught.exception))
        with self.assertRaises(attngen.InvalidInputError) as caught:
            values([0, 250, 250, 500], max_k=200)
        self.assertIn("more than max_seqlen_k = 200", str(caught.exception))
        # The pages a sequence uses must be the cache's; unused entries may be
        # anything (sequence 1 has no keys, sequence 2 uses one page of 4).
        table[1] = -1
        table[2, 1:] = 99
        values([0, 256, 256, 300])
        table[0, 3] = 10
        with self.assertRaises(attngen.InvalidInputError) as caught:
            values([0, 256, 256, 300])
        self.assertIn("block_table[0][3] = 10 is outside [0, 10) (the pages of k and v), but "
                      "sequence 0 uses its first 4 pages (256 keys)", str(caught.exception))

    def test_seqlen_values(self):
        # The runtime's attnrt_check_cu_seqlens on host copies, named as the
        # Python caller passed the sizes.
        from attngen import _varlen_seqlens
        args = self.inputs()
        q, k = args["q"], args["k"]

        def values(cu_q, cu_k, max_q=200, max_k=250):
            _varlen_seqlens.check_seqlen_values(q, k, torch.tensor(cu_q, dtype=torch.int32),
                                               torch.tensor(cu_k, dtype=torch.int32),
                                               max_q, max_k)

        values([0, 100, 100, 300], [0, 250, 250, 500])  # an empty sequence is fine
        cases = [
            (([0, 100, 50, 300], [0, 250, 250, 500]),
             "cu_seqlens_q is not monotone: cu_seqlens_q[2] = 50 < cu_seqlens_q[1] = 100"),
            (([0, 100, 100, 299], [0, 250, 250, 500]),
             "cu_seqlens_q[3] = 299 ends the last sequence, but the packed tensor has "
             "q.shape[0] = 300 rows"),
            (([0, 100, 100, 300], [0, 250, 400, 501]),
             "cu_seqlens_k[3] = 501 ends the last sequence, but the packed tensor has "
             "k.shape[0] = 500 rows"),
            (([1, 100, 100, 300], [0, 250, 250, 500]),
             "cu_seqlens_q[0] = 1 but the first sequence starts at row 0"),
            (([0, 10, 10, 300], [0, 250, 250, 500]),
             "sequence 2 has 290 query rows, more than max_seqlen_q = 200"),
        ]
        for (cu_q, cu_k), fragment in cases:
            with self.subTest(fragment=fragment):
                with self.assertRaises(attngen.InvalidInputError) as caught:
                    values(cu_q, cu_k)
                self.assertIn(fragment, str(caught.exception))
                self.assertIn("check_seqlens=False skips this check", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
