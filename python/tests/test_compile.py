"""attngen.compile and the package's error paths; needs no GPU and no torch.

    PYTHONPATH=python ATTNGEN_CACHE_DIR=/tmp/x python3 -m unittest discover -s python/tests
"""

import importlib.util
import inspect
import os
import unittest
from unittest import mock

import attngen


class CompileTest(unittest.TestCase):
    def test_ptx_and_metadata(self):
        for arch in ("sm_80", "sm_90a"):
            for dtype in ("bf16", "f16"):
                k = attngen.compile(arch=arch, head_dim=128, dtype=dtype, causal=True)
                self.assertIsInstance(k.ptx, str)
                self.assertIn(f".target {arch}", k.ptx)
                self.assertIn(f".entry {k.kernel_name}", k.ptx)
                self.assertEqual(k.metadata["format"], "attngen-kernel-v2")
                self.assertEqual(k.metadata["arch"], arch)
                self.assertEqual(k.metadata["dtype"], dtype)
                self.assertEqual(k.metadata["head_dim"], 128)
                self.assertTrue(k.metadata["causal"])
                self.assertEqual(k.metadata["uses_tma"], arch == "sm_90a")
                self.assertIn(attngen.compiler_id(), k.cache_key)

    def test_head_dims(self):
        # Any multiple of 8 up to 256; on sm_90a each TMA box is one swizzle
        # panel of the tiles (64 columns for 128-byte panels, 32 for d96's
        # 64-byte ones, 16 for d40's 32-byte ones); O has one where its
        # tile fits beside the K/V pipes, up to d176 (attn-tma-store, also
        # checked in test_tma_store); sm_80 has no TMA.
        for head_dim, box_cols in ((8, 16), (40, 16), (96, 32), (192, 64)):
            for arch in ("sm_80", "sm_90a"):
                with self.subTest(head_dim=head_dim, arch=arch):
                    k = attngen.compile(arch=arch, head_dim=head_dim)
                    self.assertEqual(k.metadata["head_dim"], head_dim)
                    boxes = {p["tensor"]: p["box"][0] for p in k.metadata["params"]
                             if p["kind"] == "tensor_map"}
                    tensors = "qkvo" if head_dim <= 176 else "qkv"
                    self.assertEqual(boxes, {t: box_cols for t in tensors}
                                     if arch == "sm_90a" else {})
                    self.assertTrue(k.kernel_name.endswith(f"_d{head_dim}"))

    def test_tma_store(self):
        # sm_90a stores O with the TMA up to d176: a descriptor whose box
        # is one consumer warpgroup's 64 rows of one swizzle panel (64
        # columns at d64 and d128, 16 at d176); d184 and d256 have no room
        # for the tile, decoding kernels do not use it.
        for head_dim, box in ((64, [64, 64]), (128, [64, 64]), (176, [16, 64]),
                              (184, None), (256, None)):
            with self.subTest(head_dim=head_dim):
                k = attngen.compile(arch="sm_90a", head_dim=head_dim)
                boxes = [p["box"] for p in k.metadata["params"]
                         if p["kind"] == "tensor_map" and p["tensor"] == "o"]
                self.assertEqual(boxes, [box] if box else [])
        k = attngen.compile(arch="sm_90a", kv_cache=True)
        self.assertFalse(any(p["kind"] == "tensor_map" and p["tensor"] == "o"
                             for p in k.metadata["params"]))

    def test_kv_cache(self):
        # Decoding kernels: the split kernel carries its combine kernel, the
        # metadata says what the runtime must bind.
        for arch in ("sm_80", "sm_90a"):
            k = attngen.compile(arch=arch, kv_cache=True, split_kv=True, head_pack=4,
                                causal=True, causal_align="bottom-right", page_size=64)
            self.assertEqual(k.kernel_name,
                             f"attn_kvcache_{arch.replace('_', '')}_bf16_d128_causal_pack4"
                             "_page64_split")
            self.assertTrue(k.metadata["kv_cache"])
            self.assertEqual((k.metadata["page_size"], k.metadata["head_pack"]), (64, 4))
            self.assertEqual(k.metadata["grid"]["tiles"][0]["times"], "num_splits")
            self.assertIsNotNone(k.combine)
            self.assertEqual(k.combine.metadata["kind"], "combine")
            self.assertIn(f".entry {k.combine.kernel_name}", k.combine.ptx)
        self.assertIsNone(attngen.compile(kv_cache=True).combine)
        # Sliding windows decode too, bottom-right to each sequence's keys.
        k = attngen.compile(kv_cache=True, window_size=(100, 50), causal_align="bottom-right")
        self.assertEqual(k.kernel_name, "attn_kvcache_sm90a_bf16_d128_window_l100_r50")
        self.assertEqual((k.metadata["window_left"], k.metadata["window_right"]), (100, 50))
        errors = [
            (dict(kv_cache=True, page_size=24), "page size 24 is not supported"),
            (dict(kv_cache=True, head_pack=16), "head-pack = 16 does not fit block-m = 64"),
            (dict(page_size=32), "which KV-cache and varlen forward kernels do"),
            (dict(varlen=True, page_size=48, block_n=128), "block-n = 128 does not fit pages of 48"),
            (dict(kv_cache=True, causal=True, causal_align="top-left"),
             "aligns its causal diagonal and window bottom-right"),
            (dict(kv_cache=True, window_size=(128, 0), causal_align="top-left"),
             "aligns its causal diagonal and window bottom-right"),
        ]
        for kwargs, needle in errors:
            with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                with self.assertRaises(attngen.InvalidInputError) as caught:
                    attngen.compile(**kwargs)
                self.assertIn(needle, str(caught.exception))
        with self.assertRaises(TypeError):
            attngen.compile(kv_cache=1)
        # A misspelt field is refused, with the fields it could be.
        with self.assertRaises(TypeError) as caught:
            attngen.compile(soft_cap=30.0)
        self.assertIn("unknown argument 'soft_cap'", str(caught.exception))
        self.assertIn("softcap", str(caught.exception))

    def test_causal_forces_the_right_window_side_to_zero(self):
        # flash_attn's rule: causal=True with window_size=(L, R) is (L, 0).
        for arch in ("sm_90a", "sm_80"):
            with self.subTest(arch=arch):
                forced = attngen.compile(arch=arch, head_dim=64, causal=True,
                                         window_size=(256, 64))
                causal_window = attngen.compile(arch=arch, head_dim=64, window_size=(256, 0))
                self.assertEqual(forced.kernel_name, causal_window.kernel_name)
                self.assertEqual(forced.ptx, causal_window.ptx)
                self.assertTrue(forced.metadata["causal"])
                self.assertEqual(forced.metadata["window_left"], 256)

    def test_scale_and_overrides(self):
        k = attngen.compile(arch="sm_80", head_dim=64, dtype="f16", scale=0.5)
        self.assertEqual(k.metadata["scale"], 0.5)
        k = attngen.compile(arch="sm_80", head_dim=128, block_m=64, block_n=64, num_warps=4)
        self.assertEqual((k.metadata["block_m"], k.metadata["block_n"]), (64, 64))
        # Tiles other than the default's are in the name; the default's are not.
        self.assertTrue(k.kernel_name.endswith("_d128_m64n64w4"), k.kernel_name)
        default = attngen.compile(arch="sm_80", head_dim=128)
        same = attngen.compile(arch="sm_80", head_dim=128,
                               block_m=default.metadata["block_m"],
                               block_n=default.metadata["block_n"])
        self.assertEqual(same.kernel_name, default.kernel_name)

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
            (dict(head_dim=100), "head dimension 100 is not supported: use a multiple of 8"),
            (dict(head_dim=264), "head dimension 264 is not supported: the largest is 256"),
            (dict(head_dim=0), "it must be a positive multiple of 8 up to 256"),
            (dict(head_dim=128.0), "head_dim must be an int"),
            (dict(dtype="fp32"), "use 'bf16', 'f16' or 'e4m3'"),
            (dict(scale=-1.0), "positive and finite"),
            (dict(scale=float("nan")), "positive and finite"),
            (dict(scale="big"), "must be a number"),
            (dict(scale="0.1"), "scale must be a number or None, got '0.1'"),
            # The compiler's hints in Python's spelling, not the CLI's.
            (dict(block_m=64), "use num-warps = 4 (num_warps=4)"),
            (dict(page_size=32), "set kv_cache (kv_cache=True) or varlen (varlen=True)"),
            (dict(arch="sm_90a", block_m=48), "sm_90a"),
            (dict(causal=True, causal_align="bottom_right"),
             "causal_align 'bottom_right' is not supported; use 'top-left'"),
            (dict(window_size=(-2, 0)), "window left = -2 is out of range; use -1 (unbounded)"),
            (dict(window_size=(4, -5)), "window right = -5 is out of range"),
            (dict(window_size=(2**31, 0)), "window_size left = 2147483648 is out of range"),
            (dict(softcap=-1.0), "softcap -1 must be positive and finite"),
            (dict(softcap=float("nan")), "must be positive and finite (or 0 for none)"),
            (dict(softcap=1e39), "softcap 1e+39 is too large: softcap * log2(e) must not exceed"),
            (dict(softcap=10**400), "softcap 100000... (an int of 401 digits) does not fit"),
        ]
        for kwargs, needle in cases:
            with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                with self.assertRaises(attngen.InvalidInputError) as caught:
                    attngen.compile(**kwargs)
                self.assertIn(needle, str(caught.exception))
                self.assertIsInstance(caught.exception, ValueError)

    # (Comments, not docstrings: unittest -v would print a docstring instead of
    # the test's name, which package.test checks.)

    def test_argument_types(self):
        # Arguments reach the C API unchanged or not at all: flags are bools,
        # ints fit the C int, strings are whole.
        type_errors = [
            (dict(causal="False"), "causal must be a bool"),
            (dict(causal=2), "causal must be a bool"),
            (dict(causal=None), "causal must be a bool"),
            (dict(with_lse="no"), "with_lse must be a bool"),
            (dict(with_lse=1), "with_lse must be a bool"),
            (dict(arch=80), "arch must be a str"),
            (dict(causal=True, causal_align=None), "causal_align must be a str"),
            (dict(causal=True, causal_align=1), "causal_align must be a str"),
            (dict(softcap="30"), "softcap must be a number"),
            (dict(softcap=True), "softcap must be a number"),
            (dict(softcap=None), "softcap must be a number"),
            (dict(window_size=256), "window_size must be a (left, right) pair of ints"),
            (dict(window_size=(1, 2, 3)), "window_size must be a (left, right) pair"),
            (dict(window_size=None), "window_size must be a (left, right) pair"),
            (dict(window_size=(256.0, 0)), "window_size left must be an int"),
            (dict(window_size=(256, False)), "window_size right must be an int"),
        ]
        for kwargs, needle in type_errors:
            with self.subTest(**{k: repr(v) for k, v in kwargs.items()}):
                with self.assertRaises(TypeError) as caught:
                    attngen.compile(**kwargs)
                self.assertIn(needle, str(caught.exception))
        value_errors = [
            (dict(head_dim=2**32 + 128), "head_dim = 4294967424 is out of range"),
            (dict(head_dim=2**31 + 128), "head_dim = 2147483776 is out of range"),
            (dict(head_dim=-2**31 - 1), "head_dim = -2147483649 is out of range"),
            (dict(block_m=2**40), "block_m = 1099511627776 is out of range"),
            (dict(num_warps=2**31), "num_warps = 2147483648 is out of range"),
            (dict(arch=""), "unsupported arch ''"),
            (dict(arch="sm_80\0sm_90a"), "contains a NUL character"),
            (dict(dtype="bf16\0"), "is not supported"),
            (dict(scale=float("inf")), "positive and finite"),
            (dict(scale=True), "must be a number"),
            (dict(scale=10**400), "must be a number"),
        ]
        for kwargs, needle in value_errors:
            with self.subTest(**{k: repr(v) for k, v in kwargs.items()}):
                with self.assertRaises(attngen.InvalidInputError) as caught:
                    attngen.compile(**kwargs)
                self.assertIn(needle, str(caught.exception))

    def test_flags_take_effect(self):
        k = attngen.compile(arch="sm_80", head_dim=64, causal=False, with_lse=False)
        self.assertFalse(k.metadata["causal"])
        self.assertFalse(k.metadata["lse"])
        self.assertTrue(k.kernel_name.endswith("_nolse"))
        k = attngen.compile(arch="sm_80", head_dim=64, causal=True)
        self.assertTrue(k.metadata["causal"])
        self.assertTrue(k.metadata["lse"])

    def test_causal_align(self):
        # The alignment is in the kernel name, the metadata and the cache key,
        # on both targets; compile() defaults to bottom-right, as every surface.
        for arch in ("sm_80", "sm_90a"):
            with self.subTest(arch=arch):
                br = attngen.compile(arch=arch, head_dim=64, causal=True)
                tl = attngen.compile(arch=arch, head_dim=64, causal=True,
                                     causal_align="top-left")
                plain = attngen.compile(arch=arch, head_dim=64)
                self.assertTrue(br.kernel_name.endswith("_d64_causal"), br.kernel_name)
                self.assertTrue(tl.kernel_name.endswith("_d64_causal_tl"), tl.kernel_name)
                self.assertEqual(br.metadata["causal_align"], "bottom-right")
                self.assertEqual(tl.metadata["causal_align"], "top-left")
                self.assertEqual(plain.metadata["causal_align"], "none")
                self.assertIn("causal_align=bottom_right", br.cache_key)
                self.assertIn("causal_align=top_left", tl.cache_key)
                self.assertNotEqual(br.ptx, tl.ptx)
                self.assertEqual(attngen.compile(arch=arch, head_dim=64, causal=True,
                                                 causal_align="bottom-right").ptx, br.ptx)
                # Without a diagonal the alignment changes nothing.
                self.assertEqual(attngen.compile(arch=arch, head_dim=64,
                                                 causal_align="top-left").ptx, plain.ptx)

    def test_alibi(self):
        # ALiBi reads a slopes tensor: in the name, the metadata and its
        # params on both targets; the KV cache (split and packed too, whose
        # combine kernel reads no slopes) and the backward read them.
        for arch in ("sm_80", "sm_90a"):
            with self.subTest(arch=arch):
                k = attngen.compile(arch=arch, head_dim=64, causal=True, alibi=True)
                self.assertTrue(k.kernel_name.endswith("_d64_causal_alibi"), k.kernel_name)
                self.assertIs(k.metadata["alibi"], True)
                params = {(p["name"], p["kind"]) for p in k.metadata["params"]}
                self.assertIn(("alibi_slopes", "pointer"), params)
                self.assertIn(("alibi_slopes_stride_b", "stride"), params)
                self.assertIn("alibi=1", k.cache_key)
                plain = attngen.compile(arch=arch, head_dim=64, causal=True)
                self.assertIs(plain.metadata["alibi"], False)
                self.assertNotIn("alibi_slopes", plain.ptx)
        for arch in ("sm_80", "sm_90a"):
            k = attngen.compile(arch=arch, alibi=True, kv_cache=True, split_kv=True,
                                head_pack=4, page_size=64)
            self.assertIn("_alibi_pack4_page64_split", k.kernel_name)
            self.assertIn("alibi_slopes", {p["name"] for p in k.metadata["params"]})
            self.assertEqual(k.metadata["causal_align"], "bottom-right")
            self.assertIs(k.combine.metadata["alibi"], False)
        # The backward's kernels read the slopes too (the recomputed P).
        for part in ("dq", "dkdv"):
            k = attngen.compile(arch="sm_90a", head_dim=64, alibi=True, backward=part)
            self.assertIn("alibi_slopes", {p["name"] for p in k.metadata["params"]})
            self.assertIn("abs.ftz.f32", k.ptx)

    def test_head_dim_v(self):
        # V and O with a head dim of their own (DeepSeek's 192/128) on both
        # targets, dense, varlen and KV cache; V as wide as Q is the plain
        # kernel; the one-kernel backward has one head dim and says so.
        for arch in ("sm_80", "sm_90a"):
            with self.subTest(arch=arch):
                k = attngen.compile(arch=arch, head_dim=192, head_dim_v=128, causal=True)
                self.assertEqual((k.metadata["head_dim"], k.metadata["head_dim_v"]), (192, 128))
                self.assertIn("_d192v128_causal", k.kernel_name)
                k = attngen.compile(arch=arch, head_dim=64, head_dim_v=128, varlen=True)
                self.assertIn("_d64v128_varlen", k.kernel_name)
                k = attngen.compile(arch=arch, head_dim=192, head_dim_v=128, kv_cache=True,
                                    page_size=64, split_kv=True)
                self.assertEqual(k.kernel_name, f"attn_kvcache_{arch.replace('_', '')}_bf16_"
                                                "d192v128_page64_split")
                self.assertEqual(k.metadata["head_dim_v"], 128)
        # The deterministic backward pair takes it too.
        for part in ("dq", "dkdv"):
            k = attngen.compile(head_dim=192, head_dim_v=128, backward=part)
            self.assertIn(f"attn_bwd_{part}_sm90a_bf16_d192v128", k.kernel_name)
            self.assertEqual(k.metadata["head_dim_v"], 128)
        same = attngen.compile(head_dim=128, head_dim_v=128)
        self.assertEqual(same.ptx, attngen.compile(head_dim=128).ptx)
        self.assertEqual(same.metadata["head_dim_v"], 0)
        for fields, needle in (
                (dict(head_dim_v=100), "value head dimension 100 is not supported"),
                (dict(head_dim=128, head_dim_v=64, backward="fused"),
                 "not supported by the one-kernel backward (pre, fused, post); use the "
                 "deterministic pair")):
            with self.subTest(**fields):
                with self.assertRaises(attngen.InvalidInputError) as caught:
                    attngen.compile(**fields)
                self.assertIn(needle, str(caught.exception))

    def test_softcap(self):
        # The cap is in the name, the metadata and the key on both targets;
        # 0 (the default) is no cap, an int is taken as a float.
        for arch in ("sm_80", "sm_90a"):
            with self.subTest(arch=arch):
                k = attngen.compile(arch=arch, head_dim=64, causal=True, softcap=30)
                self.assertTrue(k.kernel_name.endswith("_d64_causal_softcap30"), k.kernel_name)
                self.assertEqual(k.metadata["softcap"], 30)
                self.assertIn("tanh.approx.f32", k.ptx)
                self.assertIn("softcap=0x1.ep+4", k.cache_key)
                plain = attngen.compile(arch=arch, head_dim=64, causal=True)
                self.assertEqual(plain.metadata["softcap"], 0)
                self.assertNotIn("tanh", plain.ptx)
                self.assertEqual(attngen.compile(arch=arch, head_dim=64, causal=True,
                                                 softcap=0.0).ptx, plain.ptx)
        self.assertEqual(
            inspect.signature(attngen.attention).parameters["softcap"].default, 0.0)

    def test_window(self):
        # The window is in the name, the metadata and the key on both
        # targets; FlashAttention's spellings of one mask are one kernel;
        # (-1, -1) is no window.
        for arch in ("sm_80", "sm_90a"):
            with self.subTest(arch=arch):
                k = attngen.compile(arch=arch, head_dim=64, window_size=(100, 50),
                                    causal_align="bottom-right")
                self.assertTrue(k.kernel_name.endswith("_d64_window_l100_r50"),
                                k.kernel_name)
                self.assertEqual((k.metadata["window_left"], k.metadata["window_right"]),
                                 (100, 50))
                self.assertFalse(k.metadata["causal"])
                self.assertEqual(k.metadata["causal_align"], "bottom-right")
                self.assertIn("window_left=100 window_right=50", k.cache_key)
                # An unbounded side is spelt, so that no two windows share a name.
                self.assertTrue(attngen.compile(arch=arch, head_dim=64, window_size=(0, -1))
                                .kernel_name.endswith("_d64_window_l0_rinf"))
                self.assertTrue(attngen.compile(arch=arch, head_dim=64, window_size=(-1, 64),
                                                causal_align="top-left")
                                .kernel_name.endswith("_d64_window_linf_r64_tl"))
                causal = attngen.compile(arch=arch, head_dim=64, causal=True,
                                         window_size=(256, -1))
                zero = attngen.compile(arch=arch, head_dim=64, window_size=(256, 0))
                self.assertEqual(causal.cache_key, zero.cache_key)
                self.assertTrue(zero.kernel_name.endswith("_d64_window_l256_r0"),
                                zero.kernel_name)
                self.assertTrue(zero.metadata["causal"])
                # The metadata says the right side that causal forces, as the name.
                self.assertEqual((zero.metadata["window_left"], zero.metadata["window_right"]),
                                 (256, 0))
                plain_causal = attngen.compile(arch=arch, head_dim=64, causal=True)
                self.assertEqual(attngen.compile(arch=arch, head_dim=64,
                                                 window_size=(-1, 0)).ptx, plain_causal.ptx)
                plain = attngen.compile(arch=arch, head_dim=64)
                self.assertEqual(attngen.compile(arch=arch, head_dim=64,
                                                 window_size=[-1, -1]).ptx, plain.ptx)
                self.assertEqual(plain.metadata["window_left"], -1)
        self.assertEqual(
            inspect.signature(attngen.attention).parameters["window_size"].default, (-1, -1))

    def test_attention_defaults_to_bottom_right(self):
        # As flash_attn_func; top-left is one keyword away (documented change).
        parameter = inspect.signature(attngen.attention).parameters["causal_align"]
        self.assertEqual(parameter.default, "bottom-right")
        self.assertEqual(parameter.kind, inspect.Parameter.KEYWORD_ONLY)
        # compile's fields are KernelSpec's, whose default is the C API's: the same.
        self.assertEqual(attngen.compile(arch="sm_80", causal=True).metadata["causal_align"],
                         "bottom-right")

    def test_overflowing_scale_is_refused_and_not_cached(self):
        # A scale whose float32 is inf gives an attngen error, never a raw
        # JSONDecodeError, and leaves no entry in the disk cache.
        folder = attngen.cache_dir()
        before = set(os.listdir(folder)) if os.path.isdir(folder) else set()
        for scale in (1e39, 3.5e38):
            with self.subTest(scale=scale):
                with self.assertRaises(attngen.AttngenError):
                    attngen.compile(arch="sm_80", head_dim=64, dtype="f16", scale=scale)
        after = set(os.listdir(folder)) if os.path.isdir(folder) else set()
        self.assertEqual({name for name in after - before if name.endswith(".kernel")}, set())

    def test_metadata_that_is_not_json(self):
        # Python wraps a metadata parse failure in a clear AttngenError.
        attngen.compile(arch="sm_80", head_dim=64)
        with mock.patch.object(attngen._capi.lib, "attngen_compiled_metadata",
                               lambda handle: b'{"scale": inf}'):
            with self.assertRaises(attngen.AttngenError) as caught:
                attngen.compile(arch="sm_80", head_dim=64)
        self.assertIn("is not valid JSON", str(caught.exception))
        self.assertEqual(caught.exception.status, "ATTNGEN_ERROR_COMPILE")

    def test_attention_without_torch(self):
        if importlib.util.find_spec("torch") is not None:
            self.skipTest("torch is installed: test_torch.py covers attention()")
        with self.assertRaises(ImportError) as caught:
            attngen.attention(None, None, None)
        self.assertIn("needs PyTorch", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
