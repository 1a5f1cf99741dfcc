#!/usr/bin/env python3
"""The shared harness of the GPU check scripts (check_and_bench.py, python_check.py,
varlen_check.py, decode_check.py, sanitize_case.py): one copy of what each check needs,
so a fix to the reference, the poisoning or the timing reaches every script at once.

* masks: the visibility rule of causal masks (both alignments) and sliding windows,
  the keys each row sees (for the visible-FLOP count), a kernel's mask from its
  attnrt_kernel_info;
* references: float32 (or float64) attention with causal masks, windows, soft caps,
  GQA and LSE, on dense [B, N, H, D] tensors, on packed variable-length batches, and
  on KV caches (per-sequence keys; the paged gather);
* poisoning: inputs in the layouts the checks use, outputs filled with NaN and framed by
  SENTINEL guards, memory handed back NaN-filled to an API that allocates its outputs,
  and the verdict on a result (relative error, NaN, rows without keys, LSE, guards);
* timing: CUDA events behind a sleep kernel, warm-up, medians, torch SDPA's flash and
  cuDNN backends as peers timed in the same run as attngen, TFLOPS by the FlashAttention
  convention (4 * B * H * Nq * Nk * D, halved when causal) and bandwidth for decoding;
* ctypes: libattnrt's C API (its structs built from the library's own layout table by
  python/attngen/_abi.py), child processes that survive a faulting or hanging kernel,
  and which errors leave the CUDA context unusable;
* results: short tables, JSON files, the environment.

Nothing here imports torch at load time: the scripts' pure parts (case lists, tables)
run without it. Checked on the CPU by

    python3 gpu/harness.py --self-test     # the torch parts are skipped without torch
"""

import ctypes
import functools
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# --------------------------------------------------------------------------------------
# Tolerances and poison values
# --------------------------------------------------------------------------------------

#: Relative Frobenius error bound of O per dtype.
REL_TOL = {"bf16": 1e-2, "f16": 3e-3}
#: LSE bound: |lse - ref| < LSE_TOL * max(1, |ref|).
LSE_TOL = 2e-2
#: Value written around outputs to detect stray writes (exact in f16, bf16 and f32).
SENTINEL = 1024.0
#: Elements of guard region before and after a poisoned output.
GUARD = 4096
#: Spare columns per row of the "padded" layout (guards too, in an output).
ROW_PAD = 8
#: Largest score matrix (elements) of one reference chunk.
REF_CHUNK_ELEMS = 1 << 28
#: A window_size with both sides unbounded: no window.
NO_WINDOW = (-1, -1)

# --------------------------------------------------------------------------------------
# Masks
# --------------------------------------------------------------------------------------


def visible(i, j, nq, nk, causal=False, bottom_right=False, window=NO_WINDOW):
    """Whether query row i sees key column j, elementwise over broadcast index arrays
    (torch, numpy or plain ints): j in [0, nk), and around the row's diagonal d = i
    (+ nk - nq bottom-right), j <= d when causal, d - left <= j <= d + right for the
    window's bounded sides (flash_attn's window_size). The one statement of the rule
    (docs/ABI.md) that every reference and count here uses."""
    d = i + (nk - nq if bottom_right else 0)
    left, right = window
    seen = (j >= 0) & (j < nk) & (i >= 0) & (i < nq)
    if causal:
        seen = seen & (j <= d)
    if right >= 0:
        seen = seen & (j <= d + right)
    if left >= 0:
        seen = seen & (j >= d - left)
    return seen


def has_window(window):
    """Whether a (left, right) window bounds either side."""
    return window[0] >= 0 or window[1] >= 0


def visibility_mask(nq, nk, causal=False, bottom_right=False, window=NO_WINDOW,
                    device="cpu"):
    """The (Nq, Nk) boolean mask of `visible`, or None when every key is visible
    (no causal mask, no window): callers skip the masking then."""
    if not causal and not has_window(window):
        return None
    import torch
    rows = torch.arange(nq, device=device)[:, None]
    cols = torch.arange(nk, device=device)[None, :]
    return visible(rows, cols, nq, nk, causal, bottom_right, window)


def visible_keys(nq, nk, causal=False, bottom_right=False, window=NO_WINDOW):
    """Sum over query rows of the keys each row sees (closed form per row): the
    visible-FLOP count of a sliding window's TFLOPS."""
    off = nk - nq if bottom_right else 0
    left, right = window
    if causal:
        right = 0  # a causal row sees no key right of its diagonal
    total = 0
    for i in range(nq):
        d = i + off
        lo = max(0, d - left) if left >= 0 else 0
        hi = min(nk - 1, d + right) if right >= 0 else nk - 1
        total += max(0, hi - lo + 1)
    return total


def kernel_mask(info):
    """A kernel's mask from its attnrt_kernel_info (as `struct_dict` gives it; the
    runtime reads the metadata's problem keys into it, docs/ABI.md): a dict of causal
    (bool), bottom_right (bool: the diagonal of a causal mask or window is
    i + nk - nq), window (left, right; -1 unbounded) and softcap (0.0: none)."""
    return {"causal": bool(info["causal"]),
            "bottom_right": info["causal_align"] == ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT,
            "window": (int(info["window_left"]), int(info["window_right"])),
            "softcap": float(info["softcap"])}


# --------------------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------------------


