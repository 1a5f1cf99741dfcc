"""Mutation fuzz of tile programs: every tile program the verifiers accept
must lower (attn-to-nvvm) or be refused with a located error; a crash, a
hang or a silent failure fails the test.

    mutate_tile_program.py ATTNGEN ATTNGEN_OPT WORKDIR [COUNT]

The seeds are fixed, so a failure reproduces; the mutant that failed is
left in WORKDIR.

Mutants whose SSA text is malformed (a value defined twice, or used above its
definition) are drawn again: they are not tile programs any verifier accepts,
and MLIR 22's parser can crash cleaning up after some of them (a heap
corruption after the "redefinition" error), which is upstream's bug, not the
lowering's.
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
    ["--arch=sm_90a", "--head-dim=64", "--window=100,50", "--causal-align=bottom-right"],
]
SSA = re.compile(r"%[A-Za-z0-9_]+(?:#[0-9]+)?")
SHAPE = re.compile(r"\b(\d+)x")
#: Where a line defines values: op results (in the enclosing region) and
#: loop induction variables and iteration arguments (in the loop's body).
RESULTS = re.compile(r"^\s*((?:%[A-Za-z0-9_]+(?::\d+)?(?:,\s*)?)+) =")
REGION_ARGS = [re.compile(r"scf\.for (%[A-Za-z0-9_]+) ="),
               re.compile(r"[(,]\s*(%[A-Za-z0-9_]+) = ")]
NAME = re.compile(r"%[A-Za-z0-9_]+")
#: Redraws of one mutant before giving up on well-formed SSA.
MAX_DRAWS = 50


def well_formed_ssa(lines):
    """Whether no value is defined twice in one region and every use is
    below a definition in an enclosing region (textually: a line that ends
    with "{" opens a region, one that starts with "}" closes one)."""
    scopes = [set()]
    for line in lines:
        text = line.strip()
        if text.startswith("}"):
            scopes.pop()
            if not scopes:
                return False
        m = RESULTS.match(line)
        results = NAME.findall(m.group(1)) if m else []
        region_args = [a for p in REGION_ARGS for a in p.findall(line)]
        for use in SSA.findall(line):
            name = use.split("#")[0]
            if name in results or name in region_args or name.startswith("%arg"):
                continue
            if not any(name in scope for scope in scopes):
                return False
        for d in results:
            if d in scopes[-1]:
                return False
            scopes[-1].add(d)
        if text.endswith("{"):
            scopes.append(set(region_args))
    return True


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
        original = base.read_text().splitlines()
        for _ in range(MAX_DRAWS):
            lines, kind = mutate(original, rng)
            if well_formed_ssa(lines):
                break
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
