"""One small ragged launch of one kernel, checked against the float32
reference: the program compute-sanitizer runs (memcheck, racecheck,
synccheck) for every new schedule.

    compute-sanitizer --tool racecheck python3 gpu/sanitize_case.py \
        --lib libattnrt.so --ptx K.ptx --json K.json

Each shape prints "NAME nq=.. nk=.. h=..: rel err E ok" (or FAILED, with what
went wrong): gpu/harness.py's verdict (O and LSE poisoned with NaN inside
SENTINEL guards, rel error within the dtype's tolerance, rows without keys 0).
"""
import argparse
import os
import sys

import harness


def check_shape(module, info, mask, nq, nk, h, label):
    """One launch on B = 1, H = h, Hkv = 1 into poisoned, guarded outputs; prints
    the verdict and returns whether it passed."""
    import torch
    dtype = harness.torch_dtype(info["dtype"])
    d = info["head_dim"]
    q = torch.randn(1, nq, h, d, dtype=dtype, device="cuda")
    k = torch.randn(1, nk, 1, d, dtype=dtype, device="cuda")
    v = torch.randn(1, nk, 1, d, dtype=dtype, device="cuda")
    o, o_guards = harness.poisoned_output((1, nq, h, d), dtype)
    lse, lse_guards = harness.poisoned_output((1, h, nq), torch.float32)
    module.forward(q, k, v, o, lse)
    torch.cuda.synchronize()
    ref, ref_lse = harness.reference(q, k, v, info["scale"], mask["causal"],
                                     mask["bottom_right"], mask["softcap"], mask["window"])
    verdict = harness.judge(o, lse, ref, ref_lse, harness.dtype_name(info["dtype"]),
                            {"guards_ok": o_guards + lse_guards})
    problems = [what for what, bad in (
        (f"{verdict['nan']} NaN in O", verdict["nan"]),
        ("O not 0 on rows without keys", not verdict["empty_rows_zero"]),
        ("LSE out of tolerance", not verdict["lse_ok"]),
        ("a guard overwritten", not verdict["guards_ok"])) if bad]
    print(f"{label} nq={nq} nk={nk} h={h}: rel err {verdict['rel']:.2e} "
          f"{'ok' if verdict['passed'] else 'FAILED'}"
          + (" (" + "; ".join(problems) + ")" if problems else ""), flush=True)
    return verdict["passed"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lib", required=True)
    p.add_argument("--ptx", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--shapes", default="77x333,333x77,1x1,333x333x64",
                   help="comma-separated NQxNK[xH] (B=1, H=2 unless given, Hkv=1); "
                        "333x333x64 has 192 tiles, more than the H200's 132 SMs, so a "
                        "persistent kernel's CTAs run several tiles")
    args = p.parse_args()
    import torch

    harness.precise_float32()
    torch.manual_seed(0)
    torch.zeros(1, device="cuda")
    module = harness.Runtime(args.lib).load(args.ptx, args.json)
    info = harness.struct_dict(module.info)
    mask = harness.kernel_mask(info)
    ok = True
    for shape in args.shapes.split(","):
        dims = [int(x) for x in shape.split("x")]
        h = dims[2] if len(dims) > 2 else 2
        ok &= check_shape(module, info, mask, dims[0], dims[1], h, os.path.basename(args.ptx))
    module.unload()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
