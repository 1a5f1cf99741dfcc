"""The fused backward kernel at d64 with a 128-query step (spills 116 bytes)
against its default 64, same tensors (run with ATTNGEN_FUSED_BACKWARD=1;
gpu/backward_fused.sh does)."""
import torch, attngen, harness
from attngen import _torch_backward as tb
orig = tb.kernel_for
def patched(q, scale, backward, **f):
    extra = dict(block_n=128) if backward == "fused" else {}
    return orig(q, scale, backward=backward, **f, **extra)
harness.warm_up_gpu()
for n in (1024, 4096):
    d = 64; b, h = 16384 // n, 2048 // d
    q = torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16)
    k, v, do = torch.randn_like(q), torch.randn_like(q), torch.randn_like(q)
    out, lse = attngen.attention(q, k, v, return_lse=True)
    fl = 2.5 * harness.attention_flops(b, h, n, n, d, False)
    f = lambda: attngen.attention_backward(do, q, k, v, out, lse)
    ms, _ = harness.try_time(f, 3, 10)
    ref = f()
    tb.kernel_for = patched
    ms64, why = harness.try_time(f, 3, 10)
    alt = f()
    tb.kernel_for = orig
    gap = (alt[0].float() - ref[0].float()).abs().max().item()
    print(f"d64 N{n}: step64 {harness.tflops(fl, ms):.1f} step128 "
          f"{harness.tflops(fl, ms64) if ms64 else why} TFLOPS; dq gap {gap:.2e}, dk equal "
          f"{torch.equal(alt[1], ref[1])}")
