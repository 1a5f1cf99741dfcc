"""One backward call at a benchmark shape, for ncu: bf16, B*N = 16k,
H*D = 2048. Usage: profile_backward.py D N [causal]. The first call compiles;
profile the second (ncu --launch-skip)."""
import sys

import torch

import attngen

d, n = int(sys.argv[1]), int(sys.argv[2])
causal = len(sys.argv) > 3 and sys.argv[3] == "causal"
b, h = 16384 // n, 2048 // d
q = torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16)
k, v, dout = torch.randn_like(q), torch.randn_like(q), torch.randn_like(q)
out, lse = attngen.attention(q, k, v, causal=causal, return_lse=True)
for _ in range(2):
    attngen.attention_backward(dout, q, k, v, out, lse, causal=causal)
torch.cuda.synchronize()
