"""FP8 attention (float8_e4m3fn q, k, v with descales): the argument checks,
which run without a GPU, the K-major copy of v, and on a GPU (sm_90a) the
results against float64 attention on the dequantized inputs.

    PYTHONPATH=python python3 -m unittest python/tests/test_fp8.py -v
"""

import unittest

import attngen

try:
    import torch
    HAVE_FP8 = hasattr(torch, "float8_e4m3fn")
    HAVE_SM90 = (HAVE_FP8 and torch.cuda.is_available() and
                 torch.cuda.get_device_capability() >= (9, 0))
except ImportError:
    torch = None
    HAVE_FP8 = HAVE_SM90 = False


def fp8(*shape, device="cpu"):
    """Random e4m3 values of moderate size."""
    return torch.randn(*shape, device=device).clamp(-8, 8).to(torch.float8_e4m3fn)


@unittest.skipUnless(HAVE_FP8, "needs torch with float8_e4m3fn")
class Fp8ArgumentTest(unittest.TestCase):
    """Refusals that happen before any device work."""

    def setUp(self):
        self.q, self.k, self.v = fp8(1, 8, 4, 128), fp8(1, 8, 2, 128), fp8(1, 8, 2, 128)

    def check_refused(self, pattern, *args, **kwargs):
        with self.assertRaisesRegex(ValueError, pattern):
            attngen.attention(*args, **kwargs)

    def test_every_input_fp8(self):
        self.check_refused("k has dtype torch.bfloat16: FP8 attention takes "
                           "torch.float8_e4m3fn q, k and v",
                           self.q, self.k.to(torch.bfloat16), self.v)

    def test_descales_only_with_fp8(self):
        b = torch.zeros(1, 8, 4, 128, dtype=torch.bfloat16)
        one = torch.ones(1)
        self.check_refused("q has dtype torch.bfloat16: FP8 attention", b, b, b,
                           q_descale=one)

    def test_head_dims(self):
        q, k = fp8(1, 8, 4, 96), fp8(1, 8, 2, 96)
        self.check_refused(r"FP8 attention supports head dims 64, 128, 256, not 96; pad q, k "
                           r"and v with zero columns", q, k, k)

    def test_descale_shape_and_dtype(self):
        self.check_refused(r"k_descale has shape \(4,\); it must hold one element \(per "
                           r"tensor\) or be \(batch, kv_heads\) = \(1, 2\)",
                           self.q, self.k, self.v, k_descale=torch.ones(4))
        self.check_refused("v_descale must be float32", self.q, self.k, self.v,
                           v_descale=torch.ones(1, 2, dtype=torch.float16))

    def test_no_softcap_or_alibi_yet(self):
        self.check_refused("FP8 attention does not support softcap yet", self.q, self.k,
                           self.v, softcap=30.0)
        self.check_refused("FP8 attention does not support alibi_slopes yet", self.q, self.k,
                           self.v, alibi_slopes=torch.ones(4))

    def test_gqa_groups(self):
        self.check_refused("q has 4 heads and k/v have 3", self.q, fp8(1, 8, 3, 128),
                           fp8(1, 8, 3, 128))

    def test_other_functions_refuse_fp8(self):
        q = fp8(8, 4, 64)
        cu = torch.tensor([0, 8], dtype=torch.int32)
        with self.assertRaisesRegex(ValueError, "FP8 has the dense forward of "
                                                "attngen.attention only"):
            attngen.attention_varlen(q, q, q, cu, cu, 8, 8)

    def test_key_major_copy(self):
        from attngen._torch_fp8 import key_major
        v = fp8(2, 37, 3, 64)
        vk = key_major(v)
        self.assertEqual(tuple(vk.shape), tuple(v.shape))
        self.assertEqual(vk.stride()[1], 1)
        self.assertEqual(vk.stride()[3] % 16, 0)  # 37 keys padded to 48
        self.assertTrue(torch.equal(vk.view(torch.uint8), v.view(torch.uint8)))
        # Already K-major: used in place.
        self.assertIs(key_major(vk), vk)


