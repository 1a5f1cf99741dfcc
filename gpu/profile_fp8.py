"""Calls attngen.attention at one speed-table shape, FP8 or bf16, three times
(the first compiles): what gpu/profile_fp8.sh runs under ncu.

    python3 gpu/profile_fp8.py e4m3|bf16 HEAD_DIM N [causal]
"""
import sys

import torch

import attngen

dtype, d, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
causal = len(sys.argv) > 4 and sys.argv[4] == "causal"
b, h = 16384 // n, 2048 // d
q, k = (torch.randn(b, n, h, d, device="cuda") for _ in range(2))
if dtype == "e4m3":
    q, k = q.to(torch.float8_e4m3fn), k.to(torch.float8_e4m3fn)
    v = torch.randn(b, h, d, n, device="cuda").to(torch.float8_e4m3fn).permute(0, 3, 1, 2)
else:
    q, k = q.bfloat16(), k.bfloat16()
    v = torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    attngen.attention(q, k, v, causal=causal)
torch.cuda.synchronize()
