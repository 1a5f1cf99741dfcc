"""Summarises ncu per-instruction CSVs (ncu --page source --csv --print-source
sass): each kernel's warp stall reasons as shares of all samples, and its
hottest instructions with their main stall reason."""
import collections
import csv
import sys


def summarise(path, top=12):
    rows = list(csv.reader(open(path)))
    header, data = rows[1], rows[2:]
    col = {h: i for i, h in enumerate(header)}
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    totals, samples, hot = collections.Counter(), 0, []
    for r in data:
        if len(r) < len(header):
            continue
        s = int(r[col["Warp Stall Sampling (All Samples)"]] or 0)
        samples += s
        per = {h: int(r[col[h]] or 0) for h in reasons}
        totals.update(per)
        hot.append((s, r[col["Source"]].strip(), max(per, key=per.get)))
    print(f"== {path}: {samples} samples")
    for reason, n in totals.most_common(8):
        print(f"  {reason:22s} {100 * n / max(samples, 1):5.1f}%")
    for s, source, reason in sorted(hot, key=lambda x: -x[0])[:top]:
        print(f"  {100 * s / max(samples, 1):5.1f}%  {source[:64]:64s} {reason}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summarise(p)
