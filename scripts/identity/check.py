#!/usr/bin/env python3
"""Byte-identity checker: the PTX, metadata and messages of every spec in
specs.txt, before and after a change.

    # outputs of a build (attngen for 'cli:' lines, libattngen for 'jit:')
    python3 scripts/identity/check.py gen build OUT
    # compare two such folders: exit 1 on any difference
    python3 scripts/identity/check.py compare BASE OUT [--renames]

A kernel is compared with its name replaced by a placeholder in the PTX and
the metadata, so a kernel renamed on purpose shows as a rename, not as a
PTX difference; renames fail the comparison unless --renames accepts them,
and so do the new messages of refused specs unless --messages does.
Metadata keys that only the new output has are listed, not failed (a change
may add keys); any other metadata difference fails. A refused spec's message
and exit status are compared as they are."""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def read_specs(path):
    """(kind, text) of each spec line, in order."""
    specs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            kind, _, text = line.partition(":")
            if kind not in ("cli", "jit"):
                sys.exit(f"{path}: a spec line starts with 'cli:' or 'jit:': {line}")
            specs.append((kind, text.strip()))
    return specs


def run_cli(build, index, flags, out):
    """Runs attngen on one spec; writes NNN.ptx, NNN.json and NNN.err."""
    stem = os.path.join(out, f"{index:04d}")
    cmd = [os.path.join(build, "bin", "attngen"), *flags.split(), "-o", stem + ".ptx"]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=out)
    with open(stem + ".err", "w") as f:
        f.write(f"rc={result.returncode}\n{result.stderr}")


JIT_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import attngen
for index, kwargs in json.loads(sys.stdin.read()):
    stem = f"{sys.argv[2]}/{index:04d}"
    try:
        kernel = eval(f"attngen.compile({kwargs})")
    except attngen.AttngenError as error:
        open(stem + ".err", "w").write(f"rc=1\n{error}\n")
        continue
    open(stem + ".ptx", "w").write(kernel.ptx)
    json.dump(kernel.metadata, open(stem + ".json", "w"), indent=2, sort_keys=True)
    open(stem + ".err", "w").write("rc=0\n")
"""


def run_jit(build, jobs, out):
    """Compiles the 'jit:' specs through the Python package (one process)."""
    env = dict(os.environ, ATTNGEN_LIBRARY=os.path.join(build, "lib", "libattngen.so"),
               ATTNGEN_DISABLE_DISK_CACHE="1")
    env.pop("ATTNGEN_LOG", None)
    python_dir = os.path.join(HERE, "..", "..", "python")
    subprocess.run([sys.executable, "-c", JIT_SCRIPT, python_dir, out], env=env, check=True,
                   input=json.dumps(jobs), text=True)


def generate(args):
    specs = read_specs(args.specs)
    os.makedirs(args.out, exist_ok=True)
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out)
    cli = [(i, text) for i, (kind, text) in enumerate(specs) if kind == "cli"]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(lambda job: run_cli(build, job[0], job[1], out), cli))
    jit = [(i, text) for i, (kind, text) in enumerate(specs) if kind == "jit"]
    if jit:
        run_jit(build, jit, out)
    with open(os.path.join(out, "specs.json"), "w") as f:
        json.dump(specs, f, indent=0)
    print(f"{len(specs)} specs -> {out}")


def read_output(folder, index):
    """(status and message, PTX, metadata dict, kernel name) of one spec."""
    stem = os.path.join(folder, f"{index:04d}")
    err = open(stem + ".err").read()
    ptx = open(stem + ".ptx").read() if os.path.exists(stem + ".ptx") else None
    meta = json.load(open(stem + ".json")) if os.path.exists(stem + ".json") else None
    name = meta.get("kernel") if meta else None
    if ptx is not None and name:
        # The entry and its parameters (<name>_param_<i>) carry the name.
        ptx = ptx.replace(name, "@KERNEL")
    if meta:
        meta = dict(meta, kernel="@KERNEL")
    return err, ptx, meta, name


def compare(args):
    base_specs = json.load(open(os.path.join(args.base, "specs.json")))
    new_specs = json.load(open(os.path.join(args.new, "specs.json")))
    if base_specs != new_specs:
        sys.exit("the two folders were generated from different spec lists")
    failures, renames, messages, added_keys, same = [], [], [], set(), 0
    for index, (kind, text) in enumerate(base_specs):
        label = f"[{index:04d}] {kind}: {text}"
        b_err, b_ptx, b_meta, b_name = read_output(args.base, index)
        n_err, n_ptx, n_meta, n_name = read_output(args.new, index)
        problems = []
        if b_err != n_err:
            change = f"status/message:\n    before: {b_err!r}\n    after:  {n_err!r}"
            same_status = b_err.split("\n")[0] == n_err.split("\n")[0]
            if args.messages and same_status:
                messages.append(f"{label}\n  {change}")
            else:
                problems.append(change)
        if b_ptx != n_ptx:
            problems.append("PTX differs" if b_ptx and n_ptx else "PTX present in one only")
        if (b_meta is None) != (n_meta is None):
            problems.append("metadata present in one only")
        elif b_meta is not None:
            for key in sorted(set(b_meta) | set(n_meta)):
                if key not in n_meta:
                    problems.append(f"metadata key {key!r} dropped")
                elif key not in b_meta:
                    added_keys.add(key)
                elif b_meta[key] != n_meta[key]:
                    problems.append(f"metadata {key!r}: {b_meta[key]!r} -> {n_meta[key]!r}")
        if b_name != n_name:
            renames.append(f"{label}\n    {b_name} -> {n_name}")
        if problems:
            failures.append(label + "\n  " + "\n  ".join(problems))
        elif b_name == n_name and b_err == n_err:
            same += 1
    for failure in failures:
        print("DIFFERS " + failure)
    for rename in renames:
        print("RENAMED " + rename)
    for message in messages:
        print("MESSAGE " + message)
    if added_keys:
        print("metadata keys added: " + ", ".join(sorted(added_keys)))
    print(f"{len(base_specs)} specs: {same} identical, {len(renames)} renamed, "
          f"{len(messages)} with a new message, {len(failures)} differ")
    if failures or (renames and not args.renames):
        sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("gen", help="compile every spec with a build")
    gen.add_argument("build", help="the build folder (bin/attngen, lib/libattngen.so)")
    gen.add_argument("out", help="where the outputs go")
    gen.add_argument("--specs", default=os.path.join(HERE, "specs.txt"))
    gen.add_argument("--jobs", type=int, default=2)
    cmp = sub.add_parser("compare", help="compare two folders of outputs")
    cmp.add_argument("base")
    cmp.add_argument("new")
    cmp.add_argument("--renames", action="store_true",
                     help="accept kernels whose only change is their name")
    cmp.add_argument("--messages", action="store_true",
                     help="accept a refused spec's new message (same status)")
    args = parser.parse_args()
    generate(args) if args.command == "gen" else compare(args)


if __name__ == "__main__":
    main()
