"""The backward pass without a GPU: its kernels compile (names, metadata),
attngen.attention_backward's argument checks, and the autograd of
attngen.attention traced with fake tensors (the backward op's shapes).
gpu/backward_check.py checks the gradients themselves on the GPU.

    PYTHONPATH=python python3 -m unittest python/tests/test_backward.py -v
"""

import os
import unittest

import attngen
from attngen import _spec

try:
    import torch
except ImportError:
    torch = None


class BackwardKernelTest(unittest.TestCase):
    def test_both_kernels_compile(self):
        for arch in ("sm_90a", "sm_80"):
            for part in ("dq", "dkdv"):
                kernel = attngen.compile(arch=arch, head_dim=64, causal=True,
                                         causal_align="bottom-right", backward=part)
                self.assertEqual(kernel.kernel_name,
                                 f"attn_bwd_{part}_{arch.replace('_', '')}_bf16_d64_causal")
                self.assertEqual(kernel.metadata["backward"], part)
                tensors = {p.get("tensor") for p in kernel.metadata["params"]}
                self.assertTrue({"dout", "delta", "dq", "dk", "dv", "lse"} <= tensors)

    def test_varlen_kernels_compile(self):
        # A packed batch: grids over the longest sequence (max_seqlen_q for
        # dq, max_seqlen_k for dkdv), the cu_seqlens pointers among the params.
        for part, size in (("dq", "max_seqlen_q"), ("dkdv", "max_seqlen_k")):
            for arch in ("sm_90a", "sm_80"):
                kernel = attngen.compile(arch=arch, head_dim=96, varlen=True, causal=True,
                                         backward=part)
                self.assertTrue(kernel.kernel_name.startswith(f"attn_bwd_{part}_"))
                self.assertIn("_varlen", kernel.kernel_name)
                self.assertTrue(kernel.metadata["varlen"])
                self.assertEqual(kernel.metadata["grid"]["tiles"][0]["size"], size)
                tensors = {p.get("tensor") for p in kernel.metadata["params"]}
                self.assertTrue({"cu_seqlens_q", "cu_seqlens_k", "delta", "dk"} <= tensors)

    def test_one_kernel_backward_compiles(self):
        # pre and post own query blocks, fused key blocks; all three take the
        # f32 dQ accumulator, which fused adds into with TMA reductions.
        for part, size in (("pre", "nq"), ("fused", "nk"), ("post", "nq")):
            kernel = attngen.compile(arch="sm_90a", head_dim=128, causal=True, backward=part)
            self.assertEqual(kernel.kernel_name, f"attn_bwd_{part}_sm90a_bf16_d128_causal")
            self.assertEqual(kernel.metadata["backward"], part)
            self.assertEqual(kernel.metadata["grid"]["tiles"][0]["size"], size)
            tensors = {p.get("tensor") for p in kernel.metadata["params"]}
            self.assertIn("dq_accum", tensors)
        fused = attngen.compile(arch="sm_90a", head_dim=64, backward="fused")
        self.assertIn("cp.reduce.async.bulk.tensor.4d.global.shared::cta.add", fused.ptx)
        self.assertNotIn("dq_accum", {p.get("tensor") for p in
                                      attngen.compile(head_dim=64, backward="dkdv")
                                      .metadata["params"]})
        # sm_80's adds from registers (red.global.add), with mma.sync, and
        # takes no descriptor.
        sm80 = attngen.compile(arch="sm_80", head_dim=128, causal=True, backward="fused")
        self.assertEqual(sm80.kernel_name, "attn_bwd_fused_sm80_bf16_d128_causal")
        self.assertIn("red.global.add.f32", sm80.ptx)
        self.assertNotIn("cp.reduce.async.bulk", sm80.ptx)
        self.assertNotIn("tensor_map", {p["kind"] for p in sm80.metadata["params"]})
        self.assertIn("dq_accum", {p.get("tensor") for p in sm80.metadata["params"]})
        # sm_80's copies zero-fill past each sequence, so a packed batch
        # takes it too (sm_90a's TMA would read the next sequence's keys).
        packed = attngen.compile(arch="sm_80", head_dim=64, varlen=True, backward="fused")
        self.assertEqual(packed.metadata["grid"]["tiles"][0]["size"], "max_seqlen_k")
        # The fused kernel needs a dense batch and head dims 64 or 128.
        for fields, needle in ((dict(head_dim=64, varlen=True), "on sm_90a does not support "
                                "variable-length"),
                               (dict(arch="sm_80", head_dim=96), "head dims 64 and 128"),
                               (dict(head_dim=96), "head dims 64 and 128")):
            with self.assertRaisesRegex(attngen.InvalidInputError, needle):
                attngen.compile(backward="fused", **fields)

    def test_fits_smaller_shared_memory(self):
        # An sm_80 kernel on a 99 KB GPU (RTX 4090): the JIT passes max_smem.
        k = attngen.compile(arch="sm_80", head_dim=256, backward="dq", max_smem=101376)
        self.assertEqual(k.metadata["block_n"], 32)
        self.assertLessEqual(k.metadata["smem_bytes"], 101376)
        with self.assertRaisesRegex(attngen.InvalidInputError,
                                    "more than max_smem=101376; use a smaller block-n"):
            attngen.compile(arch="sm_80", head_dim=256, backward="dq", max_smem=101376,
                            block_n=64)

    def test_forward_kernels_say_none(self):
        self.assertEqual(attngen.compile(head_dim=64).metadata["backward"], "none")

    def test_refusals(self):
        with self.assertRaisesRegex(attngen.InvalidInputError, "head dims 64 and 128"):
            attngen.compile(head_dim=256, backward="fused")
        with self.assertRaisesRegex(attngen.InvalidInputError, "use 'dq' or 'dkdv'"):
            _spec.KernelSpec(backward="dx").struct("compile")