def dequantized_reference(q, k, v, descales, causal, scale):
    """float64 attention on q, k, v (e4m3) times their descales, bottom-right
    causal; out and the natural-log LSE."""
    b, nq, h, d = q.shape
    nk, hkv = k.shape[1], k.shape[2]
    group = h // hkv

    def deq(x, s, heads_per_descale):
        """x times its descale: one value, or one per (batch, kv head), which
        covers `heads_per_descale` heads of x (q's group)."""
        x = x.double()
        if s is None:
            return x
        s = s.double()
        if s.numel() == 1:
            return x * s.reshape(1, 1, 1, 1)
        return x * s.repeat_interleave(heads_per_descale, dim=1)[:, None, :, None]
    qd, kd, vd = (deq(x, s, g) for x, s, g in zip((q, k, v), descales, (group, 1, 1)))
    kd, vd = kd.repeat_interleave(group, 2), vd.repeat_interleave(group, 2)
    s = torch.einsum("bqhd,bkhd->bhqk", qd, kd) * scale
    if causal:
        rows = torch.arange(nq, device=q.device)[:, None] + nk - nq
        s = s.masked_fill(torch.arange(nk, device=q.device)[None, :] > rows, float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - torch.where(torch.isinf(lse), 0.0, lse)[..., None])
    return torch.einsum("bhqk,bkhd->bqhd", p, vd), lse


@unittest.skipUnless(HAVE_SM90, "needs an sm_90 GPU and torch with float8_e4m3fn")
class Fp8GpuTest(unittest.TestCase):
    def test_matches_dequantized_reference(self):
        torch.manual_seed(0)
        for b, nq, nk, h, hkv, d, causal in ((2, 130, 257, 4, 2, 128, True),
                                             (1, 77, 77, 8, 8, 64, False),
                                             (1, 200, 129, 2, 1, 256, True)):
            q, k, v = (fp8(b, n, heads, d, device="cuda")
                       for n, heads in ((nq, h), (nk, hkv), (nk, hkv)))
            descales = (torch.rand(b, hkv, device="cuda") + 0.5,
                        torch.full((1,), 0.7, device="cuda"), None)
            out, lse = attngen.attention(q, k, v, causal=causal, return_lse=True,
                                         q_descale=descales[0], k_descale=descales[1],
                                         v_descale=descales[2])
            ref, ref_lse = dequantized_reference(q, k, v, descales, causal, d ** -0.5)
            self.assertEqual(out.dtype, torch.bfloat16)
            # P rounds to e4m3 (3 mantissa bits) before P V.
            scale = ref.abs().max().item()
            self.assertLess((out.double() - ref).abs().max().item(), 0.08 * scale)
            finite = torch.isfinite(ref_lse)
            self.assertTrue(torch.equal(finite, torch.isfinite(lse)))
            self.assertLess((lse.double() - ref_lse)[finite].abs().max().item(), 1e-2)

    def test_torch_compile_and_custom_op(self):
        # Traced calls go through torch.ops.attngen.attention_fp8 and give the
        # eager result; a row-major v is copied K-major first either way.
        q, k, v = (fp8(2, 300, 4, 128, device="cuda") for _ in range(3))
        qd = torch.rand(2, 4, device="cuda") + 0.5
        eager = attngen.attention(q, k, v, causal=True, q_descale=qd)

        def call(q, k, v, qd):
            return attngen.attention(q, k, v, causal=True, q_descale=qd)
        compiled = torch.compile(call, fullgraph=True)(q, k, v, qd)
        self.assertTrue(torch.equal(eager, compiled))
        # test_schema compares inputs with allclose, which torch lacks for
        # float8: the fake implementation and the autograd registration are
        # what the op adds.
        torch.library.opcheck(torch.ops.attngen.attention_fp8.default,
                              (q, k, v, True, 0.0, True, "bottom-right", -1, -1, qd, None, None),
                              test_utils=("test_faketensor", "test_autograd_registration"))


if __name__ == "__main__":
    unittest.main()
