"""attngen.attention_with_kvcache's argument checks, on CPU tensors: every
check but the device one runs before anything touches a GPU, so a call with
CPU tensors that are otherwise right fails on the device, and each wrong
argument fails with its own message first. Needs torch (the CPU build will
do); skipped without it.

    PYTHONPATH=python python3 -m unittest python/tests/test_kvcache_args.py -v
"""

import unittest

import attngen

try:
    import torch
except ImportError:
    torch = None

#: A small GQA decoding problem: B = 2, Nq = 1, H = 8, Hkv = 2, d64.
B, NQ, H, HKV, D = 2, 1, 8, 2, 64
#: Pages of 16 rows, 4 pages per sequence.
PAGE, MAX_BLOCKS = 16, 4


@unittest.skipIf(torch is None, "needs torch")
class KvCacheArgumentTest(unittest.TestCase):
    def setUp(self):
        self.q = torch.zeros(B, NQ, H, D, dtype=torch.bfloat16)
        self.kc = torch.zeros(B, 64, HKV, D, dtype=torch.bfloat16)
        self.paged = torch.zeros(B * MAX_BLOCKS, PAGE, HKV, D, dtype=torch.bfloat16)
        self.table = torch.arange(B * MAX_BLOCKS, dtype=torch.int32).reshape(B, MAX_BLOCKS)
        self.lengths = torch.tensor([3, 64], dtype=torch.int32)

    def call(self, q=None, k=None, v=None, **kwargs):
        q = self.q if q is None else q
        k = self.kc if k is None else k
        v = k if v is None else v
        return attngen.attention_with_kvcache(q, k, v, **kwargs)

    def assertFails(self, needle, error=attngen.InvalidInputError, **kwargs):
        with self.assertRaises(error) as caught:
            self.call(**kwargs)
        self.assertIn(needle, str(caught.exception))

    def test_right_arguments_fail_only_on_the_device(self):
        for kwargs in (dict(cache_seqlens=self.lengths),
                       dict(k=self.paged, cache_seqlens=self.lengths, block_table=self.table,
                            causal=True, num_splits=3),
                       dict(cache_seqlens=5, return_lse=True, softcap=30.0)):
            with self.subTest(**{k: type(v).__name__ for k, v in kwargs.items()}):
                self.assertFails("q is on cpu; attngen runs on CUDA devices", **kwargs)

    def test_page_sizes(self):
        pages = torch.zeros(8, 24, HKV, D, dtype=torch.bfloat16)
        self.assertFails("pages of 24 rows (dim 1 of k_cache); attngen needs a multiple of 16",
                         k=pages, block_table=self.table)

    def test_block_tables(self):
        self.assertFails("block_table has dtype torch.int64; it must be torch.int32",
                         k=self.paged, block_table=self.table.long())
        self.assertFails("block_table has 1 rows but q has batch 2",
                         k=self.paged, block_table=self.table[:1])
        self.assertFails("its rows must be contiguous",
                         k=self.paged, block_table=self.table.t().contiguous().t())

    def test_cache_seqlens(self):
        self.assertFails("cache_seqlens = 65 is outside [0, 64]", cache_seqlens=65)
        self.assertFails("cache_seqlens = -1 is outside [0, 64]", cache_seqlens=-1)
        self.assertFails("cache_seqlens must have shape (2,)", cache_seqlens=self.lengths[:1])
        self.assertFails("cache_seqlens has dtype torch.int64",
                         cache_seqlens=self.lengths.long())
        self.assertFails("cache_seqlens must be None, an int or an int32 tensor", TypeError,
                         cache_seqlens=3.0)

    def test_num_splits(self):
        self.assertFails("num_splits = -1 is out of range", num_splits=-1)
        self.assertFails("num_splits = 257 is out of range", num_splits=257)
        self.assertFails("num_splits must be an int", TypeError, num_splits=True)

    def test_window_and_flags(self):
        self.assertFails("window left = -2 is out of range", window_size=(-2, 0))
        # Sliding windows, and flash_attn's spellings of a causal mask: (-1,
        # 0), and causal with any right side (causal forces it to 0).
        for kwargs in (dict(window_size=(-1, 0)), dict(causal=True, window_size=(-1, 64)),
                       dict(causal=True, window_size=(-1, 0)), dict(window_size=(128, 0)),
                       dict(window_size=(-1, 64)), dict(window_size=(100, 50))):
            with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                self.assertFails("q is on cpu; attngen runs on CUDA devices", **kwargs)
        self.assertFails("causal must be a bool", TypeError, causal=1)

    def test_shapes(self):
        self.assertFails("q has 8 heads and the caches 3",
                         k=torch.zeros(B, 64, 3, D, dtype=torch.bfloat16))
        self.assertFails("q has head_dim 64 but k_cache has head_dim 128",
                         k=torch.zeros(B, 64, HKV, 128, dtype=torch.bfloat16))
        self.assertFails("k_cache has batch 1 but q has 2", k=self.kc[:1])


