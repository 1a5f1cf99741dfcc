"""The backward pass without a GPU: its kernels compile (names, metadata),
attngen.attention_backward's argument checks, and the autograd of
attngen.attention traced with fake tensors (the backward op's shapes).
gpu/backward_check.py checks the gradients themselves on the GPU.

    PYTHONPATH=python python3 -m unittest python/tests/test_backward.py -v
"""

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
                                 f"attn_bwd_{part}_{arch.replace('_', '')}_bf16_d64_causal_br")
                self.assertEqual(kernel.metadata["backward"], part)
                tensors = {p.get("tensor") for p in kernel.metadata["params"]}
                self.assertTrue({"dout", "delta", "dq", "dk", "dv", "lse"} <= tensors)

    def test_forward_kernels_say_none(self):
        self.assertEqual(attngen.compile(head_dim=64).metadata["backward"], "none")

    def test_refusals(self):
        with self.assertRaisesRegex(attngen.InvalidInputError, "up to 128"):
            attngen.compile(head_dim=256, backward="dq")
        with self.assertRaisesRegex(attngen.InvalidInputError, "variable-length"):
            attngen.compile(head_dim=64, varlen=True, backward="dkdv")
        with self.assertRaisesRegex(attngen.InvalidInputError, "'dq' or 'dkdv'"):
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
        self.assertInvalid("dout must have q's shape", dout=dout[:, :30])
        self.assertInvalid("out must have q's shape", out=out.half())
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
class AutogradTraceTest(unittest.TestCase):
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
