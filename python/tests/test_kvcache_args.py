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


if __name__ == "__main__":
    unittest.main()
