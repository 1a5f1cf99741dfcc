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

    def test_alibi_slopes_checked(self):
        self.check_refused(r"alibi_slopes has shape \(3,\); it must be \(heads,\) = \(4,\)",
                           self.q, self.k, self.v, alibi_slopes=torch.ones(3))

    def test_gqa_groups(self):
        self.check_refused("q has 4 heads and k/v have 3", self.q, fp8(1, 8, 3, 128),
                           fp8(1, 8, 3, 128))

    def test_varlen_arguments(self):
        """FP8 attention_varlen's refusals before any device work: descales
        per tensor or per (sequence, kv head), one dtype, a supported head
        dim."""
        q, k = fp8(8, 4, 64), fp8(8, 2, 64)
        cu = torch.tensor([0, 3, 8], dtype=torch.int32)
        cases = ((r"v_descale has shape \(1, 2\); with varlen it must hold one element "
                  r"\(per tensor\), be \(batch, kv_heads\) = \(2, 2\)",
                  (q, k, k), dict(v_descale=torch.ones(1, 2))),
                 # Block scales per sequence: (batch, heads, ceil(max_seqlen / 128)).
                 (r"block scales: k_descale must be float32 of shape \(2, 2, 1\) \(batch, "
                  r"heads, ceil\(max_seqlen_k / 128\)\)",
                  (q, k, k), dict(q_descale=torch.ones(2, 4, 1), k_descale=torch.ones(2, 2, 2))),
                 (r"block scales: q_descale must be float32 of shape \(2, 4, 1\)",
                  (q, k, k), dict(q_descale=torch.ones(1, 4, 1), k_descale=torch.ones(2, 2, 1))),
                 (r"k has dtype torch.bfloat16: FP8 attention_varlen takes "
                  r"torch.float8_e4m3fn q, k and v", (q, k.to(torch.bfloat16), k), {}),
                 (r"FP8 attention supports head dims 64, 128, 256, not 96",
                  (fp8(8, 4, 96), fp8(8, 2, 96), fp8(8, 2, 96)), {}),
                 (r"q is on cpu", (q, k, k), dict(q_descale=torch.ones(1))))
        for pattern, tensors, kwargs in cases:
            with self.subTest(pattern=pattern), self.assertRaisesRegex(ValueError, pattern):
                attngen.attention_varlen(*tensors, cu, cu, 5, 5, **kwargs)

    def test_block_descales(self):
        # q's and k's per 128-row block together; v's per key block too, or one
        # per (batch, kv head) or per tensor for every key block.
        self.check_refused(r"block scales: k_descale must be float32 of shape \(1, 2, 1\)",
                           self.q, self.k, self.v, q_descale=torch.ones(1, 4, 1),
                           k_descale=torch.ones(1, 2))
        self.check_refused(r"block scales: q_descale must be float32 of shape \(1, 4, 1\)",
                           self.q, self.k, self.v, q_descale=torch.ones(1, 4, 2),
                           k_descale=torch.ones(1, 2, 1))
        self.check_refused(r"block scales: v_descale must be float32 of shape \(1, 2, 1\)",
                           self.q, self.k, self.v, q_descale=torch.ones(1, 4, 1),
                           k_descale=torch.ones(1, 2, 1), v_descale=torch.ones(1, 2, 2))
        self.check_refused(r"v_descale has shape \(2, 2\)", self.q, self.k, self.v,
                           q_descale=torch.ones(1, 4, 1), k_descale=torch.ones(1, 2, 1),
                           v_descale=torch.ones(2, 2))

    def test_v_block_descale(self):
        """A block-scale kernel reads v_descale per key block: per-head and
        per-tensor descales (and None) are repeated over the blocks."""
        from attngen._torch_fp8 import v_block_descale
        per_head = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        got = v_block_descale(per_head, 2, 2, 300, "cpu")
        self.assertEqual(tuple(got.shape), (2, 2, 3))
        self.assertEqual(got.stride(2), 1)
        self.assertTrue(torch.equal(got, per_head[:, :, None].expand(2, 2, 3)))
        got = v_block_descale(torch.tensor([0.5]), 1, 2, 128, "cpu")
        self.assertTrue(torch.equal(got, torch.full((1, 2, 1), 0.5)))
        self.assertTrue(torch.equal(v_block_descale(None, 1, 1, 1, "cpu"), torch.ones(1, 1, 1)))
        blocks = torch.rand(2, 2, 3)
        self.assertIs(v_block_descale(blocks, 2, 2, 300, "cpu"), blocks)

    def test_quantize_arguments(self):
        b = torch.zeros(1, 8, 4, 128, dtype=torch.bfloat16)
        cases = ((r"granularity 'row' is not one of 'tensor', 'head', 'block'",
                  dict(granularity="row")),
                 (r"v_layout 'kmajor' is not one of 'auto', 'k_major', 'row_major'",
                  dict(v_layout="kmajor")),
                 (r"hadamard_seed must be an int in \[0, 2\^63\)", dict(hadamard_seed=-1)),
                 (r"q is on cpu; it runs on CUDA tensors", {}))
        for pattern, kwargs in cases:
            with self.subTest(pattern=pattern), self.assertRaisesRegex(ValueError, pattern):
                attngen.quantize_fp8(b, b, b, **kwargs)
        with self.assertRaisesRegex(ValueError, "k has dtype torch.float32; it quantizes "
                                                "bfloat16 or float16"):
            attngen.quantize_fp8(b, b.float(), b)

    def test_quantize_varlen_arguments(self):
        b = torch.zeros(8, 4, 128, dtype=torch.bfloat16)
        cu = torch.tensor([0, 3, 8], dtype=torch.int32)
        cases = ((r"quantize_fp8_varlen: granularity 'row' is not one of",
                  (b, b, b, cu, cu, 5, 5), dict(granularity="row")),
                 (r"quantize_fp8_varlen: q must be \[total, heads, head_dim\], got shape "
                  r"\(1, 8, 4, 128\)", (b[None], b, b, cu, cu, 5, 5), {}),
                 (r"quantize_fp8_varlen: q \(8, 4, 128\) and k \(8, 3, 128\) need q's heads "
                  r"a multiple of k's", (b, b[:, :3], b[:, :3], cu, cu, 5, 5), {}),
                 (r"cu_seqlens_k must be 1-D", (b, b, b, cu, cu[None], 5, 5), {}),
                 (r"max_seqlen_q = -1 is out of range", (b, b, b, cu, cu, -1, 5), {}),
                 (r"quantize_fp8_varlen: q is on cpu; it runs on CUDA tensors",
                  (b, b, b, cu, cu, 5, 5), {}))
        for pattern, args, kwargs in cases:
            with self.subTest(pattern=pattern), self.assertRaisesRegex(ValueError, pattern):
                attngen.quantize_fp8_varlen(*args, **kwargs)

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

    def test_v_layout(self):
        """Which kernel reads v: K-major views and row-major ones in place,
        anything else made contiguous (row-major) first."""
        from attngen._torch_fp8 import key_major, v_layout
        v = fp8(2, 37, 3, 64)
        for given, row_major in ((v, True), (key_major(v), False),
                                 # a padded head stride: still in place
                                 (fp8(2, 37, 3, 80)[..., :64], True)):
            used, layout = v_layout(given)
            self.assertIs(used, given)
            self.assertEqual(layout, row_major)
        # d256: copied K-major (the in-kernel transpose costs more there).
        wide = fp8(2, 37, 3, 256)
        copied, row_major = v_layout(wide)
        self.assertFalse(row_major)
        self.assertEqual(copied.stride()[1], 1)
        self.assertTrue(torch.equal(copied.view(torch.uint8), wide.view(torch.uint8)))
        # Neither layout (a head-dim stride of 2): copied contiguous.
        odd = fp8(2, 37, 3, 128)[..., ::2]
        copied, row_major = v_layout(odd)
        self.assertTrue(row_major)
        self.assertTrue(copied.is_contiguous())
        self.assertTrue(torch.equal(copied.view(torch.uint8), odd.contiguous().view(torch.uint8)))


