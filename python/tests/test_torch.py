"""attngen.attention with PyTorch on a CUDA GPU: input errors, results against
a float32 reference, and torch.compile. Needs torch and a GPU (run on the GPU
machine by gpu/run_python.sh); without them the tests are skipped.

    PYTHONPATH=python python3 -m unittest python/tests/test_torch.py -v
"""

import math
import unittest
from unittest import mock

import attngen

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    torch = None
    HAVE_GPU = False


def reference(q, k, v, causal, scale, bottom_right=False, softcap=0.0, window=(-1, -1)):
    """float32 attention and natural-log LSE; the causal mask is top-left
    (j <= i) or, with `bottom_right`, j <= i + Nk - Nq; `window` = (left, right)
    keeps keys from left before to right after that diagonal (-1: unbounded;
    rows that see no key: out 0, LSE -inf)."""
    b, nq, h, d = q.shape
    group = h // k.shape[2]
    qf = q.float().transpose(1, 2)
    kf = k.float().repeat_interleave(group, dim=2).transpose(1, 2)
    vf = v.float().repeat_interleave(group, dim=2).transpose(1, 2)
    s = torch.matmul(qf, kf.transpose(-1, -2)) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    nk = k.shape[1]
    rows = torch.arange(nq, device=q.device)[:, None]
    cols = torch.arange(nk, device=q.device)[None, :]
    diag = rows + (nk - nq if bottom_right else 0)
    mask = torch.ones(nq, nk, dtype=torch.bool, device=q.device)
    if causal:
        mask &= cols <= diag
    if window[1] >= 0:
        mask &= cols <= diag + window[1]
    if window[0] >= 0:
        mask &= cols >= diag - window[0]
    s = s.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    finite = torch.where(torch.isinf(lse), 0.0, lse)
    out = torch.matmul(torch.exp(s - finite[..., None]), vf).transpose(1, 2)
    return out, lse


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


if torch is not None:
    class _Attention(torch.nn.Module):
        """A module for torch.export."""

        def forward(self, q, k, v):
            return attngen.attention(q, k, v, causal=True)


