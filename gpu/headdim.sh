#!/usr/bin/env bash
# Head dims 8..256 on the GPU machine (issue 9 item 4): the runtime's TMA
# boxes of 64- and 32-byte swizzle checked by naive kernels, compute-sanitizer
# on the padded and narrow-swizzle kernels, correctness of every head dim of
# the set on both targets against the float32 reference, and the d96/d192 tile
# candidates timed against cuDNN and FA2 (PyTorch SDPA) in the same run.
#
#   bash gpu/make_headdim_kernels.sh          # here: .gpu/headdim{_full,,_tiles}
#   bash gpu/headdim.sh LIB                   # there, LIB = libattnrt.so
#
# SECTIONS picks what runs (default all, in this order): naive sanitize full
# quick tiles. Each prints how long it took; to stay within a 10-minute call,
# run them in three (on the H200: sanitize 128 s, full 106 s; quick, 56
# kernels with the _notma ones, about 6 minutes):
#   SECTIONS="naive sanitize full" bash gpu/headdim.sh LIB
#   SECTIONS="quick" bash gpu/headdim.sh LIB
#   SECTIONS="tiles" bash gpu/headdim.sh LIB
# SANITIZE overrides the sanitized kernels (names under .gpu/headdim_full),
# BENCH_N the timed sequence lengths (default 1024,8192). Results and logs go
# to $OUT (default /tmp/out). Exit status 0: every check passed.
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
LIB=${1:-.gpu/lib/libattnrt.so}
OUTDIR=${OUT:-/tmp/out}
mkdir -p "$OUTDIR"
SECTIONS=${SECTIONS:-naive sanitize full quick tiles}
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
status=0
start=$SECONDS
section() { echo "== $1 (t = $((SECONDS - start)) s)"; }
wants() { [[ " $SECTIONS " == *" $1 "* ]]; }

if wants naive; then
  section "naive kernels: TMA boxes of 128/64/32-byte swizzle read back (d40: columns past D read 0)"
  python3 gpu/naive/make_kernels.py /tmp/naive-headdim > "$OUTDIR/naive-build.log" 2>&1 \
    || { cat "$OUTDIR/naive-build.log"; echo "naive build FAILED"; status=1; }
  OUT=$OUTDIR/naive bash gpu/run.sh /tmp/naive-headdim "$LIB" --quick --no-bench --timeout 120 || status=1
fi
if wants sanitize; then
  section "compute-sanitizer (each run under a 180 s timeout)"
  for k in ${SANITIZE-sm90a_bf16_d96 sm90a_f16_d40_causal_br sm80_f16_d40_causal_br sm90a_bf16_d96_notma}; do
    for tool in memcheck racecheck synccheck; do
      if timeout 180 "$SAN" --tool $tool --error-exitcode 9 python3 gpu/sanitize_case.py --lib "$LIB" \
          --ptx .gpu/headdim_full/$k.ptx --json .gpu/headdim_full/$k.json > "$OUTDIR/san-$k-$tool.log" 2>&1; then
        echo "$k $tool: clean ($(grep -c ok "$OUTDIR/san-$k-$tool.log") shapes ok)"
      else
        echo "$k $tool: FAILED (exit $?)"; tail -n 15 "$OUTDIR/san-$k-$tool.log"; status=1
      fi
    done
  done
fi
if wants full; then
  section "correctness, full sweep: d40, d96, d192 on both targets"
  OUT=$OUTDIR/headdim_full bash gpu/run.sh .gpu/headdim_full "$LIB" --no-bench --timeout 180 || status=1
fi
if wants quick; then
  section "correctness, quick sweep: the other head dims of {8 .. 256}"
  OUT=$OUTDIR/headdim bash gpu/run.sh .gpu/headdim "$LIB" --quick --no-bench --timeout 120 || status=1
fi
if wants tiles; then
  section "d96 / d192 tile candidates: quick correctness, speed against cuDNN and FA2"
  OUT=$OUTDIR/headdim_tiles bash gpu/run.sh .gpu/headdim_tiles "$LIB" --quick --timeout 180 \
    --bench-n "${BENCH_N:-1024,8192}" || status=1
fi
section "done, status $status"
exit $status
