#!/usr/bin/env bash
# Runs the attngen GPU check and benchmark on the GPU machine, from the repo root.
#
#   bash gpu/run.sh KERNELS_DIR [LIB] [check_and_bench.py options...]
#
# KERNELS_DIR  directory of NAME.ptx + NAME.json pairs emitted by attngen
# LIB          prebuilt libattnrt.so (default build-gpu/lib/libattnrt.so); if it
#              is missing or does not load, the runtime is built here with
#              cmake -DATTNGEN_RUNTIME_ONLY=ON (needs cmake, ninja, g++, cuda.h)
# options      passed through, e.g. --quick, --no-bench, --bench-n 1024
#
# With $OUT set, the results go to $OUT/check_and_bench.json and the log to
# $OUT/check_and_bench.log. The exit status is the check's (0: all passed).
set -uo pipefail
SCRIPT=$(readlink -f "$0")
cd "$(dirname "$SCRIPT")/.."

if [ $# -lt 1 ] || [[ "$1" == --* ]]; then
  sed -n '2,15p' "$SCRIPT"
  exit 2
fi
KERNELS=$1
shift
LIB=build-gpu/lib/libattnrt.so
if [ $# -gt 0 ] && [[ "$1" != --* ]]; then
  LIB=$1
  shift
fi

PYTHON=${PYTHON:-python3}
loads() { "$PYTHON" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$1" 2>/dev/null; }

if [ -f "$LIB" ] && loads "$LIB"; then
  echo "== using prebuilt $LIB"
else
  echo "== $LIB missing or not loadable: building the runtime in /tmp/rt"
  cmake -S . -B /tmp/rt -G Ninja -DATTNGEN_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release >/tmp/rt-cmake.log 2>&1 \
    || { cat /tmp/rt-cmake.log; echo "error: cmake of the runtime failed"; exit 2; }
  ninja -C /tmp/rt attnrt attnrt-selftest || { echo "error: building the runtime failed"; exit 2; }
  LIB=/tmp/rt/lib/libattnrt.so
fi

# The validation self-test needs no GPU; run it where it was built.
SELFTEST=$(dirname "$LIB")/../bin/attnrt-selftest
if [ -x "$SELFTEST" ]; then
  echo "== $SELFTEST"
  # The selftest must load the library check_and_bench.py loads, LIB itself:
  # a copied LIB may have lost its soname link (libattnrt.so.1), or sit
  # beside a stale one.
  sodir=$(mktemp -d)
  ln -s "$(readlink -f "$LIB")" "$sodir/libattnrt.so.1"
  LD_LIBRARY_PATH=$sodir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$SELFTEST" > "$sodir/selftest.log" 2>&1
  selftest_status=$?
  grep -v '^PASS' "$sodir/selftest.log"
  [ $selftest_status -eq 0 ] || echo "warning: attnrt-selftest reported failures (above)"
  rm -rf "$sodir"
fi

echo "== environment"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null \
  || echo "(nvidia-smi unavailable)"
"$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' \
  || { echo "error: python3 cannot import torch"; exit 2; }

ARGS=(gpu/check_and_bench.py --lib "$LIB" --kernels "$KERNELS")
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  ARGS+=(--json "$OUT/check_and_bench.json")
fi
echo "== $PYTHON ${ARGS[*]} $*"
if [ -n "${OUT:-}" ]; then
  PYTHONUNBUFFERED=1 "$PYTHON" "${ARGS[@]}" "$@" 2>&1 | tee "$OUT/check_and_bench.log"
else
  PYTHONUNBUFFERED=1 "$PYTHON" "${ARGS[@]}" "$@"
fi