def reference(q, k, v, scale, causal=False, bottom_right=False, softcap=0.0,
              window=NO_WINDOW, compute_dtype=None):
    """Attention in float32 (or `compute_dtype`) on q's device: O (B, Nq, H, Dv) and
    LSE (B, H, Nq), natural log, for q [B, Nq, H, D], k [B, Nk, Hkv, D] and v
    [B, Nk, Hkv, Dv] (Dv: v's head dim, D's unless it has its own)
    (query head h reads key/value head h / (H / Hkv)). The mask is `visible`'s; a
    row that sees no key gets O = 0 and LSE = -inf (also when Nk = 0). With
    `softcap` c > 0 the scaled scores become c * tanh(s / c) before the mask (LSE
    of the capped scores). Chunked over heads so that long sequences fit."""
    import torch
    compute_dtype = compute_dtype or torch.float32
    b, nq, h, d = q.shape
    nk, hkv = k.shape[1], k.shape[2]
    group = h // hkv
    device = q.device
    out = torch.empty(b, nq, h, v.shape[-1], dtype=compute_dtype, device=device)
    lse = torch.empty(b, h, nq, dtype=compute_dtype, device=device)
    mask = visibility_mask(nq, nk, causal, bottom_right, window, device)
    heads_per_chunk = max(1, min(h, REF_CHUNK_ELEMS // max(1, nq * nk)))
    for bi in range(b):
        for h0 in range(0, h, heads_per_chunk):
            h1 = min(h, h0 + heads_per_chunk)
            kv = torch.arange(h0, h1, device=device) // group
            qh = q[bi, :, h0:h1].to(compute_dtype).permute(1, 0, 2)   # (hc, Nq, D)
            kh = k[bi][:, kv].to(compute_dtype).permute(1, 0, 2)      # (hc, Nk, D)
            vh = v[bi][:, kv].to(compute_dtype).permute(1, 0, 2)
            s = torch.matmul(qh, kh.transpose(1, 2)) * scale          # (hc, Nq, Nk)
            if softcap:
                s = softcap * torch.tanh(s / softcap)
            if mask is not None:
                s.masked_fill_(~mask, float("-inf"))
            l = torch.logsumexp(s, dim=-1)
            # Rows with every score -inf: l = -inf, p = 0 (not exp(nan)).
            p = torch.exp(s - torch.where(torch.isinf(l), 0.0, l)[..., None])
            out[bi, :, h0:h1] = torch.matmul(p, vh).permute(1, 0, 2)
            lse[bi, h0:h1] = l
            del s, p
    return out, lse


def cu_seqlens(lengths):
    """[0, l0, l0 + l1, ...]: where each packed sequence starts, then the total."""
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return out


def varlen_reference(q, k, v, lengths_q, lengths_k, scale, causal=False, bottom_right=False,
                     softcap=0.0, window=NO_WINDOW, compute_dtype=None):
    """`reference` per sequence of a packed batch (flash_attn_varlen_func's layout):
    q (total_q, H, D), k, v (total_k, Hkv, D); out (total_q, H, D) and lse (H,
    total_q). Each sequence has its own mask and window (its own diagonal); the
    queries of a sequence without keys get out 0, lse -inf."""
    import torch
    compute_dtype = compute_dtype or torch.float32
    out = torch.zeros((*q.shape[:-1], v.shape[-1]), dtype=compute_dtype, device=q.device)
    lse = torch.full((q.shape[1], q.shape[0]), float("-inf"), dtype=compute_dtype,
                     device=q.device)
    cq, ck = cu_seqlens(lengths_q), cu_seqlens(lengths_k)
    for b in range(len(lengths_q)):
        if lengths_q[b] == 0 or lengths_k[b] == 0:
            continue
        o, l = reference(q[None, cq[b]:cq[b + 1]], k[None, ck[b]:ck[b + 1]],
                         v[None, ck[b]:ck[b + 1]], scale, causal, bottom_right, softcap,
                         window, compute_dtype)
        out[cq[b]:cq[b + 1]] = o[0]
        lse[:, cq[b]:cq[b + 1]] = l[0]
    return out, lse


def kvcache_reference(q, keys, values, scale, causal=False, softcap=0.0, compute_dtype=None):
    """Decoding's reference (flash_attn_with_kvcache's problem): q [B, Nq, H, D] over
    the keys of each sequence, keys[b] and values[b] [L_b, Hkv, D] (`gather_kv_cache`
    reads them out of a cache), causal bottom-right to L_b. The packed reference with
    Nq queries per sequence; O (B, Nq, H, D), LSE (B, H, Nq)."""
    import torch
    b, nq, h, d = q.shape
    lengths = [t.shape[0] for t in keys]
    out, lse = varlen_reference(q.reshape(b * nq, h, d), torch.cat(keys), torch.cat(values),
                                [nq] * b, lengths, scale, causal, True, softcap,
                                compute_dtype=compute_dtype)
    return out.view(b, nq, h, d), lse.view(h, b, nq).permute(1, 0, 2).contiguous()


def gather_kv_cache(cache, lengths, block_table=None):
    """The first lengths[b] rows of each sequence of a KV cache: cache[b] of a
    contiguous cache [B, capacity, Hkv, D], or the pages block_table[b] names in a
    paged one [num_pages, page_size, Hkv, D] (unused table entries are not read)."""
    import torch
    if block_table is None:
        return [cache[b, :n] for b, n in enumerate(lengths)]
    page = cache.shape[1]
    sequences = []
    for b, n in enumerate(lengths):
        pages = [int(p) for p in block_table[b, :math.ceil(n / page)]]
        rows = (torch.cat([cache[p] for p in pages]) if pages
                else cache[:0].reshape(0, *cache.shape[2:]))
        sequences.append(rows[:n])
    return sequences


# --------------------------------------------------------------------------------------
# Inputs, poisoned outputs, verdicts
# --------------------------------------------------------------------------------------

#: Memory layouts of a logical tensor [..., D]: contiguous ("bnhd" is python_check's
#: name for it), "bhnd" (a [B, N, H, D] tensor stored as [B, H, N, D] and viewed back:
#: SDPA's layout) and "padded" (rows of D + ROW_PAD elements, the first D used).
LAYOUTS = ("contiguous", "bnhd", "bhnd", "padded")


def _storage(shape, layout):
    """(the shape a tensor of logical `shape` is allocated with in `layout`, the
    function that views that allocation as the logical tensor)."""
    shape = tuple(shape)
    if layout in ("contiguous", "bnhd"):
        return shape, lambda t: t
    if layout == "bhnd":
        b, n, h, d = shape
        return (b, h, n, d), lambda t: t.transpose(1, 2)
    if layout == "padded":
        d = shape[-1]
        return shape[:-1] + (d + ROW_PAD,), lambda t: t[..., :d]
    raise ValueError(f"unknown layout {layout!r} (one of {', '.join(LAYOUTS)})")


def make_input(shape, dtype, layout="contiguous", device="cuda"):
    """A random normal tensor of logical `shape` in `layout` (see LAYOUTS)."""
    import torch
    storage, view = _storage(shape, layout)
    return view(torch.randn(storage, dtype=dtype, device=device))


def poisoned_output(shape, dtype, layout="contiguous", device="cuda"):
    """(an output of logical `shape` in `layout` filled with NaN, its guards): the
    GUARD elements before and after its allocation, and a padded layout's spare
    columns, all SENTINEL. A NaN left in the output is an element never written; a
    guard that changed is a write outside the output (`guards_intact`)."""
    import torch
    storage, view = _storage(shape, layout)
    numel = math.prod(storage)
    flat = torch.full((GUARD + numel + GUARD,), SENTINEL, dtype=dtype, device=device)
    stored = flat[GUARD:GUARD + numel].view(storage)
    out = view(stored)
    out.fill_(float("nan"))
    guards = [flat[:GUARD], flat[GUARD + numel:]]
    if layout == "padded":
        guards.append(stored[..., shape[-1]:])
    return out, guards


def guards_intact(guards):
    """Whether every guard still holds SENTINEL everywhere."""
    return all(bool((g == SENTINEL).all().item()) for g in guards)


def poison_next_allocations(specs, device="cuda"):
    """For outputs the API under test allocates itself: fills a block of each
    (shape, dtype) of `specs` with NaN and frees it, in order, so that PyTorch's
    caching allocator hands those blocks to the next allocations of the same sizes
    (the API's outputs start as NaN: an element it never writes shows). Returns the
    blocks' addresses for `reused_poisoned_blocks`."""
    import torch
    baits = [torch.full(shape, float("nan"), dtype=dtype, device=device)
             for shape, dtype in specs]
    addresses = [t.data_ptr() for t in baits]
    for i in range(len(baits)):  # freed in order, as allocated
        baits[i] = None
    return addresses


def reused_poisoned_blocks(tensors, addresses):
    """Whether each tensor got the poisoned block meant for it (None and empty
    tensors need none): if not, its NaN check proved less, and the scripts say so."""
    return all(t is None or t.numel() == 0 or t.data_ptr() == a
               for t, a in zip(tensors, addresses))


def call_into_poisoned_blocks(call, out_spec, lse_spec=None, device="cuda"):
    """Runs `call` (an API call that allocates its outputs: O, and an LSE when
    `lse_spec` is given, returned as (O, LSE)) with the blocks of their (shape,
    dtype) specs just filled with NaN; returns (O, LSE or None, whether they got
    the poisoned blocks)."""
    addresses = poison_next_allocations([out_spec] + ([lse_spec] if lse_spec else []), device)
    result = call()
    out, lse = result if lse_spec else (result, None)
    return out, lse, reused_poisoned_blocks((out, lse), addresses)


def rel_error(out, ref):
    """Relative Frobenius error ||out - ref|| / ||ref|| in float64 (the absolute
    error where ref is 0: rows without keys must be exactly 0)."""
    ref64 = ref.double()
    denom = ref64.norm().item()
    num = (out.double() - ref64).norm().item()
    return num / denom if denom > 0 else num


def lse_error(lse, ref_lse):
    """(|lse - ref| per row, its bound): LSE_TOL * max(1, |ref|), and a -inf reference
    (a row that sees no key) must be matched exactly (bound 0, error 0 only if equal)."""
    import torch
    matched_inf = (lse == ref_lse) & torch.isinf(ref_lse)
    err = torch.where(matched_inf, torch.zeros_like(lse), (lse - ref_lse).abs())
    bound = torch.where(torch.isinf(ref_lse), torch.zeros_like(ref_lse),
                        LSE_TOL * ref_lse.abs().clamp(min=1.0))
    return err, bound


def judge(out, lse, ref, ref_lse, dname, guards=None):
    """The verdict on one result against `reference`'s (O rows before heads, LSE heads
    before rows: [B, Nq, H, D] / [B, H, Nq] or packed [T, H, D] / [H, T]): rel, nan,
    lse_err (None without an LSE), empty_rows (rows that see no key) and
    empty_rows_zero (O exactly 0 there), with an LSE also nan_in_lse and lse_ok, one
    entry per named guard list of `guards` ({result key: guards}), and passed: rel
    below REL_TOL[dname], no NaN, empty rows 0, LSE within lse_error's bound,
    guards intact."""
    import torch
    rel = rel_error(out, ref)
    nan = int(torch.isnan(out).sum().item())
    rows_without_keys = torch.isinf(ref_lse).movedim(-2, -1)  # as O's rows and heads
    empty_zero = bool((out[rows_without_keys] == 0).all().item())
    verdict = dict(rel=rel, nan=nan, lse_err=None,
                   empty_rows=int(rows_without_keys.sum().item()), empty_rows_zero=empty_zero)
    passed = math.isfinite(rel) and rel < REL_TOL[dname] and nan == 0 and empty_zero
    if lse is not None and lse.numel():
        err, bound = lse_error(lse, ref_lse)
        nan_lse = int(torch.isnan(lse).sum().item())
        lse_ok = nan_lse == 0 and bool((err <= bound).all().item())
        verdict.update(lse_err=float(err.max().item()) if nan_lse == 0 else float("nan"),
                       nan_in_lse=nan_lse, lse_ok=lse_ok)
        passed = passed and lse_ok
    for key, guard_list in (guards or {}).items():
        verdict[key] = guards_intact(guard_list)
        passed = passed and verdict[key]
    verdict["passed"] = passed
    return verdict


def worst_rel(values):
    """The largest relative error, NaN ranked above any number (max() would skip it:
    NaN compares false with everything); None when there is none."""
    ranked = [v if math.isfinite(v) else math.inf for v in values if v is not None]
    return max(ranked) if ranked else None


def precise_float32():
    """Float32 matmuls and convolutions in full precision (no TF32): the reference
    must be more precise than the kernels it judges."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


# --------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------


def median(values):
    """The upper median (the middle of an odd count, the larger middle of an even)."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def time_ms(fn, warmup, iters):
    """Median time of `fn` in ms from per-call CUDA events, after `warmup` untimed
    calls. The GPU is first held busy with a sleep kernel so that all timed calls are
    queued before the first one runs: the events then time the GPU work alone, not
    the host's launch overhead."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None:
        sleep(100_000_000)  # ~50 ms of GPU clock cycles
    for i in range(iters):
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return median(s.elapsed_time(e) for s, e in zip(starts, ends))


def warm_up_gpu(seconds=2.0):
    """Bf16 GEMMs 8192^3 until the clocks settle, so the first timed case is not
    slowed by a GPU still ramping up."""
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()


def short_error(e, limit=300):
    """An exception as one line: its type and the first line of its message."""
    lines = str(e).splitlines()
    return f"{type(e).__name__}: {(lines[0] if lines else '')[:limit]}"


def try_time(fn, warmup, iters):
    """(ms, None), or (None, why) when `fn` raised: a peer may refuse a shape, and
    the run goes on. fn is called once first (its compile or plan is not timed)."""
    try:
        fn()
        return time_ms(fn, warmup, iters), None
    except Exception as e:  # noqa: BLE001 -- reported in the row
        return None, short_error(e)


def attention_flops(b, h, nq, nk, d, causal=False, visible_per_head=None):
    """FLOPs by the FlashAttention convention, 4 * B * H * Nq * Nk * D (halved when
    causal), or with `visible_per_head` (the keys all rows of one head see) the
    visible FLOPs 4 * B * H * D * visible_per_head, as for a sliding window."""
    if visible_per_head is not None:
        return 4.0 * b * h * d * visible_per_head
    flops = 4.0 * b * h * nq * nk * d
    return flops / 2 if causal else flops


def varlen_attention_flops(lengths_q, lengths_k, h, d, causal=False):
    """`attention_flops` summed over the sequences of a packed batch."""
    total = sum(4 * h * nq * nk * d for nq, nk in zip(lengths_q, lengths_k))
    return total / 2 if causal else total


def tflops(flops, ms):
    """TFLOPS of `flops` done in `ms` milliseconds."""
    return flops / (ms * 1e-3) / 1e12


def kv_bytes(b, nk, hkv, d, element_bytes=2):
    """The bytes of K and V a decoding call reads (the cache's, whatever its pages)."""
    return 2 * b * nk * hkv * d * element_bytes


def gbps(nbytes, ms):
    """GB/s of `nbytes` moved in `ms` milliseconds."""
    return nbytes / (ms * 1e-3) / 1e9


def bench_heads(head_dim):
    """Heads of the PEERS shapes: H * D = 2048, rounded to the nearest whole head
    when D does not divide it (d96: 21 heads, H * D = 2016; d192: 11, 2112; TFLOPS
    count the heads used)."""
    return max(1, round(2048 / head_dim))


def bench_batch(n):
    """Batch of the PEERS shapes: B * N = 16384 tokens."""
    return max(1, 16384 // n)


def bench_shapes(head_dim, n_list=None, gqa=False):
    """PEERS table: B*N = 16384 tokens, H*D = 2048 (bench_heads), as (B, H, Hkv, N);
    with `gqa`, also PEERS' grouped-query row at d128: 64 query heads on 8 KV heads,
    N = 8k, B = 2."""
    if n_list is None:
        n_list = [1024, 4096, 8192] if head_dim == 128 else [1024, 8192]
    heads = bench_heads(head_dim)
    shapes = [(bench_batch(n), heads, heads, n) for n in n_list]
    if gqa and head_dim == 128:
        shapes.append((2, 64, 8, 8192))
    return shapes


#: The peers: torch SDPA's backends by the name the tables use.
SDPA_BACKENDS = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION"}


def sdpa_call(backend, q, k, v, causal=False, scale=None, repeat_heads=False):
    """A call of torch's scaled_dot_product_attention pinned to one backend ("flash"
    or "cudnn") on (B, H, N, D) views of [B, N, H, D] q, k, v: the same memory
    attngen reads. Fewer K/V heads than query heads go through enable_gqa, or with
    `repeat_heads` as repeated heads (for backends without GQA). Returns (B, H, Nq,
    D) when called; raises here if this torch has no sdpa_kernel."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    chosen = getattr(SDPBackend, SDPA_BACKENDS[backend])
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    kwargs = {"is_causal": causal}
    if scale is not None:
        kwargs["scale"] = scale
    group = q.shape[2] // k.shape[2]
    if group != 1 and repeat_heads:
        kt, vt = kt.repeat_interleave(group, dim=1), vt.repeat_interleave(group, dim=1)
    elif group != 1:
        kwargs["enable_gqa"] = True

    def call():
        with sdpa_kernel(chosen):
            return F.scaled_dot_product_attention(qt, kt, vt, **kwargs)
    return call


def time_peer(row, label, make_call, warmup, iters, flops=None):
    """Times one peer into row[label_ms] (and row[label_tflops] given `flops`), or
    records in row[label_error] why it could not run: a backend that refuses a shape
    is a result, not a failure. Returns the output of the peer's first call (for
    cross-checks), None when it failed."""
    import torch
    try:
        call = make_call()
        out = call()
        torch.cuda.synchronize()
        ms = time_ms(call, warmup, iters)
    except Exception as e:  # noqa: BLE001 -- a backend may refuse
        row[f"{label}_error"] = short_error(e)
        return None
    row[f"{label}_ms"] = ms
    if flops is not None:
        row[f"{label}_tflops"] = tflops(flops, ms)
    return out


# --------------------------------------------------------------------------------------
# The runtime's C API through ctypes (structs from python/attngen/_abi.py)
# --------------------------------------------------------------------------------------

ATTNRT_ABI_VERSION = 3
ATTNRT_OK = 0
ATTNRT_ERROR_INVALID_ARGUMENT = 1
ATTNRT_ERROR_UNSUPPORTED_DEVICE = 5
ATTNRT_DTYPE_F16 = 1
ATTNRT_DTYPE_BF16 = 2
#: attnrt_kernel_info.causal_align values (attnrt_causal_align).
ATTNRT_CAUSAL_ALIGN_TOP_LEFT = 0
ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT = 1


@functools.lru_cache(maxsize=None)
def _abi():
    """python/attngen/_abi.py loaded by path, once, when a Runtime first needs it: the
    attngen package itself needs libattngen, which check_and_bench.py's machine may
    not have."""
    import importlib.util
    path = os.path.join(HERE, "..", "python", "attngen", "_abi.py")
    spec = importlib.util.spec_from_file_location("attngen_abi", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def torch_dtype(code):
    """The torch dtype of an attnrt_dtype."""
    import torch
    return torch.bfloat16 if code == ATTNRT_DTYPE_BF16 else torch.float16


def dtype_name(code):
    """The name the tolerances and tables use for an attnrt_dtype."""
    return "bf16" if code == ATTNRT_DTYPE_BF16 else "f16"


def dtype_code(dtype):
    """The attnrt_dtype of a torch dtype (0, which the runtime refuses, for others);
    by name, so that the argument structs can be built and checked without torch."""
    return {"torch.float16": ATTNRT_DTYPE_F16,
            "torch.bfloat16": ATTNRT_DTYPE_BF16}.get(str(dtype), 0)


def struct_dict(struct):
    """A ctypes struct's members as a dict (strings decoded, arrays as lists)."""
    out = {}
    for name, _ in struct._fields_:
        value = getattr(struct, name)
        if isinstance(value, bytes):
            value = value.decode()
        elif isinstance(value, ctypes.Array):
            value = list(value)
        out[name] = value
    return out


class AttnrtError(RuntimeError):
    """A status other than ATTNRT_OK, with the runtime's message."""

    def __init__(self, status, name, message):
        super().__init__(f"{name}: {message}")
        self.status = status


class FatalCudaError(RuntimeError):
    """A kernel faulted and the CUDA context is unusable: the checks of this process
    stop (the next kernel runs in a fresh child)."""


def is_fatal(e):
    """Whether an exception means the CUDA context is unusable (a kernel faulted)."""
    text = str(e)
    return isinstance(e, FatalCudaError) or any(sign in text for sign in (
        "CUDA error", "CUDA_ERROR_ILLEGAL", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_MISALIGNED",
        "CUDA_ERROR_LAUNCH_TIMEOUT", "unspecified launch failure"))


class Runtime:
    """The C API of libattnrt (or libattngen's attnrt_*) through ctypes."""

    def __init__(self, path):
        self.lib = lib = ctypes.CDLL(os.path.abspath(path))
        lib.attnrt_last_error.restype = ctypes.c_char_p
        lib.attnrt_last_error.argtypes = []
        lib.attnrt_status_name.restype = ctypes.c_char_p
        lib.attnrt_status_name.argtypes = [ctypes.c_int]
        lib.attnrt_abi_version.restype = ctypes.c_int
        self.KernelInfo = KernelInfo = _abi().struct_type(lib, "attnrt_kernel_info")
        self.ForwardArgs = ForwardArgs = _abi().struct_type(lib, "attnrt_forward_args")
        lib.attnrt_module_load_files.restype = ctypes.c_int
        lib.attnrt_module_load_files.argtypes = [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.attnrt_module_unload.restype = ctypes.c_int
        lib.attnrt_module_unload.argtypes = [ctypes.c_void_p]
        lib.attnrt_module_info.restype = ctypes.c_int
        lib.attnrt_module_info.argtypes = [ctypes.c_void_p, ctypes.POINTER(KernelInfo)]
        lib.attnrt_forward.restype = ctypes.c_int
        lib.attnrt_forward.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(ForwardArgs), ctypes.c_void_p]
        lib.attnrt_check_forward_args.restype = ctypes.c_int
        lib.attnrt_check_forward_args.argtypes = [
            ctypes.POINTER(KernelInfo), ctypes.POINTER(ForwardArgs)]
        if lib.attnrt_abi_version() != ATTNRT_ABI_VERSION:
            raise RuntimeError(
                f"{path} implements ABI {lib.attnrt_abi_version()}, this script "
                f"ABI {ATTNRT_ABI_VERSION}: update gpu/harness.py")

    def error(self, status):
        """The AttnrtError of `status`, with the runtime's last message."""
        name = self.lib.attnrt_status_name(status).decode()
        return AttnrtError(status, name, self.lib.attnrt_last_error().decode())

    def forward_args(self, q, k, v, o, lse):
        """attnrt_forward_args for tensors with logical shape [B, N, H, D] (anything
        with data_ptr(), shape, stride() and dtype: the struct is checked without a
        GPU by attnrt_check_forward_args)."""
        a = self.ForwardArgs()
        a.q, a.k, a.v, a.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr()
        a.lse = lse.data_ptr() if lse is not None else None
        a.batch, a.nq, a.num_heads, a.head_dim = q.shape
        a.nk, a.num_kv_heads = k.shape[1], k.shape[2]
        _set_strides(a, (q, k, v, o), packed=False)
        a.dtype = dtype_code(q.dtype)
        return a

    def varlen_forward_args(self, q, k, v, o, lse, cu_q, cu_k, max_q, max_k):
        """attnrt_forward_args for a packed batch: q, o (total_q, H, D), k, v
        (total_k, Hkv, D), lse (H, total_q) or None, int32 cu_seqlens on the GPU."""
        a = self.ForwardArgs()
        a.q, a.k, a.v, a.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr()
        a.lse = lse.data_ptr() if lse is not None else None
        a.batch, a.nq, a.nk = cu_q.numel() - 1, q.shape[0], k.shape[0]
        a.num_heads, a.num_kv_heads, a.head_dim = q.shape[1], k.shape[1], q.shape[2]
        _set_strides(a, (q, k, v, o), packed=True)
        a.dtype = dtype_code(q.dtype)
        a.cu_seqlens_q, a.cu_seqlens_k = cu_q.data_ptr(), cu_k.data_ptr()
        a.max_seqlen_q, a.max_seqlen_k = max_q, max_k
        return a

    def check_args(self, info, args):
        """attnrt_check_forward_args: None if attnrt_forward would launch `args` on
        the kernel `info` describes, else the AttnrtError saying why (no GPU)."""
        status = self.lib.attnrt_check_forward_args(ctypes.byref(info), ctypes.byref(args))
        return None if status == ATTNRT_OK else self.error(status)

    def load(self, ptx_path, json_path):
        """A Module for a kernel's PTX and metadata files."""
        handle = ctypes.c_void_p()
        status = self.lib.attnrt_module_load_files(
            ptx_path.encode(), json_path.encode(), ctypes.byref(handle))
        if status != ATTNRT_OK:
            raise self.error(status)
        return Module(self, handle)


def _set_strides(args, tensors, packed):
    """The stride members of attnrt_forward_args for q, k, v, o (4 each): a packed
    (varlen) tensor has no batch dimension, whose stride is then 0 (unused)."""
    for field, t in zip(("q_strides", "k_strides", "v_strides", "o_strides"), tensors):
        getattr(args, field)[:] = ((0,) if packed else ()) + tuple(t.stride())


class Module:
    """A loaded kernel."""

    def __init__(self, runtime, handle):
        self.rt = runtime
        self.handle = handle
        self.info = runtime.KernelInfo()
        status = runtime.lib.attnrt_module_info(handle, ctypes.byref(self.info))
        if status != ATTNRT_OK:
            raise runtime.error(status)

    def unload(self):
        if self.handle:
            self.rt.lib.attnrt_module_unload(self.handle)
            self.handle = None

    def launcher(self, args):
        """A no-argument function launching `args` on the current stream with as
        little host work as possible (for timing); raises AttnrtError on failure."""
        import torch
        launch, handle, pargs = self.rt.lib.attnrt_forward, self.handle, ctypes.byref(args)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

        def run():
            status = launch(handle, pargs, stream)
            if status != ATTNRT_OK:
                raise self.rt.error(status)
        return run

    def launch(self, args):
        """attnrt_forward on the current stream; raises AttnrtError on failure."""
        self.launcher(args)()

    def forward(self, q, k, v, o, lse):
        """The kernel on [B, N, H, D] tensors."""
        self.launch(self.rt.forward_args(q, k, v, o, lse))


# --------------------------------------------------------------------------------------
# Child processes
# --------------------------------------------------------------------------------------


def run_child_process(cmd, timeout):
    """Runs the child check `cmd` under `timeout` seconds: None when it ran to
    its end (exit 0 or 1: passed or failed, its result file says which), else
    what went wrong (a crash or a hang, e.g. a wrong mbarrier phase)."""
    try:
        proc = subprocess.run(cmd, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout} s (kernel hang?)"
    if proc.returncode not in (0, 1):
        return f"child process exited with status {proc.returncode} (crash?)"
    return None


def run_child_for_json(cmd, timeout, out_option):
    """Runs `cmd` + [out_option, FILE] as a child check (`run_child_process`) and
    reads the JSON it wrote to FILE: (the data or None, what went wrong or None).
    A child that crashed after writing returns both."""
    fd, path = tempfile.mkstemp(prefix="attngen-child-", suffix=".json")
    os.close(fd)
    try:
        error = run_child_process(cmd + [out_option, path], timeout)
        try:
            with open(path) as f:
                return json.load(f), error
        except (OSError, ValueError) as e:
            return None, error or f"child process wrote no result ({type(e).__name__})"
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


def fmt(x, spec=".1f"):
    """A table cell: the number formatted, "nan/inf" for an infinity, "-" for none."""
    if isinstance(x, (int, float)) and math.isinf(x):
        return "nan/inf"
    return format(x, spec) if isinstance(x, (int, float)) and math.isfinite(x) else "-"


def print_table(header, rows):
    """Columns padded to their widest cell, "(none)" for no rows."""
    if not rows:
        print("(none)")
        return
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(str(x).ljust(w) for x, w in zip(row, widths)))


def write_json(path, data):
    """Writes the results file (its folder made first; unknown types as strings)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(data, f, indent=1, default=str)


def environment():
    """Python, host, torch, CUDA, cuDNN and the device: what a result was seen on."""
    env = {"python": platform.python_version(), "host": platform.node()}
    try:
        import torch

        env["torch"] = torch.__version__
        env["cuda"] = torch.version.cuda
        env["cudnn"] = torch.backends.cudnn.version()
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            env["device"] = p.name
            env["capability"] = f"{p.major}.{p.minor}"
            env["sms"] = p.multi_processor_count
    except Exception as e:  # noqa: BLE001
        env["torch_error"] = str(e)
    return env


# --------------------------------------------------------------------------------------
# Self-test (CPU): python3 gpu/harness.py --self-test
# --------------------------------------------------------------------------------------

#: The masks the self-test checks: (causal, bottom_right, (left, right)), every kind
#: the kernels have.
TEST_MASKS = [(False, False, (-1, -1)), (True, False, (-1, -1)), (True, True, (-1, -1)),
              (True, True, (3, -1)), (False, True, (3, 0)), (False, False, (2, 1)),
              (False, True, (0, 0)), (False, True, (-1, 2)), (False, False, (4, -1)),
              (True, False, (0, 0)), (False, True, (7, 7))]
#: (Nq, Nk) with Nq != Nk both ways, so that some rows see no key.
TEST_LENGTHS = [(1, 1), (1, 9), (9, 1), (5, 12), (12, 5), (8, 8)]


class CheckCounter:
    """Counts failed checks and prints each one, so a self-test reports them all."""

    def __init__(self):
        self.failures = 0

    def __call__(self, ok, what):
        if not ok:
            self.failures += 1
            print(f"FAIL {what}", flush=True)


def _brute_visible(i, j, nq, nk, causal, bottom_right, window):
    """The rule of docs/ABI.md for one (row, key) pair, written out independently of
    `visible`."""
    d = i + (nk - nq if bottom_right else 0)
    left, right = window
    return (0 <= j < nk and (not causal or j <= d) and (right < 0 or j <= d + right)
            and (left < 0 or j >= d - left))


def _brute_attention(q, k, v, scale, causal=False, bottom_right=False, softcap=0.0,
                     window=NO_WINDOW):
    """O and LSE in Python floats, one query row at a time, for one head (q [Nq][D],
    k, v [Nk][D]): the naive loop the references are checked against."""
    nq, nk, d = len(q), len(k), len(q[0]) if q else 0
    out, lse = [], []
    for i in range(nq):
        scores = []
        for j in range(nk):
            if _brute_visible(i, j, nq, nk, causal, bottom_right, window):
                s = scale * sum(q[i][t] * k[j][t] for t in range(d))
                if softcap:
                    s = softcap * math.tanh(s / softcap)
                scores.append((j, s))
        if not scores:
            out.append([0.0] * d)
            lse.append(-math.inf)
            continue
        m = max(s for _, s in scores)
        total = sum(math.exp(s - m) for _, s in scores)
        out.append([sum(math.exp(s - m) * v[j][t] for j, s in scores) / total
                    for t in range(d)])
        lse.append(m + math.log(total))
    return out, lse


def _close_rows(got_o, got_lse, want_o, want_lse, tol):
    """Whether rows agree within `tol`; rows that see no key must be exactly O = 0
    and LSE = -inf."""
    for go, gl, wo, wl in zip(got_o, got_lse, want_o, want_lse):
        if math.isinf(wl):
            if not (gl == -math.inf and all(x == 0 for x in go)):
                return False
        elif abs(gl - wl) > tol or any(abs(a - b) > tol for a, b in zip(go, wo)):
            return False
    return True


def _test_masks(check):
    for (nq, nk), (causal, br, window) in ((s, m) for s in TEST_LENGTHS for m in TEST_MASKS):
        label = f"nq={nq} nk={nk} causal={causal} br={br} window={window}"
        want = [[_brute_visible(i, j, nq, nk, causal, br, window) for j in range(nk)]
                for i in range(nq)]
        got = [[bool(visible(i, j, nq, nk, causal, br, window)) for j in range(nk)]
               for i in range(nq)]
        check(got == want, f"visible {label}")
        check(visible_keys(nq, nk, causal, br, window) == sum(map(sum, want)),
              f"visible_keys {label}")
    n = 8192  # the window speed rows' counts
    check(visible_keys(n, n, False, True, (1024, 0)) == sum(min(i, 1024) + 1 for i in range(n)),
          "visible_keys of the (1024, 0) speed row")
    check(visible_keys(n, n, False, True, (1024, 1024))
          == sum(min(n - 1, i + 1024) - max(0, i - 1024) + 1 for i in range(n)),
          "visible_keys of the (1024, 1024) speed row")
    check(visible_keys(n, n, True) == n * (n + 1) // 2, "visible_keys of a causal square")
    info = {"causal": 0, "causal_align": ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT, "window_left": 100,
            "window_right": -1, "softcap": 30}
    check(kernel_mask(info) == {"causal": False, "bottom_right": True, "window": (100, -1),
                                "softcap": 30.0}, "kernel_mask")
    check(has_window((0, -1)) and not has_window(NO_WINDOW), "has_window")


def _test_arithmetic(check):
    dense = 4.0 * 16 * 16 * 1024 * 1024 * 128
    check(attention_flops(16, 16, 1024, 1024, 128) == dense, "FLOPs, 4 B H Nq Nk D")
    check(attention_flops(16, 16, 1024, 1024, 128, causal=True) == dense / 2,
          "FLOPs halved when causal")
    check(attention_flops(2, 3, 9, 9, 8, visible_per_head=40) == 4.0 * 2 * 3 * 8 * 40,
          "visible FLOPs of a window")
    check(varlen_attention_flops([1024] * 16, [1024] * 16, 16, 128) == dense,
          "16 x 1024 packed counts what dense B=16 N=1024 counts")
    check(varlen_attention_flops([3, 0], [5, 7], 2, 8, True) == 4 * 2 * 3 * 5 * 8 / 2,
          "packed FLOPs per sequence")
    check(abs(tflops(dense, 1.0) - dense / 1e9) < 1e-6, "TFLOPS of a 1 ms call")
    check(kv_bytes(64, 8192, 8, 128) == 2 * 64 * 8192 * 8 * 128 * 2, "decode K/V bytes")
    check(abs(gbps(4.8e9, 1.0) - 4800.0) < 1e-9, "GB/s")
    check(median([3, 1, 2]) == 2 and median([4, 1, 3, 2]) == 3, "median")
    check(bench_shapes(128) == [(16, 16, 16, 1024), (4, 16, 16, 4096), (2, 16, 16, 8192)],
          "PEERS shapes at d128")
    check(bench_shapes(128, gqa=True)[-1] == (2, 64, 8, 8192), "PEERS' GQA row")
    check(bench_shapes(64, gqa=True) == [(16, 32, 32, 1024), (2, 32, 32, 8192)],
          "PEERS shapes at d64, no GQA row")
    check((bench_heads(96), bench_heads(192), bench_heads(256)) == (21, 11, 8),
          "heads of the PEERS shapes at d96, d192, d256")
    check(cu_seqlens([3, 0, 5]) == [0, 3, 3, 8] and cu_seqlens([]) == [0], "cu_seqlens")
    check(worst_rel([1e-3, float("nan"), 2e-3]) == math.inf and worst_rel([1e-3, 2e-3]) == 2e-3
          and worst_rel([]) is None, "worst_rel ranks NaN first")
    check(fmt(1.25) == "1.2" and fmt(None) == "-" and fmt(float("inf")) == "nan/inf"
          and fmt(float("nan")) == "-" and fmt(0.5, ".2f") == "0.50", "fmt")


def _test_child_processes(check):
    python = [sys.executable, "-c"]
    check(run_child_process(python + ["raise SystemExit(1)"], 300) is None,
          "a child that failed ran to its end")
    check("status 3" in run_child_process(python + ["raise SystemExit(3)"], 300),
          "a crashed child")
    check("timed out after 1 s" in run_child_process(python + ["import time; time.sleep(60)"], 1),
          "a hung child")
    writer = ("import json, sys; json.dump({'passed': True}, open(sys.argv[-1], 'w')); "
              "raise SystemExit(int(sys.argv[1]))")
    check(run_child_for_json(python + [writer, "0"], 300, "--out") == ({"passed": True}, None),
          "a child's JSON result")
    data, error = run_child_for_json(python + [writer, "5"], 300, "--out")
    check(data == {"passed": True} and "status 5" in error, "a child that crashed after writing")
    data, error = run_child_for_json(python + ["pass", "x"], 300, "--out")
    check(data is None and "wrote no result" in error, "a child that wrote nothing")
    check(is_fatal(RuntimeError("CUDA error: an illegal memory access was encountered"))
          and is_fatal(FatalCudaError("stopped")) and not is_fatal(ValueError("shape")),
          "is_fatal")
    check(short_error(RuntimeError("first\nsecond")) == "RuntimeError: first", "short_error")


def _test_tables(check):
    import contextlib
    import io
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        print_table(["a", "bb"], [["xyz", 1]])
        print_table(["a"], [])
    check(text.getvalue() == "a   | bb\n----+---\nxyz | 1 \n(none)\n", "print_table")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "sub", "r.json")
        write_json(path, {"x": 1, "y": math})
        with open(path) as f:
            check(json.load(f)["x"] == 1, "write_json makes the folder, writes odd types")


def _test_reference(check, torch):
    torch.manual_seed(0)
    for (nq, nk), (causal, br, window), softcap in (
            (s, m, c) for s in TEST_LENGTHS for m in TEST_MASKS for c in (0.0, 2.0)):
        label = f"nq={nq} nk={nk} causal={causal} br={br} window={window} cap={softcap}"
        b, h, hkv, d, scale = 2, 4, 2, 4, 0.7
        q = torch.randn(b, nq, h, d, dtype=torch.float64)
        k = torch.randn(b, nk, hkv, d, dtype=torch.float64)
        v = torch.randn(b, nk, hkv, d, dtype=torch.float64)
        out32, lse32 = reference(q, k, v, scale, causal, br, softcap, window)
        out64, lse64 = reference(q, k, v, scale, causal, br, softcap, window,
                                 compute_dtype=torch.float64)
        check(out32.dtype == torch.float32 and out64.dtype == torch.float64,
              f"reference dtypes {label}")
        for bi in range(b):
            for head in range(h):
                kv = head // (h // hkv)  # GQA: query head -> its K/V head
                want_o, want_lse = _brute_attention(
                    q[bi, :, head].tolist(), k[bi, :, kv].tolist(), v[bi, :, kv].tolist(),
                    scale, causal, br, softcap, window)
                for got_o, got_lse, tol in ((out32, lse32, 1e-4), (out64, lse64, 1e-10)):
                    check(_close_rows(got_o[bi, :, head].tolist(), got_lse[bi, head].tolist(),
                                      want_o, want_lse, tol),
                          f"reference {got_o.dtype} {label} b={bi} head={head}")
        err, bound = lse_error(lse32, lse32)
        check(bool((err <= bound).all()), f"lse_error accepts the reference itself: {label}")
    q = torch.randn(1, 3, 2, 8)
    out, lse = reference(q, torch.zeros(1, 0, 1, 8), torch.zeros(1, 0, 1, 8), 1.0)
    check(bool((out == 0).all()) and bool(torch.isinf(lse).all()), "no keys: O = 0, LSE = -inf")


def _test_packed_references(check, torch):
    torch.manual_seed(1)
    lq, lk, h, hkv, d = [3, 0, 5, 2], [4, 6, 0, 7], 4, 2, 8
    q = torch.randn(sum(lq), h, d)
    k, v = torch.randn(sum(lk), hkv, d), torch.randn(sum(lk), hkv, d)
    out, lse = varlen_reference(q, k, v, lq, lk, 0.5, True, True, window=(2, -1))
    cq, ck = cu_seqlens(lq), cu_seqlens(lk)
    for i in range(len(lq)):
        o, l = reference(q[None, cq[i]:cq[i + 1]], k[None, ck[i]:ck[i + 1]],
                         v[None, ck[i]:ck[i + 1]], 0.5, True, True, window=(2, -1))
        check(torch.equal(out[cq[i]:cq[i + 1]], o[0])
              and torch.equal(lse[:, cq[i]:cq[i + 1]], l[0]),
              f"varlen reference, sequence {i} (lengths {lq[i]}, {lk[i]})")
    # Decoding: Nq = 3 per sequence, bottom-right causal to each length (0 included).
    lengths, nq = [5, 0, 9], 3
    qd = torch.randn(len(lengths), nq, h, d, dtype=torch.float64)
    keys = [torch.randn(n, hkv, d, dtype=torch.float64) for n in lengths]
    values = [torch.randn(n, hkv, d, dtype=torch.float64) for n in lengths]
    out, lse = kvcache_reference(qd, keys, values, 0.3, causal=True, softcap=5.0,
                                 compute_dtype=torch.float64)
    check(out.shape == qd.shape and lse.shape == (len(lengths), h, nq), "kvcache shapes")
    for b, n in enumerate(lengths):
        for head in range(h):
            kv = head // (h // hkv)
            want_o, want_lse = _brute_attention(
                qd[b, :, head].tolist(), keys[b][:, kv].tolist(), values[b][:, kv].tolist(),
                0.3, True, True, 5.0)
            check(_close_rows(out[b, :, head].tolist(), lse[b, head].tolist(), want_o,
                              want_lse, 1e-10), f"kvcache reference length={n} head={head}")
    # The paged gather finds each sequence through its block table.
    cache = torch.randn(7, 4, hkv, d)  # pages of 4 rows
    table = torch.tensor([[5, 2, 0], [3, -1, -1]], dtype=torch.int32)
    got = gather_kv_cache(cache, [10, 0], table)
    check(torch.equal(got[0], torch.cat([cache[5], cache[2], cache[0]])[:10])
          and got[1].shape == (0, hkv, d), "paged gather")
    dense_cache = torch.randn(2, 6, hkv, d)
    check(torch.equal(gather_kv_cache(dense_cache, [4, 6])[0], dense_cache[0, :4]),
          "contiguous gather")


def _test_poisoning(check, torch):
    for layout, shape in (("contiguous", (2, 5, 3, 8)), ("bhnd", (2, 5, 3, 8)),
                          ("padded", (2, 5, 3, 8)), ("padded", (7, 3, 8)), ("bnhd", (4, 6))):
        out, guards = poisoned_output(shape, torch.bfloat16, layout, device="cpu")
        check(tuple(out.shape) == shape and bool(torch.isnan(out).all()),
              f"{layout} output: shape, NaN-filled")
        check(guards_intact(guards), f"{layout} output: guards start intact")
        out.copy_(torch.ones(shape))
        check(guards_intact(guards) and not bool(torch.isnan(out).any()),
              f"{layout} output: writing every element leaves the guards")
        for g, guard in enumerate(guards):  # a stray write into each guard in turn
            last = tuple(n - 1 for n in guard.shape)
            guard[last] = 0.0
            check(not guards_intact(guards), f"{layout} output: guard {g} sees a stray write")
            guard[last] = SENTINEL
        inp = make_input(shape, torch.float16, layout, device="cpu")
        check(tuple(inp.shape) == shape and inp.stride() == out.stride(),
              f"{layout} input: shape, and the strides of its output")
    bhnd, _ = poisoned_output((2, 5, 3, 8), torch.float16, "bhnd", device="cpu")
    check(bhnd.stride() == (120, 8, 40, 1), "bhnd: [B, H, N, D] memory")
    padded = make_input((2, 5, 3, 8), torch.float16, "padded", device="cpu")
    check(padded.stride(-2) == 8 + ROW_PAD, "padded rows")
    try:
        make_input((1, 2), torch.float16, "bogus", device="cpu")
        check(False, "an unknown layout is refused")
    except ValueError:
        pass
    # The verdict: the reference itself passes; NaN, nonzero rows without keys, an LSE
    # off by more than its bound and a stray write each fail.
    torch.manual_seed(2)
    q, k, v = (torch.randn(1, n, 2, 8) for n in (6, 3, 3))
    ref, ref_lse = reference(q, k, v, 0.3, True, True)      # rows 0-2 see no key
    out, guards = poisoned_output(ref.shape, torch.bfloat16, device="cpu")
    out.copy_(ref)
    good = judge(out, ref_lse.clone(), ref, ref_lse, "bf16", {"guards_ok": guards})
    check(good["passed"] and good["empty_rows"] == 6 and good["guards_ok"]
          and good["lse_err"] == 0.0, f"judge passes the reference: {good}")
    check(set(judge(out, None, ref, ref_lse, "bf16")) == {
        "rel", "nan", "lse_err", "empty_rows", "empty_rows_zero", "passed"},
        "judge without an LSE or guards")
    bad = out.clone()
    bad[0, 5, 1, 2] = float("nan")
    check(not judge(bad, None, ref, ref_lse, "bf16")["passed"], "judge: a NaN fails")
    bad = out.clone()
    bad[0, 0, 0, 0] = 1e-3
    verdict = judge(bad, None, ref, ref_lse, "bf16")
    check(not verdict["passed"] and not verdict["empty_rows_zero"],
          "judge: a nonzero row without keys fails")
    lse = ref_lse.clone()
    lse[0, 0, 5] += 0.1 * max(1.0, abs(float(lse[0, 0, 5])))
    check(not judge(out, lse, ref, ref_lse, "bf16")["lse_ok"], "judge: an LSE off fails")
    lse = ref_lse.clone()
    lse[0, 1, 0] = 0.0
    check(not judge(out, lse, ref, ref_lse, "bf16")["passed"],
          "judge: a finite LSE where the reference has -inf fails")
    guards[1][0] = 0.0
    verdict = judge(out, None, ref, ref_lse, "bf16", {"o_guard_intact": guards})
    check(not verdict["passed"] and verdict["o_guard_intact"] is False,
          "judge: a stray write fails")
    # An API's outputs: returned as they come, and whether they took the poisoned
    # blocks (which the CPU's allocator need not hand back: only the type is checked).
    pair = (torch.zeros(2, 3), torch.zeros(4))
    got = call_into_poisoned_blocks(lambda: pair, ((2, 3), torch.float32), ((4,), torch.float32),
                                    device="cpu")
    check(got[0] is pair[0] and got[1] is pair[1] and isinstance(got[2], bool),
          "call_into_poisoned_blocks with an LSE")
    got = call_into_poisoned_blocks(lambda: pair[0], ((2, 3), torch.float32), device="cpu")
    check(got[0] is pair[0] and got[1] is None, "call_into_poisoned_blocks without one")
    packed_ref, packed_lse = varlen_reference(q[0], k[0], v[0], [4, 2], [1, 2], 0.3, True, True)
    check(judge(packed_ref.to(torch.bfloat16), packed_lse, packed_ref, packed_lse, "bf16")[
        "empty_rows"] == 2 * 3, "judge on packed results: rows without keys per head")


def self_test():
    """Checks the harness's pure parts on the CPU: masks, FLOP and bandwidth
    arithmetic, PEERS shapes, tables, child processes; with torch also the
    references against a naive loop, the poisoned outputs and the verdicts. A test
    that raises counts as failed, and the others still run."""
    import traceback
    check = CheckCounter()
    try:
        import torch
    except ImportError:
        torch = None
    tests = [_test_masks, _test_arithmetic, _test_child_processes, _test_tables]
    if torch is not None:
        tests += [functools.partial(t, torch=torch)
                  for t in (_test_reference, _test_packed_references, _test_poisoning)]
    for test in tests:
        try:
            test(check)
        except Exception:  # noqa: BLE001 -- reported, the other tests run
            traceback.print_exc()
            check(False, f"{getattr(test, 'func', test).__name__} raised")
    if check.failures:
        print(f"harness self-test: {check.failures} FAILED")
        return 1
    print("harness self-test passed" + ("" if torch else " (torch parts skipped: no torch)"))
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["--self-test"]:
        print(__doc__.strip().splitlines()[0])
        print("usage: python3 gpu/harness.py --self-test")
        sys.exit(2)
    sys.exit(self_test())
