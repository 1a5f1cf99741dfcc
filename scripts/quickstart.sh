#!/usr/bin/env bash
# The main job: install, build, compile the default kernel (sm_90a, bf16, head
# dim 128) to PTX + launch metadata, assemble it with ptxas when the CUDA
# toolkit is present, and, when a GPU and PyTorch are present, run it and
# check it against a float32 reference.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
mkdir -p out
./build/bin/attngen --arch=sm_90a --head-dim=128 --dtype=bf16 -o out/attn_fwd.ptx
echo "== wrote out/attn_fwd.ptx and out/attn_fwd.json"
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$PTXAS" ]; then
  "$PTXAS" -arch=sm_90a -v out/attn_fwd.ptx -o out/attn_fwd.cubin
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1 \
   && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "== GPU found: checking the kernel"
  python3 gpu/check_and_bench.py --lib build/lib/libattnrt.so --kernels out --quick --no-bench
  echo "== the JIT from Python: attngen.attention against SDPA"
  PYTHONPATH=python python3 examples/python/attention_example.py
else
  echo "== no GPU here: the kernel was compiled and assembled, not run"
  echo "== the JIT from Python (PTX only)"
  PYTHONPATH=python python3 examples/python/attention_example.py --ptx-only
fi