@unittest.skipIf(torch is None, "needs torch")
class BackwardArgumentTest(unittest.TestCase):
    def tensors(self, b=2, nq=40, nk=50, h=4, hkv=2, d=64):
        q = torch.randn(b, nq, h, d, dtype=torch.bfloat16)
        k = torch.randn(b, nk, hkv, d, dtype=torch.bfloat16)
        v = torch.randn(b, nk, hkv, d, dtype=torch.bfloat16)
        lse = torch.randn(b, h, nq)
        return q, k, v, torch.randn_like(q), torch.randn_like(q), lse

    def assertInvalid(self, needle, **changes):
        q, k, v, out, dout, lse = self.tensors()
        named = dict(dout=dout, q=q, k=k, v=v, out=out, lse=lse)
        named.update(changes)
        with self.assertRaises(attngen.InvalidInputError) as caught:
            attngen.attention_backward(named["dout"], named["q"], named["k"], named["v"],
                                       named["out"], named["lse"], causal=True)
        self.assertIn(needle, str(caught.exception))

    def test_shapes_and_dtypes(self):
        q, k, v, out, dout, lse = self.tensors()
        self.assertInvalid("dout must have the forward output's shape", dout=dout[:, :30])
        self.assertInvalid("out must have the forward output's shape", out=out.half())
        self.assertInvalid("lse must be the forward's log-sum-exp", lse=lse[:, :2])
        self.assertInvalid("lse must be the forward's log-sum-exp", lse=lse.double())
        self.assertInvalid("multiples of 8", dout=torch.randn(2, 40, 4, 68,
                                                               dtype=torch.bfloat16)[..., :64])
        # Every shape check passes on CPU tensors; the device check comes last.
        self.assertInvalid("attngen runs on CUDA devices")

    def test_options(self):
        q, k, v, out, dout, lse = self.tensors()
        with self.assertRaises(TypeError):
            attngen.attention_backward(dout, q, k, v, out, lse, deterministic=1)
        with self.assertRaises(attngen.InvalidInputError):
            attngen.attention_backward(dout, q, k, v, out, lse, causal_align="middle")


@unittest.skipIf(torch is None, "needs torch")
class VarlenBackwardArgumentTest(unittest.TestCase):
    def call(self, **changes):
        total_q, total_k, h, hkv, d = 70, 90, 4, 2, 64
        named = dict(
            dout=torch.randn(total_q, h, d, dtype=torch.bfloat16),
            q=torch.randn(total_q, h, d, dtype=torch.bfloat16),
            k=torch.randn(total_k, hkv, d, dtype=torch.bfloat16),
            v=torch.randn(total_k, hkv, d, dtype=torch.bfloat16),
            out=torch.randn(total_q, h, d, dtype=torch.bfloat16),
            lse=torch.randn(h, total_q),
            cu_seqlens_q=torch.tensor([0, 30, 70], dtype=torch.int32),
            cu_seqlens_k=torch.tensor([0, 50, 90], dtype=torch.int32),
            max_seqlen_q=40, max_seqlen_k=50)
        named.update(changes)
        return attngen.attention_varlen_backward(**named, causal=True)

    def assertInvalid(self, needle, **changes):
        with self.assertRaises(attngen.InvalidInputError) as caught:
            self.call(**changes)
        self.assertIn(needle, str(caught.exception))

    def test_shapes_and_dtypes(self):
        self.assertInvalid("dout must have the forward output's shape",
                           dout=torch.randn(60, 4, 64, dtype=torch.bfloat16))
        self.assertInvalid("lse must be the forward's log-sum-exp (heads, total_q)"
                           .replace(" (heads, total_q)", ""), lse=torch.randn(2, 4, 35))
        self.assertInvalid("cu_seqlens_q has 2 entries",
                           cu_seqlens_q=torch.tensor([0, 70], dtype=torch.int32))
        # Every shape check passes on CPU tensors; the device check comes last.
        self.assertInvalid("attngen runs on CUDA devices")

    def test_deterministic_is_a_bool(self):
        with self.assertRaises(TypeError):
            self.call(deterministic=1)