def e4m3(*shape):
    """Random float8_e4m3fn values on the CPU."""
    return torch.randn(*shape).clamp(-8, 8).to(torch.float8_e4m3fn)


@unittest.skipIf(torch is None or not hasattr(torch, "float8_e4m3fn"),
                 "needs torch with float8_e4m3fn")
class Fp8KvCacheArgumentTest(unittest.TestCase):
    """FP8 caches (e4m3 q, k_cache, v_cache with descales): every refusal
    before the device check, so on CPU tensors."""

    def setUp(self):
        self.q = e4m3(B, NQ, H, D)
        self.kc = e4m3(B, 256, HKV, D)
        self.table = torch.arange(B * MAX_BLOCKS, dtype=torch.int32).reshape(B, MAX_BLOCKS)
        self.lengths = torch.tensor([3, 200], dtype=torch.int32)
        self.per_head = torch.rand(B, HKV) + 0.5
        self.one = torch.full((1,), 0.7)

    def call(self, q=None, k=None, v=None, **kwargs):
        q = self.q if q is None else q
        k = self.kc if k is None else k
        v = k if v is None else v
        return attngen.attention_with_kvcache(q, k, v, **kwargs)

    def assertFails(self, needle, error=attngen.InvalidInputError, **kwargs):
        with self.assertRaises(error) as caught:
            self.call(**kwargs)
        self.assertIn(needle, str(caught.exception))

    def test_right_arguments_fail_only_on_the_device(self):
        on_device = "q is on cpu; attngen runs on CUDA devices"
        cases = [dict(cache_seqlens=self.lengths),
                 dict(cache_seqlens=self.lengths, q_descale=self.per_head, k_descale=self.one,
                      v_descale=self.per_head, causal=True, num_splits=3, return_lse=True),
                 dict(cache_seqlens=7, softcap=30.0, window_size=(64, 0),
                      alibi_slopes=torch.rand(H), k_descale=self.one)]
        # Pages that divide 128 or are a multiple of it.
        for page in (16, 32, 64, 128, 256, 384):
            cases.append(dict(k=e4m3(B * MAX_BLOCKS, page, HKV, D), block_table=self.table,
                              cache_seqlens=self.lengths, q_descale=self.one, causal=True))
        for kwargs in cases:
            with self.subTest(**{k: tuple(v.shape) if isinstance(v, torch.Tensor) else v
                                 for k, v in kwargs.items()}):
                self.assertFails(on_device, **kwargs)
        # Every FP8 head dim.
        for d in (64, 128, 256):
            with self.subTest(head_dim=d):
                self.assertFails(on_device, q=e4m3(B, NQ, H, d), k=e4m3(B, 32, HKV, d))

    def test_dtypes_together(self):
        bf16 = self.kc.to(torch.bfloat16)
        self.assertFails("k_cache has dtype torch.bfloat16: FP8 attention_with_kvcache takes "
                         "torch.float8_e4m3fn q, k_cache and v_cache", k=bf16, v=self.kc)
        self.assertFails("v_cache has dtype torch.bfloat16: FP8 attention_with_kvcache takes "
                         "torch.float8_e4m3fn q, k_cache and v_cache", v=bf16)
        # bfloat16 q over FP8 caches, and descales with bfloat16 tensors.
        self.assertFails("q has dtype torch.bfloat16: FP8 attention_with_kvcache",
                         q=self.q.to(torch.bfloat16))
        q16 = self.q.to(torch.bfloat16)
        self.assertFails("q has dtype torch.bfloat16: FP8 attention_with_kvcache", q=q16,
                         k=bf16, k_descale=self.one)

    def test_block_scales_refused(self):
        self.assertFails("k_descale has shape (2, 2, 2): block scales (one per 128 rows) are "
                         "not supported with a KV cache", k_descale=torch.ones(B, HKV, 2))
        self.assertFails("q_descale has shape (2, 8, 1): block scales",
                         q_descale=torch.ones(B, H, 1))
        self.assertFails("v_descale has shape (2, 2, 2): block scales",
                         v_descale=torch.ones(B, HKV, 2))

    def test_descale_shapes_and_dtypes(self):
        self.assertFails("k_descale has shape (4,); it must hold one element (per tensor) or be "
                         "(batch, kv_heads) = (2, 2)", k_descale=torch.ones(4))
        # Per (batch, kv head): q's descale too, not per query head.
        self.assertFails("q_descale has shape (2, 8)", q_descale=torch.ones(B, H))
        self.assertFails("v_descale must be float32", v_descale=torch.ones(B, HKV,
                                                                          dtype=torch.float16))
        self.assertFails("attngen.attention_with_kvcache: q_descale must be a torch.Tensor",
                         TypeError, q_descale=0.5)

    def test_head_dims(self):
        self.assertFails("FP8 attention supports head dims 64, 128, 256, not 96",
                         q=e4m3(B, NQ, H, 96), k=e4m3(B, 64, HKV, 96))
        # No head_dim_v of its own with FP8.
        self.assertFails("k_cache and v_cache must have the same shape for FP8",
                         v=e4m3(B, 256, HKV, 128))
        self.assertFails("q has head_dim 64 but k_cache and v_cache have head_dim 128",
                         k=e4m3(B, 64, HKV, 128))

    def test_page_sizes(self):
        for page in (48, 80, 96, 144, 320):
            with self.subTest(page=page):
                self.assertFails(f"the paged FP8 caches have pages of {page} rows (dim 1 of "
                                 "k_cache); FP8 reads keys in blocks of 128",
                                 k=e4m3(B * MAX_BLOCKS, page, HKV, D), block_table=self.table)
        self.assertFails("pages of 24 rows (dim 1 of k_cache); attngen needs a multiple of 16",
                         k=e4m3(B * MAX_BLOCKS, 24, HKV, D), block_table=self.table)

    def test_rows_on_16_bytes(self):
        # 72-element head strides: 8 elements is 16 bytes of bfloat16, not of FP8.
        q = e4m3(B, NQ, H, 72)[..., :D]
        self.assertFails("q has strides (576, 576, 72, 1): the strides of its first three "
                         "dimensions must be multiples of 16 elements (16 bytes)", q=q)

    def test_gqa_groups(self):
        self.assertFails("q has 8 heads and the caches 3", k=e4m3(B, 64, 3, D))

    def test_outputs_and_op_schema(self):
        """bfloat16 out for e4m3 q (the op's fake implementation), and the
        descales last in the op's schema, defaulting to None (existing callers
        keep working)."""
        from attngen._torch_launch import outputs_like
        out, lse = outputs_like(self.q, True, self.kc)
        self.assertEqual((out.dtype, tuple(out.shape)), (torch.bfloat16, (B, NQ, H, D)))
        self.assertEqual(tuple(lse.shape), (B, H, NQ))
        schema = torch.ops.attngen.attention_with_kvcache.default._schema
        last = [(a.name, a.default_value) for a in schema.arguments[-3:]]
        self.assertEqual(last, [("q_descale", None), ("k_descale", None), ("v_descale", None)])

    def test_kernel_spec(self):
        """The spec _forward asks for: e4m3, v row-major (as the C++ canonical
        spec makes it), and a split kernel whose combine kernel is bf16."""
        from unittest import mock
        from attngen import _torch_kvcache

        class Stop(Exception):
            pass
        asked = {}

        def kernel_for(q, scale, **fields):
            asked.update(fields, head_dim=q.shape[-1], dtype=str(q.dtype), scale=scale or None)
            raise Stop
        pages = e4m3(B * MAX_BLOCKS, 64, HKV, D)
        with mock.patch.object(_torch_kvcache, "kernel_for", kernel_for), \
                self.assertRaises(Stop):
            _torch_kvcache._forward(self.q, pages, pages, self.lengths, self.table, True, 0.0,
                                    0.0, True, 0, q_descale=self.one)
        self.assertEqual(asked["dtype"], "torch.float8_e4m3fn")
        self.assertTrue(asked["v_row_major"] and asked["kv_cache"] and asked["split_kv"])
        self.assertEqual((asked["page_size"], asked["head_pack"]), (64, 4))
        compiled = attngen.compile(arch="sm_90a", **asked)
        self.assertEqual(compiled.metadata["dtype"], "e4m3")
        self.assertEqual(compiled.combine.metadata["dtype"], "bf16")


if __name__ == "__main__":
    unittest.main()
