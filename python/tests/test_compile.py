"""attngen.compile and the package's error paths; needs no GPU and no torch.

    PYTHONPATH=python ATTNGEN_CACHE_DIR=/tmp/x python3 -m unittest discover -s python/tests
"""

import os
import tempfile
import unittest

import attngen


class CompileTest(unittest.TestCase):
    def test_ptx_and_metadata(self):
        for arch in ("sm_80", "sm_90a"):
            for dtype in ("bf16", "f16"):
                k = attngen.compile(arch=arch, head_dim=128, dtype=dtype, causal=True)
                self.assertIsInstance(k.ptx, str)
                self.assertIn(f".target {arch}", k.ptx)
                self.assertIn(f".entry {k.kernel_name}", k.ptx)
                self.assertEqual(k.metadata["format"], "attngen-kernel-v1")
                self.assertEqual(k.metadata["arch"], arch)
                self.assertEqual(k.metadata["dtype"], dtype)
                self.assertEqual(k.metadata["head_dim"], 128)
                self.assertTrue(k.metadata["causal"])
                self.assertEqual(k.metadata["uses_tma"], arch == "sm_90a")
                self.assertIn(attngen.compiler_id(), k.cache_key)

    def test_scale_and_overrides(self):
        k = attngen.compile(arch="sm_80", head_dim=64, dtype="f16", scale=0.5)
        self.assertEqual(k.metadata["scale"], 0.5)
        k = attngen.compile(arch="sm_80", head_dim=128, block_m=64, block_n=64, num_warps=4)
        self.assertEqual((k.metadata["block_m"], k.metadata["block_n"]), (64, 64))

    def test_cache_hits(self):
        before = attngen.stats()
        a = attngen.compile(arch="sm_90a", head_dim=64, dtype="bf16")
        b = attngen.compile(arch="sm_90a", head_dim=64, dtype="bfloat16")
        after = attngen.stats()
        self.assertEqual(a.ptx, b.ptx)
        self.assertEqual(after["requests"] - before["requests"], 2)
        self.assertGreaterEqual(after["memory_hits"] - before["memory_hits"], 1)
        self.assertEqual(attngen.cache_dir(), os.environ.get("ATTNGEN_CACHE_DIR", attngen.cache_dir()))

    def test_errors(self):
        cases = [
            (dict(arch="sm_90"), "need sm_90a"),
            (dict(arch="sm_75"), "supported: sm_80, sm_90a"),
            (dict(head_dim=96), "supported: 64, 128, 256"),
            (dict(head_dim=128.0), "head_dim must be an int"),
            (dict(dtype="fp32"), "use 'bf16' or 'f16'"),
            (dict(scale=-1.0), "positive and finite"),
            (dict(scale=float("nan")), "positive and finite"),
            (dict(scale="big"), "must be a number"),
            (dict(arch="sm_90a", block_m=48), "sm_90a"),
        ]
        for kwargs, needle in cases:
            with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                with self.assertRaises(attngen.InvalidInputError) as caught:
                    attngen.compile(**kwargs)
                self.assertIn(needle, str(caught.exception))
                self.assertIsInstance(caught.exception, ValueError)

    def test_attention_without_torch(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            with self.assertRaises(ImportError) as caught:
                attngen.attention(None, None, None)
            self.assertIn("needs PyTorch", str(caught.exception))
        else:
            self.skipTest("torch is installed: test_torch.py covers attention()")


if __name__ == "__main__":
    unittest.main()
