"""One attention call at a speed-table shape, attngen or SDPA's cuDNN backend,
between cudaProfilerStart/Stop (after a warm-up call): what
gpu/profile_short.sh runs under ncu --profile-from-start off.

    python3 gpu/profile_short.py attngen|cudnn HEAD_DIM N [causal]
"""
import sys

import torch

import attngen
import harness

which, d, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
causal = len(sys.argv) > 4 and sys.argv[4] == "causal"
b, h = harness.bench_batch(n), harness.bench_heads(d)
q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
call = (harness.sdpa_call("cudnn", q, k, v, causal) if which == "cudnn"
        else lambda: attngen.attention(q, k, v, causal=causal))
call()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
call()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
