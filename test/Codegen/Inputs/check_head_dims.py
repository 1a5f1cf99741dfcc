#!/usr/bin/env python3
"""Compiles the default kernel of every head dim in a range with attngen and
assembles each with ptxas; fails on any ptxas warning and on spills above
the bound of that head dim.

    check_head_dims.py ATTNGEN PTXAS ARCH OUTDIR [--dims 8:256:8]
        [--allow LO-HI:BYTES ...] [attngen flags, e.g. --causal]

Spills are allowed only where --allow says so (head dims LO..HI, at most
BYTES of spill stores): the measured exceptions of docs/PERF.md. Prints one
line per kernel and "all N kernels ok" when every one passed.
"""

import argparse
import re
import subprocess
import sys


def parse_allow(text):
    """'LO-HI:BYTES' -> (lo, hi, bytes)."""
    match = re.fullmatch(r"(\d+)-(\d+):(\d+)", text)
    if not match:
        raise argparse.ArgumentTypeError(f"--allow {text!r}: use LO-HI:BYTES, e.g. 8-64:256")
    lo, hi, limit = (int(g) for g in match.groups())
    return lo, hi, limit


def spill_bound(head_dim, allowances):
    """The most spill-store bytes a kernel of `head_dim` may have."""
    return max([limit for lo, hi, limit in allowances if lo <= head_dim <= hi], default=0)


def check(args, flags, head_dim):
    """Compiles and assembles one kernel; returns an error string or None."""
    ptx = f"{args.outdir}/{args.arch}_d{head_dim}.ptx"
    compile_cmd = [args.attngen, f"--arch={args.arch}", f"--head-dim={head_dim}", *flags, "-o", ptx]
    result = subprocess.run(compile_cmd, capture_output=True, text=True)
    if result.returncode != 0:
        return f"attngen failed: {result.stderr.strip()}"
    result = subprocess.run([args.ptxas, f"-arch={args.arch}", "-v", ptx, "-o", ptx + ".cubin"],
                            capture_output=True, text=True)
    report = result.stdout + result.stderr
    if result.returncode != 0:
        return f"ptxas failed: {report.strip()}"
    warnings = [line for line in report.splitlines() if "warning" in line.lower()]
    if warnings:
        return "ptxas warned: " + "; ".join(warnings)
    spills = [int(n) for n in re.findall(r"(\d+) bytes spill stores", report)]
    registers = re.findall(r"Used (\d+) registers", report)
    spilled = max(spills, default=0)
    bound = spill_bound(head_dim, args.allow)
    line = f"{args.arch} d{head_dim}: {registers[0] if registers else '?'} registers, " \
           f"{spilled} bytes spill stores (bound {bound})"
    print(line, flush=True)
    if spilled > bound:
        return f"spills {spilled} bytes, more than the bound of {bound}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("attngen")
    parser.add_argument("ptxas")
    parser.add_argument("arch", choices=["sm_80", "sm_90a"])
    parser.add_argument("outdir")
    parser.add_argument("--dims", default="8:256:8", help="FIRST:LAST:STEP (inclusive)")
    parser.add_argument("--allow", type=parse_allow, action="append", default=[],
                        help="LO-HI:BYTES, spill stores allowed for head dims LO..HI")
    args, flags = parser.parse_known_args()
    first, last, step = (int(x) for x in args.dims.split(":"))
    dims = list(range(first, last + 1, step))
    failures = []
    for head_dim in dims:
        error = check(args, flags, head_dim)
        if error:
            print(f"FAIL {args.arch} d{head_dim} {' '.join(flags)}: {error}", flush=True)
            failures.append(head_dim)
    if failures:
        print(f"{len(failures)} of {len(dims)} kernels failed: d{', d'.join(map(str, failures))}")
        return 1
    print(f"all {len(dims)} kernels ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
