"""Starts N `attngen-jit-selftest compile DIR` processes at once and sums up
what they did (see concurrent-processes.test)."""
import collections
import glob
import subprocess
import sys

selftest, cache, count = sys.argv[1], sys.argv[2], int(sys.argv[3])


def round_of(label):
    procs = [subprocess.Popen([selftest, "compile", cache], stdout=subprocess.PIPE, text=True)
             for _ in range(count)]
    totals = collections.Counter()
    hashes = set()
    for p in procs:
        out, _ = p.communicate()
        if p.returncode != 0:
            sys.exit(f"a process failed: {out}")
        fields = dict(item.split("=") for item in out.split())
        totals["compiled"] += int(fields["compiles"])
        totals["disk"] += int(fields["disk_hits"])
        totals["corrupt"] += int(fields["corrupt"])
        hashes.add(fields["ptx_hash"])
    print(f"{label}: {count} processes, {totals['compiled']} compiled, {totals['disk']} read the "
          f"disk cache, {totals['corrupt']} saw a corrupt entry, {len(hashes)} distinct PTX")


round_of("round 1")
(entry,) = glob.glob(cache + "/*.kernel")
with open(entry, "r+b") as f:
    f.seek(200)
    f.write(b"#")
round_of("round 2")