@unittest.skipIf(torch is None, "needs torch")
class FusedBackwardChoiceTest(unittest.TestCase):
    """Which backward deterministic=False runs: the one-kernel backward at
    head dim 128 on sm_90a, but not causal over at most 1k keys, and at
    head dim 64 causal over more (ATTNGEN_FUSED_BACKWARD=1 wherever it
    applies, =0 nowhere),
    the deterministic pair otherwise."""

    def setUp(self):
        from attngen import _torch_backward
        self.module = _torch_backward
        self.saved_env = os.environ.pop("ATTNGEN_FUSED_BACKWARD", None)
        self.saved_arch = dict(_torch_backward._FUSED_ARCH)
        # CPU tensors have device index None: say it is an sm_90a device.
        _torch_backward._FUSED_ARCH[None] = "sm_90a"

    def tearDown(self):
        os.environ.pop("ATTNGEN_FUSED_BACKWARD", None)
        if self.saved_env is not None:
            os.environ["ATTNGEN_FUSED_BACKWARD"] = self.saved_env
        self.module._FUSED_ARCH.clear()
        self.module._FUSED_ARCH.update(self.saved_arch)

    def runs_fused(self, d, deterministic=False, env=None, causal=False, nk=8, hkv=2):
        if env is not None:
            os.environ["ATTNGEN_FUSED_BACKWARD"] = env
        return self.module._runs_fused(torch.empty(1, 8, 2, d), torch.empty(1, nk, hkv, d),
                                       causal, deterministic)

    def test_default(self):
        self.assertTrue(self.runs_fused(128))
        self.assertFalse(self.runs_fused(64))
        self.assertTrue(self.runs_fused(64, causal=True, nk=1025))
        self.assertTrue(self.runs_fused(64, causal=True, nk=8192, hkv=1))
        self.assertFalse(self.runs_fused(64, causal=True, nk=1024))
        self.assertFalse(self.runs_fused(256))
        self.assertFalse(self.runs_fused(128, deterministic=True))
        # Causal over at most 1k keys the pair is the faster.
        self.assertFalse(self.runs_fused(128, causal=True, nk=1024))
        self.assertTrue(self.runs_fused(128, causal=True, nk=1025))
        self.assertTrue(self.runs_fused(128, causal=False, nk=1024))
        # Grouped heads run it, causal or not.
        self.assertTrue(self.runs_fused(128, causal=True, nk=8192, hkv=1))
        self.assertTrue(self.runs_fused(128, causal=False, nk=8192, hkv=1))

    def test_environment(self):
        self.assertTrue(self.runs_fused(64, env="1"))
        self.assertTrue(self.runs_fused(128, env="1"))
        self.assertFalse(self.runs_fused(96, env="1"))
        self.assertTrue(self.runs_fused(128, env="1", causal=True, nk=1024))
        self.assertTrue(self.runs_fused(128, env="1", causal=True, nk=8192, hkv=1))
        self.assertFalse(self.runs_fused(128, env="0"))
        self.assertFalse(self.runs_fused(128, deterministic=True, env="1"))
        with self.assertRaises(attngen.InvalidInputError) as caught:
            self.runs_fused(128, env="yes")
        self.assertIn("use 1", str(caught.exception))

    def test_sm80(self):
        # sm_80's one-kernel backward runs only when asked for (not measured
        # against the pair yet).
        self.module._FUSED_ARCH[None] = "sm_80"
        self.assertFalse(self.runs_fused(128))
        self.assertFalse(self.runs_fused(64, causal=True, nk=8192))
        self.assertTrue(self.runs_fused(128, env="1"))
        self.assertTrue(self.runs_fused(64, env="1"))
        self.assertFalse(self.runs_fused(96, env="1"))
        self.assertFalse(self.runs_fused(128, deterministic=True, env="1"))

    def test_varlen(self):
        # A packed batch: sm_80 kernels, ATTNGEN_FUSED_BACKWARD=1, head dims
        # 64 and 128 with one head dim, not deterministic.
        def runs(d=128, dv=None, env="1", deterministic=False):
            if env is not None:
                os.environ["ATTNGEN_FUSED_BACKWARD"] = env
            else:
                os.environ.pop("ATTNGEN_FUSED_BACKWARD", None)
            return self.module._runs_fused_varlen(torch.empty(8, 2, d),
                                                  torch.empty(8, 2, dv or d), deterministic)
        self.module._FUSED_ARCH[None] = "sm_80"
        self.assertTrue(runs())
        self.assertTrue(runs(d=64))
        self.assertFalse(runs(env=None))
        self.assertFalse(runs(env="0"))
        self.assertFalse(runs(d=96))
        self.assertFalse(runs(d=128, dv=64))
        self.assertFalse(runs(deterministic=True))
        self.module._FUSED_ARCH[None] = "sm_90a"
        self.assertFalse(runs())

    def test_torch_deterministic_algorithms(self):
        torch.use_deterministic_algorithms(True)
        try:
            self.assertFalse(self.runs_fused(128))
        finally:
            torch.use_deterministic_algorithms(False)


