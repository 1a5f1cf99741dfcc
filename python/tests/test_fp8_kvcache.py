"""attngen.attention_with_kvcache on FP8 caches (float8_e4m3fn q, k_cache,
v_cache with float32 descales, bfloat16 out) on a GPU (sm_90a): decoding on
ragged batches against a float32 reference on the dequantized inputs
(q8.float() * q_descale, ...), contiguous and paged caches whose rows past
each sequence are NaN, causal or not, split or not, descales per tensor and
per (batch, kv head); soft caps, ALiBi and windows; torch.compile, the op's
fake implementation and flash_attn_with_kvcache appending e4m3 keys. The
argument checks run on the CPU in test_kvcache_args.py.

    PYTHONPATH=python python3 -m unittest python/tests/test_fp8_kvcache.py -v
"""

import math
import random
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

#: The ragged decoding batch: 3 sequences, 8 query heads on 2 key/value heads.
B, H, HKV = 3, 8, 2
#: Rows of a contiguous cache (not a multiple of the 128-key blocks), and the
#: keys a paged sequence's block table addresses at least.
CAPACITY = 600
#: test_fp8.py's criterion: P is rounded to e4m3 before P V, so max |O - ref|
#: < OUT_TOLERANCE * max |ref|, and the LSE within LSE_TOLERANCE.
OUT_TOLERANCE = 0.08
LSE_TOLERANCE = 1e-2


def fp8(*shape, device="cuda"):
    """Random e4m3 values of moderate size (test_fp8.py's)."""
    return torch.randn(*shape, device=device).clamp(-8, 8).to(torch.float8_e4m3fn)


def nan_fp8(shape, device="cuda"):
    """An e4m3 tensor of NaN: the cache rows that must never reach the output."""
    return torch.full(shape, float("nan"), device=device).to(torch.float8_e4m3fn)


def ragged_lengths(rng, capacity=CAPACITY):
    """B lengths in a shuffled order: 0, one that is not a multiple of 128,
    and one of the full capacity, a whole number of blocks or a few keys."""
    ragged = rng.choice([n for n in range(1, capacity) if n % 128])
    lengths = [0, ragged, rng.choice([capacity, 256, 3, rng.randint(1, capacity)])]
    rng.shuffle(lengths)
    return lengths


