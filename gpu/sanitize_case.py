"""One small ragged launch of one kernel, checked against the float32
reference: the program compute-sanitizer runs (memcheck, racecheck,
synccheck) for every new schedule.

    compute-sanitizer --tool racecheck python3 gpu/sanitize_case.py \
        --lib libattnrt.so --ptx K.ptx --json K.json
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_and_bench as cb  # noqa: E402


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

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    torch.zeros(1, device="cuda")
    rt = cb.Runtime(args.lib)
    module = rt.load(args.ptx, args.json)
    info = cb.struct_dict(module.info)
    dtype = torch.bfloat16 if info["dtype"] == cb.ATTNRT_DTYPE_BF16 else torch.float16
    d = info["head_dim"]
    ok = True
    for shape in args.shapes.split(","):
        dims = [int(x) for x in shape.split("x")]
        nq, nk = dims[0], dims[1]
        h = dims[2] if len(dims) > 2 else 2
        q = torch.randn(1, nq, h, d, dtype=dtype, device="cuda")
        k = torch.randn(1, nk, 1, d, dtype=dtype, device="cuda")
        v = torch.randn(1, nk, 1, d, dtype=dtype, device="cuda")
        o = torch.full((1, nq, h, d), float("nan"), dtype=dtype, device="cuda")
        lse = torch.full((1, h, nq), float("nan"), dtype=torch.float32, device="cuda")
        fargs = module.make_args(q, k, v, o, lse)
        import ctypes
        status = rt.lib.attnrt_forward(module.handle, ctypes.byref(fargs),
                                       ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if status != cb.ATTNRT_OK:
            raise rt.error(status)
        torch.cuda.synchronize()
        mask = cb.read_mask(args.json)
        ref, ref_lse = cb.reference(torch, q, k, v, info["scale"], mask["causal"],
                                    mask["bottom_right"], mask["softcap"], mask["window"])
        err = ((o.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-6)).item()
        good = math.isfinite(err) and err < 2e-2
        ok &= good
        print(f"{os.path.basename(args.ptx)} nq={nq} nk={nk} h={h}: rel err {err:.2e} "
              f"{'ok' if good else 'FAILED'}", flush=True)
    module.unload()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
