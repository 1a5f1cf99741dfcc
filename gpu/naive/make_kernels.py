#!/usr/bin/env python3
"""Builds the naive ABI-conformant kernels of naive_attention.cu into OUTDIR as
NAME.ptx + NAME.json pairs (docs/ABI.md), for validating libattnrt and
gpu/check_and_bench.py on a GPU before (or beside) attngen's own kernels.

Usage: python3 gpu/naive/make_kernels.py OUTDIR [--nvcc PATH] [--faulty]

--faulty builds only deliberately broken kernels (faulty_*), each of which the
harness must report as failed while still running the others.
"""

import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCK_M = 64  # query rows = threads per CTA

# (name, arch, dtype, head_dim, causal, uses_tma, fault, box columns, box's
# first column): the TMA kernels check one box of each tensor against global
# memory, with 128-byte swizzle (64 columns), 64-byte (32: d96's panels) and
# 32-byte (16: d40's, whose last box, columns 32..47, is partly past D and
# must read 0 there).
VARIANTS = [
    ("naive_sm80_bf16_d128_causal", "sm_80", "bf16", 128, True, False, 0, 64, 0),
    ("naive_sm80_f16_d64", "sm_80", "f16", 64, False, False, 0, 64, 0),
    ("naive_sm90a_bf16_d128_causal_tma", "sm_90a", "bf16", 128, True, True, 0, 64, 0),
    ("naive_sm90a_f16_d64_tma", "sm_90a", "f16", 64, False, True, 0, 64, 0),
    ("naive_sm90a_bf16_d96_tma64b", "sm_90a", "bf16", 96, False, True, 0, 32, 64),
    ("naive_sm90a_f16_d40_causal_tma32b", "sm_90a", "f16", 40, True, True, 0, 16, 32),
]
#: Deliberately broken kernels (see NAIVE_FAULT in naive_attention.cu).
FAULTY = [
    ("faulty_sm90a_bf16_d128_swizzle", "sm_90a", "bf16", 128, False, True, 1, 64, 0),
    ("faulty_sm90a_bf16_d96_swizzle64b", "sm_90a", "bf16", 96, False, True, 1, 32, 64),
    ("faulty_sm80_bf16_d128_unwritten_row", "sm_80", "bf16", 128, False, False, 2, 64, 0),
    ("faulty_sm80_f16_d64_oob_store", "sm_80", "f16", 64, True, False, 3, 64, 0),
]

def abi_params(tma, box_cols):
    """The ABI v2 parameter objects the naive kernels take (docs/ABI.md)."""
    params = []
    if tma:
        params += [{"name": f"tma_{t}", "kind": "tensor_map", "tensor": t, "box": [box_cols, BLOCK_M]}
                   for t in "qkv"]
    params += [{"name": t, "kind": "pointer", "tensor": t} for t in ["q", "k", "v", "o", "lse"]]
    params += [{"name": f"{t}_stride_{d}", "kind": "stride", "tensor": t, "dim": d}
               for t in "qkvo" for d in "bnh"]
    params += [{"name": s, "kind": "size", "size": s}
               for s in ["batch", "nq", "nk", "num_heads", "num_kv_heads"]]
    return params


#: The forward grid rule: (ceil(nq / BLOCK_M), num_heads, batch).
GRID = {"tiles": [{"size": "nq", "tile": BLOCK_M}, {"size": "num_heads", "tile": 1},
                  {"size": "batch", "tile": 1}], "ctas_per_sm": 0}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    parser.add_argument("--faulty", action="store_true", help="build the broken kernels instead")
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    for name, arch, dtype, d, causal, tma, fault, box_cols, box_col0 in (
            FAULTY if args.faulty else VARIANTS):
        ptx = os.path.join(args.outdir, name + ".ptx")
        ctype = "__nv_bfloat16" if dtype == "bf16" else "__half"
        scale = 1.0 / math.sqrt(d)
        cmd = [args.nvcc, "-ptx", f"-arch={arch}", "-std=c++17", "-O3", "-diag-suppress", "177",
               "-o", ptx, f"-DNAIVE_SCALE={scale!r}f",
               f"-DNAIVE_NAME={name}", f"-DNAIVE_T={ctype}", f"-DNAIVE_D={d}",
               f"-DNAIVE_CAUSAL={int(causal)}", f"-DNAIVE_TMA={int(tma)}",
               f"-DNAIVE_BLOCK_M={BLOCK_M}", f"-DNAIVE_FAULT={fault}",
               f"-DNAIVE_BOX_COLS={box_cols}", f"-DNAIVE_BOX_COL0={box_col0}",
               os.path.join(HERE, "naive_attention.cu")]
        subprocess.run(cmd, check=True)
        smem = d * BLOCK_M * 4  # float Q staging
        if tma:
            smem += 1024 + 3 * box_cols * BLOCK_M * 2  # alignment slack + Q, K, V boxes
        meta = {
            "format": "attngen-kernel-v2",
            "kernel": name,
            "arch": arch,
            "dtype": dtype,
            "head_dim": d,
            "causal": causal,
            "causal_align": "top_left" if causal else "none",
            "lse": True,
            "scale": scale,
            "softcap": 0,
            "window_left": -1,
            "window_right": -1,
            "block_m": BLOCK_M,
            "block_n": 1,
            "num_threads": BLOCK_M,
            "smem_bytes": smem,
            "uses_tma": tma,
            "grid": GRID,
            "params": abi_params(tma, box_cols),
            "generator": "gpu/naive/make_kernels.py",
        }
        with open(os.path.join(args.outdir, name + ".json"), "w") as f:
            json.dump(meta, f, indent=2)
        print(f"built {name} ({arch}, {dtype}, d={d}, causal={causal}, tma={tma})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
