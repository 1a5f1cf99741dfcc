#!/usr/bin/env bash
# The exp2-emulation matrix on the GPU machine, in one call (~2-3 minutes):
# every kernel of gpu/make_exp2_kernels.sh checked against the float32
# reference on ragged shapes (--quick: Nq != Nk both ways, GQA, strided and
# padded views, LSE = NULL, bottom-right rows that see no key; outputs
# poisoned with NaN first; each kernel in a child under a 120 s timeout),
# then timed at N = 8k beside cuDNN and FA2 (SDPA) in the same run. The
# "exp2 emulation" table sets each _exp2emu<k>o8 kernel beside the same
# kernel without emulation (and a soft-capped one beside the plain kernel:
# the bar is >= 0.9x).
#
#   bash gpu/make_exp2_kernels.sh           # here: kernels into .gpu/exp2
#   bash gpu/exp2.sh LIB                    # there, LIB = libattnrt.so
#
# Environment: BENCH_N (default 8192), EXP2_ARGS (more check_and_bench.py
# options, e.g. --iters 50), OUT (results folder, default /tmp/out).
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
LIB=${1:-.gpu/lib/libattnrt.so}
OUTDIR=${OUT:-/tmp/out}
mkdir -p "$OUTDIR"
start=$SECONDS
OUT=$OUTDIR/exp2 bash gpu/run.sh .gpu/exp2 "$LIB" --quick --timeout 120 \
  --bench-n "${BENCH_N:-8192}" ${EXP2_ARGS:-}
status=$?
echo "== done, status $status (t = $((SECONDS - start)) s)"
exit $status