def make_cache(lengths, d, page, seed, device="cuda", mark_unused=True):
    """(k_cache, v_cache, block_table or None, keys, values): FP8 caches holding
    keys[b] / values[b] ([lengths[b], HKV, d] e4m3) as their first rows, every
    other row NaN: past each sequence, the spare pages, the unused pages. A
    paged cache's pages are shuffled; unused block-table entries are -1 (with
    mark_unused; else they keep their NaN pages, where keys can be appended). Bytes
    move as uint8 (float8 has few torch ops)."""
    generator = torch.Generator().manual_seed(seed)
    keys = [fp8(n, HKV, d, device=device) for n in lengths]
    values = [fp8(n, HKV, d, device=device) for n in lengths]
    if not page:
        kc, vc = nan_fp8((B, CAPACITY, HKV, d), device), nan_fp8((B, CAPACITY, HKV, d), device)
        for b, n in enumerate(lengths):
            kc.view(torch.uint8)[b, :n] = keys[b].view(torch.uint8)
            vc.view(torch.uint8)[b, :n] = values[b].view(torch.uint8)
        return kc, vc, None, keys, values
    max_blocks = -(-CAPACITY // page)
    pages = B * max_blocks + 3
    order = torch.randperm(pages, generator=generator)
    table = order[:B * max_blocks].reshape(B, max_blocks).to(torch.int32)
    kc, vc = nan_fp8((pages, page, HKV, d), device), nan_fp8((pages, page, HKV, d), device)
    for b, n in enumerate(lengths):
        used = -(-n // page)
        for j in range(used):
            rows = slice(j * page, min(n, (j + 1) * page))
            count = rows.stop - rows.start
            p = int(table[b, j])
            kc.view(torch.uint8)[p, :count] = keys[b][rows].view(torch.uint8)
            vc.view(torch.uint8)[p, :count] = values[b][rows].view(torch.uint8)
        if mark_unused:
            table[b, used:] = -1
    return kc, vc, table.to(device), keys, values


def make_descales(kind, device="cuda"):
    """(q_descale, k_descale, v_descale): one element each ("tensor"), or one
    per (batch, kv head) ("head"), in [0.5, 1.5)."""
    shape = (1,) if kind == "tensor" else (B, HKV)
    return tuple(torch.rand(shape, device=device) + 0.5 for _ in range(3))


def dequantize_q(q8, q_descale):
    """q8.float() * q_descale: one value, or q_descale[b, h // (H / HKV)]."""
    q = q8.float()
    if q_descale.numel() == 1:
        return q * q_descale.reshape(1)
    group = q.shape[2] // q_descale.shape[1]
    return q * q_descale.repeat_interleave(group, dim=1)[:, None, :, None]


def dequantize_rows(rows8, descale, b):
    """Sequence b's cache rows [L, HKV, D] times its descale (one value or
    descale[b, kv head])."""
    rows = rows8.float()
    if descale.numel() == 1:
        return rows * descale.reshape(1)
    return rows * descale[b][None, :, None]


def reference(q, keys, values, scale, causal=False, window=(-1, -1), softcap=0.0,
              slopes=None):
    """float32 decoding on dequantized inputs: q [B, Nq, H, D] over keys[b] /
    values[b] [L_b, HKV, D], the diagonal (causal, windows, ALiBi's distances)
    bottom-right to L_b. Returns out [B, Nq, H, D] (0 for rows that see no key)
    and lse [B, H, Nq] (-inf there)."""
    b_count, nq, h, d = q.shape
    out = torch.zeros(b_count, nq, h, d, device=q.device)
    lse = torch.full((b_count, h, nq), -math.inf, device=q.device)
    for b in range(b_count):
        n = keys[b].shape[0]
        if n == 0:
            continue
        group = h // keys[b].shape[1]
        k = keys[b].repeat_interleave(group, dim=1)
        v = values[b].repeat_interleave(group, dim=1)
        s = torch.einsum("qhd,khd->hqk", q[b], k) * scale
        if softcap:
            s = softcap * torch.tanh(s / softcap)
        diagonal = torch.arange(nq, device=q.device)[:, None] + n - nq
        j = torch.arange(n, device=q.device)[None, :]
        if slopes is not None:
            s = s - slopes[:, None, None] * (diagonal - j).abs()
        seen = torch.ones(nq, n, dtype=torch.bool, device=q.device)
        if causal:
            seen &= j <= diagonal
        if window[0] >= 0:
            seen &= j >= diagonal - window[0]
        if window[1] >= 0:
            seen &= j <= diagonal + window[1]
        s = s.masked_fill(~seen, -math.inf)
        row_lse = torch.logsumexp(s, dim=-1)
        p = torch.exp(s - torch.where(torch.isinf(row_lse), 0.0, row_lse)[..., None])
        out[b] = torch.einsum("hqk,khd->qhd", p, v)
        lse[b] = row_lse
    return out, lse


@unittest.skipUnless(HAVE_SM90, "needs an sm_90 GPU and torch with float8_e4m3fn")
class Fp8KvCacheGpuTest(unittest.TestCase):
    def setUp(self):
        # The reference's float32 matmuls without TF32.
        self.tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False

    def tearDown(self):
        torch.backends.cuda.matmul.allow_tf32 = self.tf32

    def check(self, out, lse, q8, keys, values, descales, causal=False, window=(-1, -1),
              softcap=0.0, slopes=None):
        """out and lse (None: not asked) against the dequantized reference: no
        NaN (the poisoned rows were never read), rows that see no key exactly 0
        with LSE -inf, test_fp8.py's bounds elsewhere."""
        d = q8.shape[-1]
        qd, kd, vd = descales
        q = dequantize_q(q8, qd)
        ks = [dequantize_rows(k, kd, b) for b, k in enumerate(keys)]
        vs = [dequantize_rows(v, vd, b) for b, v in enumerate(values)]
        ref, ref_lse = reference(q, ks, vs, d ** -0.5, causal, window, softcap, slopes)
        self.assertEqual((out.dtype, tuple(out.shape)), (torch.bfloat16, tuple(q8.shape)))
        self.assertFalse(torch.isnan(out).any().item(), "NaN in out: a poisoned row was read")
        empty = torch.isinf(ref_lse).transpose(1, 2)  # [B, Nq, H]
        self.assertTrue((out[empty] == 0).all().item(), "rows that see no key must be 0")
        err = (out.float() - ref).abs().max().item()
        self.assertLess(err, OUT_TOLERANCE * max(ref.abs().max().item(), 1e-6))
        if lse is None:
            return
        self.assertEqual(tuple(lse.shape), tuple(ref_lse.shape))
        finite = torch.isfinite(ref_lse)
        self.assertTrue(torch.equal(finite, torch.isfinite(lse)), "LSE -inf where no key")
        self.assertTrue(torch.isneginf(lse[~finite]).all().item())
        if finite.any():
            self.assertLess((lse - ref_lse)[finite].abs().max().item(), LSE_TOLERANCE)

    def test_ragged_decoding(self):
        """Every head dim, contiguous and paged (64 and 256 rows, shuffled),
        causal or not, Nq 1 and 4, splits 1 (none), 0 (attngen's choice) and 3,
        descales per tensor and per (batch, kv head) in turn."""
        rng = random.Random(5)
        calls = 0
        for d in (64, 128, 256):
            for page in (0, 64, 256):
                for causal in (False, True):
                    for nq in (1, 4):
                        seed = rng.randrange(1 << 30)
                        torch.manual_seed(seed)
                        lengths = ragged_lengths(rng)
                        kc, vc, table, keys, values = make_cache(lengths, d, page, seed)
                        q8 = fp8(B, nq, H, d)
                        lengths_t = torch.tensor(lengths, dtype=torch.int32, device="cuda")
                        for splits in (1, 0, 3):
                            kind = ("tensor", "head")[calls % 2]
                            with_lse = calls % 3 != 2
                            calls += 1
                            descales = make_descales(kind)
                            with self.subTest(d=d, page=page, causal=causal, nq=nq,
                                              lengths=lengths, num_splits=splits,
                                              descales=kind, lse=with_lse):
                                result = attngen.attention_with_kvcache(
                                    q8, kc, vc, lengths_t, table, causal=causal,
                                    num_splits=splits, return_lse=with_lse,
                                    q_descale=descales[0], k_descale=descales[1],
                                    v_descale=descales[2])
                                out, lse = result if with_lse else (result, None)
                                self.check(out, lse, q8, keys, values, descales, causal)

    def test_softcap_alibi_windows(self):
        """Soft caps, ALiBi and sliding windows with GQA head packing and
        forced splits, on a paged cache."""
        rng = random.Random(7)
        slopes = torch.rand(H, device="cuda") * 0.1
        for d, page, softcap, alibi, window, splits in (
                (128, 64, 30.0, False, (-1, -1), 3), (64, 256, 0.0, True, (-1, -1), 0),
                (128, 0, 0.0, False, (100, 0), 3), (256, 128, 20.0, True, (50, 0), 2),
                (64, 32, 0.0, False, (200, 0), 1)):
            with self.subTest(d=d, page=page, softcap=softcap, alibi=alibi, window=window,
                              num_splits=splits):
                torch.manual_seed(d + page)
                lengths = ragged_lengths(rng)
                kc, vc, table, keys, values = make_cache(lengths, d, page, d)
                q8 = fp8(B, 4, H, d)
                descales = make_descales("head")
                out, lse = attngen.attention_with_kvcache(
                    q8, kc, vc, torch.tensor(lengths, dtype=torch.int32, device="cuda"), table,
                    softcap=softcap, window_size=window, num_splits=splits, return_lse=True,
                    alibi_slopes=slopes if alibi else None, q_descale=descales[0],
                    k_descale=descales[1], v_descale=descales[2])
                self.check(out, lse, q8, keys, values, descales, window=window,
                           softcap=softcap, slopes=slopes if alibi else None)

    def test_torch_compile_and_custom_op(self):
        """Traced calls go through torch.ops.attngen.attention_with_kvcache with
        the descales and give the eager result; its fake implementation says
        bfloat16."""
        lengths = [0, 300, 600]
        kc, vc, table, _, _ = make_cache(lengths, 128, 64, 1)
        q8 = fp8(B, 1, H, 128)
        lengths_t = torch.tensor(lengths, dtype=torch.int32, device="cuda")
        qd, kd, vd = make_descales("head")

        def call(q8, qd, kd, vd):
            return attngen.attention_with_kvcache(q8, kc, vc, lengths_t, table, causal=True,
                                                  num_splits=3, q_descale=qd, k_descale=kd,
                                                  v_descale=vd)
        eager = call(q8, qd, kd, vd)
        compiled = torch.compile(call, fullgraph=True)(q8, qd, kd, vd)
        self.assertTrue(torch.equal(eager, compiled))
        # test_schema compares inputs with allclose, which torch lacks for float8.
        torch.library.opcheck(torch.ops.attngen.attention_with_kvcache.default,
                              (q8, kc, vc, lengths_t, table, True, 0.0, 0.0, True, 3, -1, -1,
                               None, qd, kd, vd),
                              test_utils=("test_faketensor", "test_autograd_registration"))

    def test_cuda_graph(self):
        """A split call on FP8 caches captured in a CUDA graph and replayed on
        new queries and descales."""
        lengths = [5, 599, 0]
        kc, vc, table, keys, values = make_cache(lengths, 64, 0, 2)
        lengths_t = torch.tensor(lengths, dtype=torch.int32, device="cuda")
        q8 = fp8(B, 1, H, 64)
        descales = make_descales("tensor")

        def call():
            return attngen.attention_with_kvcache(q8, kc, vc, lengths_t, num_splits=3,
                                                  q_descale=descales[0], k_descale=descales[1],
                                                  v_descale=descales[2])
        call()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = call()
        q8.view(torch.uint8).copy_(fp8(B, 1, H, 64).view(torch.uint8))
        for d, new in zip(descales, make_descales("tensor")):
            d.copy_(new)
        graph.replay()
        torch.cuda.synchronize()
        self.check(out, None, q8, keys, values, descales)

    def test_flash_attn_with_kvcache_appends_e4m3(self):
        """flash_attn_with_kvcache with FA3's descale keywords: e4m3 keys and
        values appended into FP8 caches (copied as they are), then attended."""
        from attngen.flash_attn_interface import flash_attn_with_kvcache
        lengths = [0, 130, 597]
        # Appended keys go to the pages the block table names past each
        # length, as flash_attn's callers allocate them.
        kc, vc, table, keys, values = make_cache(lengths, 128, 64, 3, mark_unused=False)
        new_k, new_v = fp8(B, 2, HKV, 128), fp8(B, 2, HKV, 128)
        q8 = fp8(B, 2, H, 128)
        descales = make_descales("head")
        out, lse = flash_attn_with_kvcache(
            q8, kc, vc, new_k, new_v, cache_seqlens=torch.tensor(lengths, dtype=torch.int32,
                                                                 device="cuda"),
            block_table=table, causal=True, return_softmax_lse=True, q_descale=descales[0],
            k_descale=descales[1], v_descale=descales[2])
        keys = [torch.cat([k.view(torch.uint8), n.view(torch.uint8)]).view(torch.float8_e4m3fn)
                for k, n in zip(keys, new_k)]
        values = [torch.cat([v.view(torch.uint8), n.view(torch.uint8)]).view(torch.float8_e4m3fn)
                  for v, n in zip(values, new_v)]
        # flash_attn reports +inf for rows without keys; every row sees one here.
        self.check(out, lse, q8, keys, values, descales, causal=True)

    def test_attention_decodes_with_the_kvcache_kernels(self):
        """attngen.attention on a few FP8 query rows over a row-major v takes
        the decoding kernels: the same bits as attention_with_kvcache on the
        same tensors, and the reference's values."""
        import attngen
        torch.manual_seed(7)
        for nq, causal in ((1, False), (5, True)):
            q8, k8, v8 = fp8(B, nq, H, 128), fp8(B, 300, HKV, 128), fp8(B, 300, HKV, 128)
            descales = make_descales("head")
            kw = dict(causal=causal, return_lse=True, q_descale=descales[0],
                      k_descale=descales[1], v_descale=descales[2])
            out, lse = attngen.attention(q8, k8, v8, **kw)
            cache_out, cache_lse = attngen.attention_with_kvcache(q8, k8, v8, None, None, **kw)
            self.assertTrue(torch.equal(out, cache_out))
            self.assertTrue(torch.equal(lse, cache_lse))
            self.check(out, lse, q8, list(k8), list(v8), descales, causal=causal)


if __name__ == "__main__":
    unittest.main()
