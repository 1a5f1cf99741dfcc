#!/usr/bin/env bash
# One call on the GPU machine: the runtime self-test, compute-sanitizer on
# small ragged shapes, the kernel matrix through libattnrt (correctness and
# speed against SDPA's flash and cuDNN backends), then the JIT and the Python
# API end to end; a short table of the steps last.
#
# Here (build machine):
#   bash gpu/make_kernels.sh build/bin/attngen .gpu/kernels
#   mkdir -p .gpu/lib .gpu/bin && cp -L build/lib/libattnrt.so .gpu/lib/ \
#     && cp build/bin/attnrt-selftest .gpu/bin/
#   bash scripts/build-self-contained.sh
#   cmake --install build-self-contained --prefix .gpu-jit/prefix --strip
# There (carry .gpu and .gpu-jit):
#   bash gpu/check_all.sh
#
# Environment: STEPS (default "sanitize kernels python"; also "sm80fused":
# gpu/backward_fused_sm80.sh's gradients and sanitizers), SANITIZE (kernel
# names under .gpu/kernels), BENCH_N (default 1024,8192), QUICK=1 for the
# quick correctness sweeps. Logs and JSON go to $OUT.
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
OUT=${OUT:-/tmp/attngen-out}
mkdir -p "$OUT"
LIB=.gpu/lib/libattnrt.so
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
QUICK_FLAG=${QUICK:+--quick}
results=()
start=$SECONDS
record() { results+=("$(printf '%-44s %-7s %5d s' "$1" "$2" "$3")"); }
run_step() {  # name, command...: runs it, logs to $OUT/<name>.log, records
  local name=$1; shift
  local t0=$SECONDS
  echo "== $name (t = $((SECONDS - start)) s)"
  if "$@" > "$OUT/$name.log" 2>&1; then
    record "$name" ok $((SECONDS - t0))
  else
    record "$name" FAILED $((SECONDS - t0)); tail -n 25 "$OUT/$name.log"
  fi
}

for step in ${STEPS:-sanitize kernels python}; do
  case $step in
  sanitize)
    # Each run under a timeout: a wrong mbarrier phase hangs, not fails.
    for k in ${SANITIZE:-sm_90a_bf16_d128_causal_br sm_90a_f16_d64_window_l100_r50 sm_80_bf16_d128_causal}; do
      for tool in memcheck racecheck synccheck; do
        run_step "san-$k-$tool" timeout 180 "$SAN" --tool "$tool" --error-exitcode 9 \
          python3 gpu/sanitize_case.py --lib "$LIB" --ptx ".gpu/kernels/$k.ptx" \
          --json ".gpu/kernels/$k.json"
      done
    done ;;
  kernels)
    run_step kernels env OUT="$OUT/kernels" bash gpu/run.sh .gpu/kernels "$LIB" --timeout 120 \
      --bench-n "${BENCH_N:-1024,8192}" $QUICK_FLAG
    grep -E "passed|failed|^\|" "$OUT/kernels.log" | tail -n 60 ;;
  python)
    run_step python env OUT="$OUT/python" bash gpu/run_python.sh .gpu-jit/prefix $QUICK_FLAG
    grep -E "TFLOPS|FAILED|passed" "$OUT/python.log" | tail -n 30 ;;
  sm80fused)
    # sm_80's one-kernel backward through the JIT: gradients and sanitizers.
    run_step sm80fused env OUT="$OUT/sm80fused" STEPS="correct sanitize" \
      bash gpu/backward_fused_sm80.sh
    grep -E "^==|rc=|SUMMARY|FAIL" "$OUT/sm80fused.log" | tail -n 20 ;;
  esac
done

echo
echo "== summary (t = $((SECONDS - start)) s)"
printf '%s\n' "${results[@]}"
! printf '%s\n' "${results[@]}" | grep -q FAILED
