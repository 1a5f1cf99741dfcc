#!/usr/bin/env bash
# The backward pass on the GPU machine in one call: gradients over many
# shapes, determinism, autograd (eager and torch.compile), speed against
# SDPA's backward, compute-sanitizer on small ragged cases, and a small GPT
# trained with attngen and with SDPA from the same seed.
#
# Here:  bash scripts/build-self-contained.sh
#        cmake --install build-self-contained --prefix .gpu-jit/prefix --strip
# There (carry .gpu-jit): bash gpu/backward.sh [.gpu-jit/prefix] [--quick]
# With $OUT set, JSON results and logs go there. Exit status 0 when all passed.
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
PREFIX=$(readlink -f "${1:-.gpu-jit/prefix}")
shift || true
OUT=${OUT:-/tmp/attngen-out}
mkdir -p "$OUT"
real=$(ls "$PREFIX"/lib/libattngen.so.*.*.* | head -n 1)
for link in libattngen.so libattngen.so.0.1; do
  [ -e "$PREFIX/lib/$link" ] || ln -sf "$(basename "$real")" "$PREFIX/lib/$link"
done
export ATTNGEN_LIBRARY=$PREFIX/lib/libattngen.so PYTHONPATH=$PWD/python:$PWD/gpu
export ATTNGEN_CACHE_DIR=$(mktemp -d /tmp/attngen-cache-XXXXXX)
status=0
step() { echo; echo "== $*"; }
fail() { echo "FAILED: $*"; status=1; }

step "sanitizers on small ragged cases (memcheck, racecheck, synccheck)"
# Exit status 9 is the sanitizer's (a numeric miss is backward_check's own 1).
for tool in memcheck racecheck synccheck; do
  timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=attn_bwd \
    python3 gpu/backward_check.py --only correct --cases 4 > "$OUT/sanitize-$tool.log" 2>&1
  rc=$?
  [ $rc = 9 ] || [ $rc = 124 ] && fail "compute-sanitizer $tool (rc $rc)"
  grep -E "SUMMARY" "$OUT/sanitize-$tool.log" | tail -n 2
done
# The varlen kernels: memcheck and synccheck. racecheck stops on every varlen
# kernel, the forward's included, with "Internal Sanitizer Error: failed to
# handle a hardware exception" (compute-sanitizer with CUDA 13 on the H200),
# so it is not run on them.
for tool in memcheck synccheck; do
  timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=attn_bwd \
    python3 gpu/backward_check.py --only varlen --cases 3 > "$OUT/sanitize-varlen-$tool.log" 2>&1
  rc=$?
  [ $rc = 9 ] || [ $rc = 124 ] && fail "compute-sanitizer $tool on varlen (rc $rc)"
  grep -E "SUMMARY" "$OUT/sanitize-varlen-$tool.log" | tail -n 2
done

step "backward_check: gradients, determinism, autograd, speed"
timeout 600 python3 gpu/backward_check.py --json "$OUT/backward.json" "$@" 2>&1 \
  | tee "$OUT/backward.log"
[ "${PIPESTATUS[0]}" = 0 ] || fail "backward_check"

step "sm_80 kernels (ATTNGEN_ARCH=sm_80): gradients, determinism, autograd"
ATTNGEN_ARCH=sm_80 timeout 400 python3 gpu/backward_check.py --no-bench --quick \
  --json "$OUT/backward-sm80.json" 2>&1 | tee "$OUT/backward-sm80.log" | tail -n 8
[ "${PIPESTATUS[0]}" = 0 ] || fail "backward_check sm_80"

step "train a small GPT with attngen and with SDPA"
timeout 300 python3 gpu/train_gpt.py --json "$OUT/train_gpt.json" 2>&1 | tee "$OUT/train_gpt.log"
[ "${PIPESTATUS[0]}" = 0 ] || fail "train_gpt"
exit $status