@unittest.skipUnless(HAVE_GPU, "needs torch and a CUDA GPU")
class AttentionTest(unittest.TestCase):
    def tensors(self, b=1, nq=100, nk=77, h=2, hkv=2, d=64, dtype=None):
        dtype = dtype or torch.bfloat16
        q = torch.randn(b, nq, h, d, device="cuda", dtype=dtype)
        k = torch.randn(b, nk, hkv, d, device="cuda", dtype=dtype)
        v = torch.randn(b, nk, hkv, d, device="cuda", dtype=dtype)
        return q, k, v

    def test_matches_reference(self):
        torch.manual_seed(0)
        # causal=True alone is bottom-right, as flash_attn_func.
        for causal, align in ((False, {}), (True, {}), (True, {"causal_align": "top-left"}),
                              (True, {"causal_align": "bottom-right"})):
            bottom_right = causal and align.get("causal_align", "bottom-right") == "bottom-right"
            for dtype, tol in ((torch.bfloat16, 1e-2), (torch.float16, 3e-3)):
                with self.subTest(causal=causal, align=align, dtype=dtype):
                    q, k, v = self.tensors(b=2, nq=333, nk=1000, h=4, hkv=2, d=128, dtype=dtype)
                    out, lse = attngen.attention(q, k, v, causal=causal, return_lse=True, **align)
                    ref, ref_lse = reference(q, k, v, causal, 1 / math.sqrt(128), bottom_right)
                    self.assertLess(rel(out, ref), tol)
                    self.assertLess((lse - ref_lse).abs().max().item(), 2e-2)
                    self.assertEqual(out.shape, q.shape)
                    self.assertEqual(lse.shape, (2, 4, 333))

    def test_value_head_dim(self):
        # v with a head dim of its own (head_dim_v): dense (with a 1-row
        # call, which the decoding kernels would take with one head dim),
        # varlen and flash_attn_func give out of v's width.
        from attngen import flash_attn_interface as fa
        torch.manual_seed(4)
        for d, dv, nq in ((192, 128, 333), (64, 128, 200), (128, 64, 1)):
            with self.subTest(d=d, dv=dv, nq=nq):
                q, k, _ = self.tensors(b=2, nq=nq, nk=500, h=4, hkv=2, d=d)
                v = torch.randn(2, 500, 2, dv, device="cuda", dtype=torch.bfloat16)
                ref, ref_lse = reference(q, k, v, True, 1 / math.sqrt(d), bottom_right=True)
                out, lse = attngen.attention(q, k, v, causal=True, return_lse=True)
                self.assertEqual(out.shape, (2, nq, 4, dv))
                self.assertLess(rel(out, ref), 1e-2)
                self.assertLess((lse - ref_lse).abs().max().item(), 2e-2)
                self.assertLess(rel(fa.flash_attn_func(q, k, v, causal=True), ref), 1e-2)
                cu_q = torch.tensor([0, nq, 2 * nq], device="cuda", dtype=torch.int32)
                cu_k = torch.tensor([0, 500, 1000], device="cuda", dtype=torch.int32)
                packed = attngen.attention_varlen(
                    q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), cu_q, cu_k, nq, 500,
                    causal=True)
                self.assertLess(rel(packed, ref.flatten(0, 1)), 1e-2)

    def test_bottom_right_rows_that_see_no_key(self):
        # Nq > Nk, bottom-right: query i < Nq - Nk sees no key (out 0, LSE
        # -inf, as flash_attn); the others match the reference.
        torch.manual_seed(3)
        for d in (64, 128, 256):
            with self.subTest(d=d):
                q, k, v = self.tensors(b=2, nq=1000, nk=77, h=4, hkv=2, d=d)
                out, lse = attngen.attention(q, k, v, causal=True, return_lse=True)
                ref, ref_lse = reference(q, k, v, True, 1 / math.sqrt(d), bottom_right=True)
                self.assertTrue(torch.equal(out[:, :923], torch.zeros_like(out[:, :923])))
                self.assertTrue(bool((lse[..., :923] == float("-inf")).all()))
                self.assertLess(rel(out, ref), 1e-2)
                self.assertLess((lse[..., 923:] - ref_lse[..., 923:]).abs().max().item(), 2e-2)

    def test_head_dims(self):
        # Any multiple of 8 up to 256: tiles padded to 16 columns (8, 40, 72)
        # and 32/64-byte swizzles (40, 80, 96, 160); ragged Nq != Nk, GQA,
        # causal bottom-right, and views whose rows are padded past D (the
        # columns past D must not be read).
        torch.manual_seed(5)
        for d in (8, 40, 72, 80, 96, 160, 192):
            for causal in (False, True):
                with self.subTest(d=d, causal=causal):
                    q, k, v = self.tensors(b=2, nq=333, nk=1000, h=4, hkv=2, d=d)
                    out, lse = attngen.attention(q, k, v, causal=causal, return_lse=True)
                    ref, ref_lse = reference(q, k, v, causal, 1 / math.sqrt(d), bottom_right=True)
                    self.assertLess(rel(out, ref), 1e-2)
                    self.assertLess((lse - ref_lse).abs().max().item(), 2e-2)
                    # Rows of q and k padded with large values past D: a kernel
                    # that read them would be far off.
                    wide_q = torch.full((2, 333, 4, d + 8), 100.0, device="cuda", dtype=q.dtype)
                    wide_k = torch.full((2, 1000, 2, d + 8), 100.0, device="cuda", dtype=q.dtype)
                    wide_q[..., :d], wide_k[..., :d] = q, k
                    got = attngen.attention(wide_q[..., :d], wide_k[..., :d], v, causal=causal)
                    self.assertLess(rel(got, ref), 1e-2)

    def test_softcap(self):
        # c * tanh(scale * s / c) before the mask; caps that bite (2 on unit-size
        # scores, 30 on scores 4x larger), with and without a causal mask.
        torch.manual_seed(4)
        for softcap, q_factor in ((2.0, 1), (30.0, 4)):
            for causal in (False, True):
                with self.subTest(softcap=softcap, causal=causal):
                    q, k, v = self.tensors(b=2, nq=333, nk=1000, h=4, hkv=2, d=128)
                    q = q * q_factor
                    out, lse = attngen.attention(q, k, v, causal=causal, softcap=softcap,
                                                 return_lse=True)
                    ref, ref_lse = reference(q, k, v, causal, 1 / math.sqrt(128),
                                             bottom_right=True, softcap=softcap)
                    plain, _ = reference(q, k, v, causal, 1 / math.sqrt(128), bottom_right=True)
                    self.assertLess(rel(out, ref), 1e-2)
                    self.assertGreater(rel(plain, ref), 5e-2)  # the cap changed the answer
                    self.assertLess((lse - ref_lse).abs().max().item(), 2e-2)

    def test_window(self):
        # window_size as flash_attn's, bottom-right by default like causal:
        # a causal window (the flag or flash_attn's (L, 0)), two-sided, one
        # side; Nq != Nk both ways, windows wider and narrower than a block.
        torch.manual_seed(5)
        cases = [((256, -1), True, {}), ((256, 0), False, {}), ((100, 50), False, {}),
                 ((0, 0), False, {"causal_align": "top-left"}), ((-1, 64), False, {}),
                 ((1000, 1000), False, {"causal_align": "top-left"}),
                 # flash_attn's rule: causal forces the right side to 0.
                 ((256, 64), True, {})]
        for window, causal, align in cases:
            bottom_right = align.get("causal_align", "bottom-right") == "bottom-right"
            for nq, nk in ((333, 1000), (1000, 333)):
                with self.subTest(window=window, causal=causal, align=align, nq=nq, nk=nk):
                    q, k, v = self.tensors(b=2, nq=nq, nk=nk, h=4, hkv=2, d=128)
                    out, lse = attngen.attention(q, k, v, causal=causal, window_size=window,
                                                 return_lse=True, **align)
                    ref, ref_lse = reference(q, k, v, causal, 1 / math.sqrt(128),
                                             bottom_right, window=window)
                    self.assertLess(rel(out, ref), 1e-2)
                    empty = torch.isinf(ref_lse)
                    self.assertTrue(bool((lse[empty] == float("-inf")).all()))
                    self.assertTrue(bool((out.transpose(1, 2)[empty] == 0).all()))
                    self.assertLess((lse[~empty] - ref_lse[~empty]).abs().max().item(), 2e-2)

    def test_kvcache_takes_flash_attns_causal_spellings(self):
        # window_size (-1, 0), and causal with any right side, are the
        # causal KV-cache kernel: the same output, bit for bit.
        torch.manual_seed(8)
        q, k, v = self.tensors(b=2, nq=3, nk=300, h=8, hkv=2, d=128)
        lengths = torch.tensor([300, 7], dtype=torch.int32, device="cuda")
        causal = attngen.attention_with_kvcache(q, k, v, lengths, causal=True)
        for kwargs in (dict(window_size=(-1, 0)), dict(causal=True, window_size=(-1, 64))):
            with self.subTest(**{key: str(value) for key, value in kwargs.items()}):
                out = attngen.attention_with_kvcache(q, k, v, lengths, **kwargs)
                self.assertTrue(torch.equal(out, causal))
        plain = attngen.attention_with_kvcache(q, k, v, lengths)
        self.assertFalse(torch.equal(plain, causal))

    def test_window_rows_that_see_no_key(self):
        # A window that ends before the keys begin or starts after they end:
        # those rows (whole query blocks of them) give out 0 and LSE -inf.
        torch.manual_seed(6)
        for d in (64, 128, 256):
            for window, align, empty_rows in (((-1, 0), "bottom-right", slice(0, 923)),
                                              ((10, 0), "top-left", slice(87, 1000))):
                with self.subTest(d=d, window=window):
                    q, k, v = self.tensors(b=1, nq=1000, nk=77, h=2, hkv=1, d=d)
                    out, lse = attngen.attention(q, k, v, window_size=window,
                                                 causal_align=align, return_lse=True)
                    ref, ref_lse = reference(q, k, v, False, 1 / math.sqrt(d),
                                             align == "bottom-right", window=window)
                    self.assertTrue(torch.equal(out[:, empty_rows],
                                                torch.zeros_like(out[:, empty_rows])))
                    self.assertTrue(bool((lse[..., empty_rows] == float("-inf")).all()))
                    self.assertLess(rel(out, ref), 1e-2)

    def test_window_under_torch_compile(self):
        torch.manual_seed(7)
        q, k, v = self.tensors(b=2, nq=700, nk=900, h=4, hkv=2, d=64)
        compiled = torch.compile(
            lambda q, k, v: attngen.attention(q, k, v, window_size=(128, 32)), fullgraph=True)
        self.assertTrue(torch.equal(compiled(q, k, v),
                                    attngen.attention(q, k, v, window_size=(128, 32))))

    def test_strided_inputs_and_scale(self):
        torch.manual_seed(1)
        big = torch.randn(1, 4, 97, 64, device="cuda", dtype=torch.float16)
        q = big.transpose(1, 2)  # (1, 97, 4, 64), heads-major storage
        k = torch.randn(1, 50, 4, 72, device="cuda", dtype=torch.float16)[..., :64]
        v = torch.randn(1, 50, 4, 64, device="cuda", dtype=torch.float16)
        out = attngen.attention(q, k, v, scale=0.3)
        ref, _ = reference(q, k, v, False, 0.3)
        self.assertLess(rel(out, ref), 3e-3)

    def test_input_errors(self):
        q, k, v = self.tensors()
        cases = [
            ((q.cpu(), k.cpu(), v.cpu()), {}, "attngen runs on CUDA devices"),
            ((q.float(), k.float(), v.float()), {}, "supports torch.float16 and torch.bfloat16"),
            ((q, k.half(), v.half()), {}, "use one dtype"),
            ((q[0], k, v), {}, "must be 4-D"),
            ((q, k, v[:, :10]), {}, "same shape"),
            ((q, k[..., :32].contiguous(), v[..., :32].contiguous()), {}, "head_dim"),
            ((q[..., :60].contiguous(), k[..., :60].contiguous(), v[..., :60].contiguous()), {},
             "head dimension 60 is not supported: use a multiple of 8"),
            ((q, k.transpose(-1, -2).contiguous().transpose(-1, -2), v), {}, "stride 1"),
            ((torch.randn(1, 100, 3, 64, device="cuda", dtype=torch.bfloat16), k, v), {},
             "multiple of the number of k/v heads"),
            ((q, k[:, :0], v[:, :0]), {}, "at least one key"),
            ((q, k, v), {"scale": -1.0}, "positive and finite"),
            ((q, k, v), {"causal": True, "causal_align": "bottom_right"},
             "use 'top-left'"),
            ((q, k, v), {"softcap": -1.0}, "softcap -1 must be positive and finite"),
            ((q, k, v), {"window_size": (-3, 0)}, "window left = -3 is out of range"),
        ]
        for args, kwargs, needle in cases:
            with self.subTest(needle=needle):
                with self.assertRaises(attngen.InvalidInputError) as caught:
                    attngen.attention(*args, **kwargs)
                self.assertIn(needle, str(caught.exception))
        with self.assertRaises(TypeError):
            attngen.attention(q, k, "v")
        with self.assertRaises(TypeError):
            attngen.attention(q, k, v, causal=True, causal_align=None)
        with self.assertRaises(TypeError):
            attngen.attention(q, k, v, softcap="30")
        with self.assertRaises(TypeError):
            attngen.attention(q, k, v, window_size=64)
        # A misaligned pointer passes the Python checks; the runtime names it.
        flat = torch.randn(1 * 100 * 2 * 64 + 8, device="cuda", dtype=torch.bfloat16)
        odd = flat[4:4 + q.numel()].view(q.shape)
        with self.assertRaises(attngen.InvalidInputError) as caught:
            attngen.attention(odd, k, v)
        self.assertIn("aligned", str(caught.exception))

    def test_backward_matches_reference(self):
        # autograd through attngen.attention: GQA, causal bottom-right, a
        # ragged Nq != Nk; the gradients against float32 autograd.
        torch.manual_seed(5)
        q, k, v = self.tensors(b=2, nq=150, nk=211, h=4, hkv=2, d=64)
        q, k, v = (t.requires_grad_(True) for t in (q, k, v))
        dout = torch.randn_like(q)
        attngen.attention(q, k, v, causal=True).backward(dout)
        got = (q.grad, k.grad, v.grad)
        qf, kf, vf = (t.detach().float().requires_grad_(True) for t in (q, k, v))
        out = reference(qf, kf, vf, True, 0.125, bottom_right=True)[0]
        out.backward(dout.float())
        for name, g, want in zip("qkv", got, (qf.grad, kf.grad, vf.grad)):
            self.assertEqual(g.shape, want.shape)
            self.assertLess(rel(g, want), 2e-2, f"d{name}")

    def test_backward_wide_head_dims(self):
        # d192 (one pass) and d256 (dkdv's two passes), GQA, causal and not,
        # ragged Nq != Nk: the gradients against float32 autograd.
        for d, causal in ((192, True), (256, False), (256, True)):
            with self.subTest(d=d, causal=causal):
                torch.manual_seed(d + causal)
                q, k, v = self.tensors(b=2, nq=97, nk=140, h=4, hkv=2, d=d)
                q, k, v = (t.requires_grad_(True) for t in (q, k, v))
                dout = torch.randn_like(q)
                attngen.attention(q, k, v, causal=causal).backward(dout)
                got = (q.grad, k.grad, v.grad)
                qf, kf, vf = (t.detach().float().requires_grad_(True) for t in (q, k, v))
                out = reference(qf, kf, vf, causal, d ** -0.5, bottom_right=True)[0]
                out.backward(dout.float())
                for name, g, want in zip("qkv", got, (qf.grad, kf.grad, vf.grad)):
                    self.assertLess(rel(g, want), 2e-2, f"d{name}")

    def test_torch_compile(self):
        torch.manual_seed(2)
        q, k, v = self.tensors(b=2, nq=257, nk=300, h=4, hkv=4, d=64)

        def block(q, k, v):
            out, lse = attngen.attention(q * 2, k, v, causal=True, return_lse=True)
            return out.float().relu() + 1, lse

        compiled = torch.compile(block, fullgraph=True)
        eager_out, eager_lse = block(q, k, v)
        out, lse = compiled(q, k, v)
        self.assertEqual(rel(out, eager_out), 0.0)
        self.assertTrue(torch.equal(lse, eager_lse))

    def test_torch_compile_dynamic_shapes(self):
        compiled = torch.compile(lambda q, k, v: attngen.attention(q, k, v), dynamic=True,
                                 fullgraph=True)
        for nq, nk in ((100, 77), (513, 1029), (64, 4096)):
            q, k, v = self.tensors(nq=nq, nk=nk)
            ref, _ = reference(q, k, v, False, 1 / 8)
            self.assertLess(rel(compiled(q, k, v), ref), 1e-2)

    def test_side_stream(self):
        q, k, v = self.tensors(b=2, nq=2048, nk=2048, h=8, hkv=8, d=128)
        expected = attngen.attention(q, k, v)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            out = attngen.attention(q, k, v)
        stream.synchronize()
        self.assertTrue(torch.equal(out, expected))

    def test_cuda_graph_capture(self):
        q, k, v = self.tensors(b=1, nq=300, nk=500, h=4, hkv=2, d=128)
        expected = attngen.attention(q, k, v, causal=True)  # compiles and loads first
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            with torch.cuda.graph(graph):
                out = attngen.attention(q, k, v, causal=True)
        torch.cuda.current_stream().wait_stream(stream)
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(out, expected))
        q.copy_(torch.randn_like(q))  # replays read the new inputs
        graph.replay()
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(out, attngen.attention(q, k, v, causal=True)))

    def test_eager_call_launches_directly(self):
        # A plain eager call never enters the custom op (whose first use costs
        # seconds of PyTorch set-up); calls autograd records do.
        from attngen._torch_launch import use_custom_op
        q, k, v = self.tensors()
        expected = attngen.attention(q, k, v)
        refuse = AssertionError("an eager call went through torch.ops.attngen.attention")
        with mock.patch.object(torch.ops.attngen, "attention", side_effect=refuse):
            out, lse = attngen.attention(q, k, v, causal=True, return_lse=True)
            self.assertEqual(lse.shape, (1, 2, 100))
            self.assertTrue(torch.equal(attngen.attention(q, k, v), expected))
            with torch.no_grad():
                attngen.attention(q.requires_grad_(True), k, v)
        self.assertFalse(use_custom_op(q.detach(), k, v))
        self.assertTrue(use_custom_op(q.requires_grad_(True), k, v))

    def test_traced_calls_use_the_custom_op(self):
        # Fake tensors (torch.export, AOT tracing) go through the op and its
        # fake implementation: a direct launch would read their data pointers.
        from torch._subclasses.fake_tensor import FakeTensorMode
        q, k, v = self.tensors(nq=300, nk=77, h=4, hkv=2)
        with FakeTensorMode() as mode:
            fq, fk, fv = (mode.from_tensor(t) for t in (q, k, v))
            out, lse = attngen.attention(fq, fk, fv, causal=True, return_lse=True)
        self.assertEqual(tuple(out.shape), tuple(q.shape))
        self.assertEqual(tuple(lse.shape), (1, 4, 300))
        exported = torch.export.export(
            _Attention(), (q, k, v)).module()
        self.assertLess(rel(exported(q, k, v), attngen.attention(q, k, v, causal=True)), 1e-6)

    def test_backward_op_opcheck(self):
        q, k, v = self.tensors(nq=70, nk=90, h=4, hkv=2, d=64)
        out, lse = attngen.attention(q, k, v, causal=True, return_lse=True)
        torch.library.opcheck(torch.ops.attngen.attention_backward.default,
                              (torch.randn_like(q), q, k, v, out, lse, True, 0.0,
                               "bottom-right", 0.0, -1, -1),
                              test_utils=("test_schema", "test_faketensor"))

    def test_custom_op_opcheck(self):
        q, k, v = self.tensors(d=128)
        torch.library.opcheck(torch.ops.attngen.attention.default,
                              (q, k, v, True, 0.0, True, "bottom-right", 30.0, 256, -1),
                              test_utils=("test_schema", "test_faketensor"))


if __name__ == "__main__":
    unittest.main()
