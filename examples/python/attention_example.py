"""attngen from Python.

    python3 examples/python/attention_example.py            # run + check on the GPU
    python3 examples/python/attention_example.py --ptx-only # no GPU, no torch needed
"""

import sys

import attngen

# PTX and launch metadata, no GPU needed.
kernel = attngen.compile(arch="sm_90a", head_dim=128, dtype="bf16", causal=True)
print(f"{kernel.kernel_name}: {len(kernel.ptx)} bytes of PTX, "
      f"{kernel.metadata['num_threads']} threads, {kernel.metadata['smem_bytes']} B shared memory")
if "--ptx-only" in sys.argv:
    sys.exit(0)

try:
    import torch
except ImportError:
    print("PyTorch is not installed: stopped after the PTX (pip install torch to run "
          "attngen.attention; --ptx-only skips this step)")
    sys.exit(0)

if not torch.cuda.is_available():
    print("no GPU: stopped after the PTX")
    sys.exit(0)

# (batch, seqlen, heads, head_dim); K/V with fewer heads (GQA), Nq != Nk.
q = torch.randn(2, 1000, 8, 128, device="cuda", dtype=torch.bfloat16)
k = torch.randn(2, 1500, 2, 128, device="cuda", dtype=torch.bfloat16)
v = torch.randn(2, 1500, 2, 128, device="cuda", dtype=torch.bfloat16)
# causal=True aligns the diagonal bottom-right, as flash_attn_func: query i sees
# keys j <= i + 500 here (causal_align="top-left" would give torch's is_causal).
out, lse = attngen.attention(q, k, v, causal=True, return_lse=True)

bottom_right = torch.ones(1000, 1500, dtype=torch.bool, device="cuda").tril(diagonal=1500 - 1000)
ref = torch.nn.functional.scaled_dot_product_attention(
    q.transpose(1, 2).float(), k.transpose(1, 2).float(), v.transpose(1, 2).float(),
    attn_mask=bottom_right, enable_gqa=True).transpose(1, 2)
error = ((out.float() - ref).norm() / ref.norm()).item()
print(f"attngen.attention vs float32 SDPA: relative error {error:.2e}; cache {attngen.stats()}")
sys.exit(0 if error < 1e-2 else 1)