def dequantized_reference(q, k, v, descales, causal, scale, softcap=0.0, slopes=None):
    """float64 attention on q, k, v (e4m3) times their descales, bottom-right
    causal (and ALiBi's distances), a soft cap; out and the natural-log LSE."""
    b, nq, h, d = q.shape
    nk, hkv = k.shape[1], k.shape[2]
    group = h // hkv

    def deq(x, s, heads_per_descale):
        """x times its descale: one value, one per (batch, kv head), which
        covers `heads_per_descale` heads of x (q's group), or one per 128 rows
        of each head (block scales: [B, heads, blocks])."""
        x = x.double()
        if s is None:
            return x
        s = s.double()
        if s.numel() == 1:
            return x * s.reshape(1, 1, 1, 1)
        if s.dim() == 3:
            rows = s.repeat_interleave(128, dim=2)[:, :, :x.shape[1]]  # [B, heads, N]
            return x * rows.transpose(1, 2)[..., None]
        return x * s.repeat_interleave(heads_per_descale, dim=1)[:, None, :, None]
    qd, kd, vd = (deq(x, s, g) for x, s, g in zip((q, k, v), descales, (group, 1, 1)))
    kd, vd = kd.repeat_interleave(group, 2), vd.repeat_interleave(group, 2)
    s = torch.einsum("bqhd,bkhd->bhqk", qd, kd) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    if slopes is not None:
        distance = (torch.arange(nq, device=q.device)[:, None] + nk - nq
                    - torch.arange(nk, device=q.device)[None, :]).abs()
        s = s - slopes.double()[None, :, None, None] * distance
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

    def test_softcap_and_alibi(self):
        torch.manual_seed(2)
        b, nq, nk, h, hkv, d = 2, 190, 300, 4, 2, 128
        q, k, v = (fp8(b, n, heads, d, device="cuda")
                   for n, heads in ((nq, h), (nk, hkv), (nk, hkv)))
        descales = (torch.full((1,), 0.5, device="cuda"), torch.rand(b, hkv, device="cuda") + 0.5,
                    torch.full((1,), 0.9, device="cuda"))
        slopes = torch.rand(h, device="cuda") * 0.1
        # Block scales (q per 128 rows, k and v per 128 keys): with a soft cap
        # or ALiBi the scores take k's factor one by one, and the accumulator
        # moves from one v block's scale to the next.
        blocks = (torch.rand(b, h, 2, device="cuda") + 0.5, torch.rand(b, hkv, 3, device="cuda")
                  + 0.5, torch.rand(b, hkv, 3, device="cuda") + 0.5)
        for softcap, alibi, causal, scales in ((30.0, None, True, descales),
                                               (0.0, slopes, False, descales),
                                               (20.0, slopes, True, descales),
                                               (30.0, None, True, blocks),
                                               (20.0, slopes, False, blocks),
                                               (0.0, None, True, blocks)):
            with self.subTest(softcap=softcap, alibi=alibi is not None, causal=causal,
                              blocks=scales is blocks):
                out = attngen.attention(q, k, v, causal=causal, softcap=softcap,
                                        alibi_slopes=alibi, q_descale=scales[0],
                                        k_descale=scales[1], v_descale=scales[2])
                ref, _ = dequantized_reference(q, k, v, scales, causal, d ** -0.5,
                                               softcap, alibi)
                scale = ref.abs().max().item()
                self.assertLess((out.double() - ref).abs().max().item(), 0.08 * scale)

    def test_varlen_paged(self):
        """attention_varlen over FP8 pages (shuffled, NaN in the rows no
        sequence owns) gives what it gives over the same keys packed."""
        torch.manual_seed(4)
        lq, lk, h, hkv, d, page = [70, 1, 200], [300, 64, 0], 4, 2, 128, 64
        q = fp8(sum(lq), h, d, device="cuda")
        k, v = (fp8(sum(lk), hkv, d, device="cuda") for _ in range(2))
        cu_q, cu_k = (torch.tensor([0] + torch.tensor(n).cumsum(0).tolist(), dtype=torch.int32,
                                   device="cuda") for n in (lq, lk))
        used = [-(-n // page) for n in lk]
        order = torch.randperm(sum(used) + 2).tolist()
        pages = [torch.full((len(order), page, hkv, d), 0x7F, dtype=torch.uint8,
                            device="cuda") for _ in range(2)]
        table = torch.full((len(lk), max(used)), order[-1], dtype=torch.int32)
        start = taken = 0
        for b, n in enumerate(lk):
            for j in range(used[b]):
                rows = min(page, n - j * page)
                for cache, x in zip(pages, (k, v)):
                    cache[order[taken], :rows] = x[start + j * page:][:rows].view(torch.uint8)
                table[b, j], taken = order[taken], taken + 1
            start += n
        kp, vp = (x.view(torch.float8_e4m3fn) for x in pages)
        qd = torch.rand(3, hkv, device="cuda") + 0.5
        for causal in (False, True):
            with self.subTest(causal=causal):
                want = attngen.attention_varlen(q, k, v, cu_q, cu_k, 200, 300, causal=causal,
                                                q_descale=qd)
                got = attngen.attention_varlen(q, kp, vp, cu_q, cu_k, 200, 300, causal=causal,
                                               q_descale=qd, block_table=table.cuda())
                self.assertTrue(torch.isfinite(got).all())
                self.assertLess((got.float() - want.float()).abs().max().item(),
                                1e-2 * want.abs().max().item())
        # No sequence with keys, over pages with block scales (no key block to
        # read a descale of): out 0 and lse -inf.
        none = torch.zeros(4, dtype=torch.int32, device="cuda")
        out, lse = attngen.attention_varlen(
            q, kp, vp, cu_q, none, 200, 0, return_lse=True, block_table=table.cuda(),
            q_descale=torch.ones(3, h, 2, device="cuda"),
            k_descale=torch.ones(3, hkv, 0, device="cuda"))
        self.assertFalse(out.float().any())
        self.assertTrue(torch.isneginf(lse).all())

    def test_flash_attn_interface(self):
        """The drop-in's FA3 descale keywords give attention()'s and
        attention_varlen()'s results."""
        from attngen import flash_attn_interface as fa
        torch.manual_seed(5)
        q, k, v = (fp8(2, n, heads, 128, device="cuda")
                   for n, heads in ((130, 4), (257, 2), (257, 2)))
        qd, kd = torch.rand(2, 2, device="cuda") + 0.5, torch.full((1,), 0.8, device="cuda")
        want = attngen.attention(q, k, v, causal=True, q_descale=qd, k_descale=kd)
        got = fa.flash_attn_func(q, k, v, causal=True, q_descale=qd, k_descale=kd)
        self.assertTrue(torch.equal(got, want))
        cu_q = torch.tensor([0, 130, 260], dtype=torch.int32, device="cuda")
        cu_k = torch.tensor([0, 257, 514], dtype=torch.int32, device="cuda")
        packed = [x.reshape(-1, *x.shape[2:]) for x in (q, k, v)]
        want = attngen.attention_varlen(*packed, cu_q, cu_k, 130, 257, causal=True,
                                        q_descale=qd, k_descale=kd)
        got = fa.flash_attn_varlen_func(*packed, cu_q, cu_k, 130, 257, causal=True,
                                        q_descale=qd, k_descale=kd)
        self.assertTrue(torch.equal(got, want))

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
                              (q, k, v, True, 0.0, True, "bottom-right", -1, -1, qd, None, None,
                               0.0, None),
                              test_utils=("test_faketensor", "test_autograd_registration"))


def hadamard_matrix(d, seed):
    """diag(signs) H / sqrt(D) as quantize_fp8's rotation applies it (x @ R)."""
    def mix(x):
        m = (1 << 64) - 1
        x = (x + 0x9E3779B97F4A7C15) & m
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
        return x ^ (x >> 31)
    signs = torch.tensor([-1.0 if mix((seed * 0x100000001B3 + j) & ((1 << 64) - 1)) & 1 else 1.0
                          for j in range(d)], dtype=torch.float64)
    h = torch.ones(1, 1, dtype=torch.float64)
    while h.shape[0] < d:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return signs[:, None] * h / d ** 0.5


@unittest.skipUnless(HAVE_SM90, "needs an sm_90 GPU and torch with float8_e4m3fn")
class QuantizeGpuTest(unittest.TestCase):
    def test_granularities_and_rotation(self):
        torch.manual_seed(1)
        b, nq, nk, h, hkv, d = 2, 300, 203, 4, 2, 128
        q = torch.randn(b, nq, h, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, nk, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, nk, hkv, d, device="cuda", dtype=torch.bfloat16)
        ref = attngen.attention(q, k, v, causal=True).double()
        shapes = {"tensor": ((1,), (1,)), "head": ((b, hkv), (b, hkv)),
                  "block": ((b, h, 3), (b, hkv, 2))}
        for granularity, (q_shape, k_shape) in shapes.items():
            for hadamard in (False, True):
                with self.subTest(granularity=granularity, hadamard=hadamard):
                    x = attngen.quantize_fp8(q, k, v, granularity=granularity,
                                             hadamard=hadamard)
                    self.assertEqual(tuple(x.q_descale.shape), q_shape)
                    self.assertEqual(tuple(x.k_descale.shape), k_shape)
                    self.assertEqual(x.v.stride(1), 1)  # K-major
                    self.assertEqual(tuple(x.v.shape), tuple(v.shape))
                    out = attngen.attention(x.q, x.k, x.v, causal=True, **x.descales)
                    err = (out.double() - ref).abs().max().item()
                    self.assertLess(err, 0.08 * ref.abs().max().item())
        # The rotation: x.q descaled is q @ R (to e4m3's precision), and
        # R is orthogonal, so the scores are q k^T.
        x = attngen.quantize_fp8(q, k, v, granularity="head", hadamard=True)
        r = hadamard_matrix(d, attngen._torch_quantize.DEFAULT_HADAMARD_SEED).cuda()
        rotated = q.double() @ r
        qd = x.q_descale.repeat_interleave(h // hkv, dim=1)[:, None, :, None].double()
        back = x.q.double() * qd
        self.assertLess(((back - rotated).abs() - 0.07 * rotated.abs()).max().item(), 1e-2)

    def test_varlen_block_scales(self):
        """quantize_fp8_varlen quantizes each sequence as quantize_fp8 does it
        alone (bytes and descales), and attention_varlen with its block
        scales matches bf16 attention."""
        torch.manual_seed(3)
        lq, lk, h, hkv, d = [130, 0, 1, 257], [300, 7, 129, 0], 4, 2, 128
        q = torch.randn(sum(lq), h, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(sum(lk), hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        cu_q, cu_k = (torch.tensor([0] + torch.tensor(n).cumsum(0).tolist(), dtype=torch.int32,
                                   device="cuda") for n in (lq, lk))
        for granularity, hadamard in (("block", False), ("block", True), ("head", True),
                                      ("tensor", False)):
            with self.subTest(granularity=granularity, hadamard=hadamard):
                x = attngen.quantize_fp8_varlen(q, k, v, cu_q, cu_k, max(lq), max(lk),
                                                granularity=granularity, hadamard=hadamard)
                shapes = {"block": ((4, h, 3), (4, hkv, 3)), "head": ((4, hkv), (4, hkv)),
                          "tensor": ((1,), (1,))}[granularity]
                self.assertEqual((tuple(x.q_descale.shape), tuple(x.k_descale.shape)), shapes)
                self.assertEqual(tuple(x.q.shape), tuple(q.shape))
                out = attngen.attention_varlen(x.q, x.k, x.v, cu_q, cu_k, max(lq), max(lk),
                                               causal=True, **x.descales)
                sq = sk = 0
                for b, (nq, nk) in enumerate(zip(lq, lk)):
                    if nq and nk and granularity != "tensor":
                        alone = attngen.quantize_fp8(
                            q[None, sq:sq + nq], k[None, sk:sk + nk], v[None, sk:sk + nk],
                            granularity=granularity, hadamard=hadamard, v_layout="row_major")
                        self.assertTrue(torch.equal(x.q[sq:sq + nq].view(torch.uint8),
                                                    alone.q[0].view(torch.uint8)))
                        self.assertTrue(torch.equal(x.v[sk:sk + nk].view(torch.uint8),
                                                    alone.v[0].view(torch.uint8)))
                        mine = x.k_descale[b:b + 1]
                        if granularity == "block":
                            mine = mine[:, :, :alone.k_descale.shape[2]]
                        self.assertTrue(torch.equal(mine, alone.k_descale))
                        # The sequence alone through the dense FP8 kernel (the
                        # same bytes and descales) gives the same attention (at
                        # most 16 rows would take the decoding kernels).
                        if nq > 16:
                            dense = attngen.attention(alone.q, alone.k, alone.v, causal=True,
                                                      **alone.descales)[0]
                            diff = (out[sq:sq + nq].float() - dense.float()).abs().max().item()
                            self.assertLess(diff, 2e-2 * dense.abs().max().item())
                    sq, sk = sq + nq, sk + nk
                # And bf16 attention, within FP8's rounding (P has 3 mantissa bits).
                ref = attngen.attention_varlen(q, k, v, cu_q, cu_k, max(lq), max(lk),
                                               causal=True).double()
                err = (out.double() - ref).abs().max().item()
                self.assertLess(err, 0.15 * ref.abs().max().item())

    def test_varlen_offsets_checked(self):
        """quantize_fp8_varlen refuses offsets the kernel would read or write
        past (its grid covers max_seqlen rows of each sequence)."""
        x = torch.randn(393, 4, 128, device="cuda", dtype=torch.bfloat16)
        cu = torch.tensor([0, 130, 393], dtype=torch.int32, device="cuda")
        short = torch.tensor([0, 130, 388], dtype=torch.int32, device="cuda")
        with self.assertRaisesRegex(ValueError, r"cu_seqlens_q runs from 0 to 388 but q has "
                                                r"393 rows"):
            attngen.quantize_fp8_varlen(x, x, x, short, cu, 263, 263)
        with self.assertRaisesRegex(ValueError, r"cu_seqlens_k: sequence 1 has 263 rows, "
                                                r"outside \[0, max_seqlen_k = 200\]"):
            attngen.quantize_fp8_varlen(x, x, x, cu, cu, 263, 200, granularity="block")
        # Unchecked, a right call runs as the checked one.
        a = attngen.quantize_fp8_varlen(x, x, x, cu, cu, 263, 263, check_seqlens=False)
        b = attngen.quantize_fp8_varlen(x, x, x, cu, cu, 263, 263)
        self.assertTrue(torch.equal(a.q.view(torch.uint8), b.q.view(torch.uint8)))

    def test_compiles(self):
        q, k, v = (torch.randn(1, 260, 2, 64, device="cuda", dtype=torch.bfloat16)
                   for _ in range(3))

        def call(q, k, v):
            x = attngen.quantize_fp8(q, k, v, granularity="block", hadamard=True)
            return attngen.attention(x.q, x.k, x.v, **x.descales)
        eager = call(q, k, v)
        compiled = torch.compile(call, fullgraph=True)(q, k, v)
        self.assertTrue(torch.equal(eager, compiled))

        # A packed batch: quantize_fp8_varlen skips its host check while
        # tracing; the quantize op takes cu_seqlens.
        cu = torch.tensor([0, 100, 260], dtype=torch.int32, device="cuda")
        packed = [x[0] for x in (q, k, v)]

        def call_varlen(q, k, v, cu):
            x = attngen.quantize_fp8_varlen(q, k, v, cu, cu, 160, 160, granularity="block",
                                            hadamard=True)
            return attngen.attention_varlen(x.q, x.k, x.v, cu, cu, 160, 160, causal=True,
                                            check_seqlens=False, **x.descales)
        eager = call_varlen(*packed, cu)
        compiled = torch.compile(call_varlen, fullgraph=True)(*packed, cu)
        self.assertTrue(torch.equal(eager, compiled))


if __name__ == "__main__":
    unittest.main()
