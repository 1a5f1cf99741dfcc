"""Mutation fuzz of tile programs: every tile program the verifiers accept
must lower (attn-to-nvvm) or be refused with a located error; a crash, a
hang or a silent failure fails the test.

    mutate_tile_program.py ATTNGEN ATTNGEN_OPT WORKDIR [COUNT]

The seeds are fixed, so a failure reproduces; the mutant that failed is
left in WORKDIR.
"""
import random
import re
import subprocess
import sys
from pathlib import Path

SPECS = [
    ["--arch=sm_90a", "--causal"],
    ["--arch=sm_90a", "--head-dim=64", "--no-warp-specialize"],
    ["--arch=sm_80", "--head-dim=64", "--causal"],
]
SSA = re.compile(r"%[A-Za-z0-9_]+(?:#[0-9]+)?")
SHAPE = re.compile(r"\b(\d+)x")


def mutate(lines, rng):
    """One random edit: drop a line, rewire an operand, resize a tile, or
    swap two lines."""
    lines = list(lines)
    body = [i for i, l in enumerate(lines)
            if l.strip() and not l.strip().startswith(("module", "func.func", "}", "//"))]
    kind = rng.choice(["drop", "rewire", "resize", "swap"])
    i = rng.choice(body)
    if kind == "drop":
        del lines[i]
    elif kind == "rewire":
        names = SSA.findall("\n".join(lines))
        uses = list(SSA.finditer(lines[i]))
        if uses and names:
            m = rng.choice(uses)
            lines[i] = lines[i][:m.start()] + rng.choice(names) + lines[i][m.end():]
    elif kind == "resize":
        sizes = list(SHAPE.finditer(lines[i]))
        if sizes:
            m = rng.choice(sizes)
            new = rng.choice([16, 32, 48, 64, 96, 128, 192, 256])
            lines[i] = lines[i][:m.start(1)] + str(new) + lines[i][m.end(1):]
    else:
        j = rng.choice(body)
        lines[i], lines[j] = lines[j], lines[i]
    return lines, kind


def main():
    attngen, opt, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20261129)
    lowered = refused = rejected = 0
    failures = []
    for n in range(count):
        spec = SPECS[n % len(SPECS)]
        base = work / f"base{n % len(SPECS)}.mlir"
        if not base.exists():
            subprocess.run([attngen, *spec, "--emit=mlir", "-o", str(base)], check=True)
        lines, kind = mutate(base.read_text().splitlines(), rng)
        mutant = work / f"mutant{n}.mlir"
        mutant.write_text("\n".join(lines) + "\n")
        try:
            proc = subprocess.run([opt, str(mutant), "-attn-to-nvvm", "-o", "/dev/null"],
                                  capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            failures.append(f"{mutant} ({kind}): hung")
            continue
        if proc.returncode == 0:
            lowered += 1
        elif proc.returncode == 1 and "error:" in proc.stderr:
            # The parser/verifier refused it, or attn-to-nvvm did, with a location.
            if re.search(r"mutant\d+\.mlir:\d+:\d+: error:", proc.stderr):
                refused += 1
            else:
                rejected += 1
        else:
            failures.append(f"{mutant} ({kind}): exit {proc.returncode}\n{proc.stderr[-600:]}")
    for f in failures:
        print("FAILURE:", f)
    print(f"{count} mutants: {lowered} lowered, {refused} refused with a located "
          f"error, {rejected} refused without a location, {len(failures)} crashed or hung")
    print(f"{count - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