@unittest.skipIf(torch is None, "needs torch")
class AutogradTraceTest(unittest.TestCase):
    def test_varlen_meta_tensors_get_gradients(self):
        # attngen::attention_varlen's autograd calls the varlen backward op,
        # whose fake implementation gives dq, dk, dv shaped as q, k, v.
        q = torch.empty(70, 8, 64, dtype=torch.bfloat16, device="meta", requires_grad=True)
        k = torch.empty(90, 2, 64, dtype=torch.bfloat16, device="meta", requires_grad=True)
        v = torch.empty(90, 2, 64, dtype=torch.bfloat16, device="meta", requires_grad=True)
        cu_q = torch.empty(3, dtype=torch.int32, device="meta")
        cu_k = torch.empty(3, dtype=torch.int32, device="meta")
        out, lse = torch.ops.attngen.attention_varlen(q, k, v, cu_q, cu_k, 40, 50, True, 0.0,
                                                      True, "bottom-right", 0.0, -1, -1, False)
        self.assertEqual(tuple(lse.shape), (8, 70))
        dq, dk, dv = torch.autograd.grad(out, (q, k, v), torch.ones_like(out))
        self.assertEqual([tuple(t.shape) for t in (dq, dk, dv)],
                         [(70, 8, 64), (90, 2, 64), (90, 2, 64)])

    def test_meta_tensors_get_gradients_of_their_inputs_shapes(self):
        # attngen::attention's autograd calls attngen::attention_backward,
        # whose fake implementation gives dq, dk, dv shaped as q, k, v (GQA:
        # per key/value head); only the inputs that require grad get one.
        q = torch.empty(2, 96, 8, 64, dtype=torch.bfloat16, device="meta", requires_grad=True)
        k = torch.empty(2, 80, 2, 64, dtype=torch.bfloat16, device="meta", requires_grad=True)
        v = torch.empty(2, 80, 2, 64, dtype=torch.bfloat16, device="meta")
        out, lse = torch.ops.attngen.attention(q, k, v, True, 0.0, True, "bottom-right", 0.0,
                                               -1, -1)
        self.assertEqual(tuple(lse.shape), (2, 8, 96))
        dq, dk = torch.autograd.grad(out, (q, k), torch.ones_like(out))
        self.assertEqual(tuple(dq.shape), (2, 96, 8, 64))
        self.assertEqual(tuple(dk.shape), (2, 80, 2, 64))

    def test_backward_op_fake_shapes(self):
        q = torch.empty(1, 32, 4, 64, dtype=torch.bfloat16, device="meta")
        kv = torch.empty(1, 48, 1, 64, dtype=torch.bfloat16, device="meta")
        lse = torch.empty(1, 4, 32, device="meta")
        dq, dk, dv = torch.ops.attngen.attention_backward(q, q, kv, kv, q, lse, True, 0.0,
                                                          "bottom-right", 0.0, -1, -1)
        self.assertEqual([tuple(t.shape) for t in (dq, dk, dv)],
                         [(1, 32, 4, 64), (1, 48, 1, 64), (1, 48, 1, 64)])


if __name__ == "__main__":
    unittest.main()
