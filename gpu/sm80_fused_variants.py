"""sm_80's backward on this GPU, tile variants beside the defaults, same
tensors: the one-kernel backward with 4 warps on 64 keys (the default) and
with 8 warps on 128 keys (FlashAttention-2's d128 tile), the deterministic
pair with 4 warps and with 8, and SDPA's flash backward (FA2). Run with
ATTNGEN_ARCH=sm_80 (gpu/backward_fused_sm80.sh does); each variant's
gradients are compared with the default one-kernel backward's."""
import os

import torch
import torch.nn.functional as F

import attngen
import harness
from attngen import _torch_backward as tb

assert os.environ.get("ATTNGEN_ARCH") == "sm_80", "run with ATTNGEN_ARCH=sm_80"
orig = tb.kernel_for
WIDE = dict(block_m=128, num_warps=8)
#: name -> (ATTNGEN_FUSED_BACKWARD, extra tile fields per backward part)
VARIANTS = {
    "fused4": ("1", {}),
    "fused8": ("1", {"fused": WIDE}),
    "pair4": ("0", {}),
    "pair8": ("0", {"dkdv": WIDE}),
}


def use(variant):
    env, parts = VARIANTS[variant]
    os.environ["ATTNGEN_FUSED_BACKWARD"] = env

    def patched(q, scale, backward, **fields):
        return orig(q, scale, backward=backward, **fields, **parts.get(backward, {}))
    tb.kernel_for = patched


harness.warm_up_gpu()
print(f"{'shape':<16}" + "".join(f"{v:>9}" for v in VARIANTS) + f"{'FA2':>9}  worst gap")
for d, n, causal in ((128, 1024, False), (128, 4096, False), (128, 4096, True),
                     (64, 1024, False), (64, 4096, True)):
    b, h = 16384 // n, 2048 // d
    torch.manual_seed(n + d)
    q = torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16)
    k, v, do = torch.randn_like(q), torch.randn_like(q), torch.randn_like(q)
    out, lse = attngen.attention(q, k, v, causal=causal, return_lse=True)
    flops = 2.5 * harness.attention_flops(b, h, n, n, d, causal)
    row, ref, gap = [], None, 0.0
    for variant in VARIANTS:
        if d == 64 and variant.endswith("8"):
            row.append(None)  # 8 warps' slices do not tile d64
            continue
        use(variant)
        call = lambda: attngen.attention_backward(do, q, k, v, out, lse, causal=causal)
        ms, _ = harness.try_time(call, 3, 10)
        grads = call()
        if ref is None:
            ref = grads
        else:
            gap = max(gap, max((a.float() - r.float()).abs().max().item()
                               for a, r in zip(grads, ref)))
        row.append(harness.tflops(flops, ms) if ms else None)
    tb.kernel_for = orig
    qt, kt, vt = (x.transpose(1, 2).requires_grad_() for x in (q, k, v))
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
        o = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
        fa2, _ = harness.try_time(
            lambda: torch.autograd.grad(o, (qt, kt, vt), do.transpose(1, 2), retain_graph=True),
            3, 10)
    row.append(harness.tflops(flops, fa2) if fa2 else None)
    shape = f"d{d} {n // 1024}k{' causal' if causal else ''}"
    print(f"{shape:<16}" + "".join(f"{harness.fmt(x):>9}" for x in row) + f"  {gap:.2e}",
          flush=True)
