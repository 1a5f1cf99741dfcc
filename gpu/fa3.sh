#!/usr/bin/env bash
# The sm_90a FlashAttention-3 schedule on the GPU machine, in one call:
# compute-sanitizer (memcheck, racecheck, synccheck) on small ragged shapes,
# then correctness + benchmark of the default kernels and the ablations
# against cuDNN and FA2 (PyTorch SDPA) in the same run.
#
#   bash gpu/make_fa3_kernels.sh            # here: kernels into .gpu/fa3, .gpu/ablation
#   bash gpu/fa3.sh LIB                     # there, LIB = libattnrt.so
#
# Environment: SANITIZE (kernel names under .gpu/fa3 to sanitize, "" for
# none), TOOLS (default "memcheck racecheck synccheck"), ABLATION=0 (skip the
# ablation), BENCH_N, FA3_ARGS (more check_and_bench.py options), EXTRA
# ("DIR:OPTIONS;DIR:OPTIONS": more kernel folders, e.g. sm_80 kernels with
# --quick). Each section prints how long it took.
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
LIB=${1:-.gpu/lib/libattnrt.so}
OUTDIR=${OUT:-/tmp/out}
mkdir -p "$OUTDIR"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
status=0
start=$SECONDS
section() { echo "== $1 (t = $((SECONDS - start)) s)"; }
section "compute-sanitizer (each run under a 180 s timeout: a wrong mbarrier phase hangs)"
for k in ${SANITIZE-sm90a_bf16_d128 sm90a_bf16_d128_causal sm90a_bf16_d64_causal sm90a_bf16_d256 sm90a_bf16_d128_causal_br sm90a_bf16_d128_window_l1024_r0_br sm90a_bf16_d64_window_l1024_r1024_br sm90a_bf16_d128_window_l100_r50 sm90a_bf16_d256_window_l1024_r0_br}; do
  for tool in ${TOOLS:-memcheck racecheck synccheck}; do
    if timeout 180 "$SAN" --tool $tool --error-exitcode 9 python3 gpu/sanitize_case.py \
        --lib "$LIB" --ptx .gpu/fa3/$k.ptx --json .gpu/fa3/$k.json > "$OUTDIR/san-$k-$tool.log" 2>&1; then
      echo "$k $tool: clean ($(grep -c ok "$OUTDIR/san-$k-$tool.log") shapes ok)"
    else
      echo "$k $tool: FAILED (exit $?)"; tail -n 15 "$OUTDIR/san-$k-$tool.log"; status=1
    fi
  done
done
section "default kernels"
OUT=$OUTDIR/fa3 bash gpu/run.sh .gpu/fa3 "$LIB" --timeout 120 --bench-n ${BENCH_N:-1024,8192} --bench-gqa ${FA3_ARGS:-} || status=1
if [ -d .gpu/ablation ] && [ "${ABLATION:-1}" = 1 ]; then
  section "ablation"
  OUT=$OUTDIR/ablation bash gpu/run.sh .gpu/ablation "$LIB" --timeout 120 --quick --bench-n 8192 || status=1
fi
IFS=';' read -ra extras <<< "${EXTRA:-}"
for extra in "${extras[@]}"; do
  [ -n "$extra" ] || continue
  dir=${extra%%:*}
  opts=${extra#*:}
  [ "$opts" = "$extra" ] && opts=""
  section "$dir $opts"
  OUT=$OUTDIR/$(basename "$dir") bash gpu/run.sh "$dir" "$LIB" --timeout 120 $opts || status=1
done
section "done, status $status"
exit $status
