#!/usr/bin/env bash
# The JIT, the C++ example and the Python API end to end on the GPU machine,
# which has no LLVM: the JIT travels as the self-contained libattngen.so.
#
# Here (build machine):
#   bash scripts/build-self-contained.sh
#   cmake --install build-self-contained --prefix .gpu-jit/prefix --strip
#   ATTNGEN_LIBRARY=$PWD/.gpu-jit/prefix/lib/libattngen.so.0.1.0 \
#     python3 -m pip wheel . --no-deps -w .gpu-jit/wheel         # optional
# There (carry .gpu-jit):
#   bash gpu/run_python.sh [.gpu-jit/prefix] [--quick]
#
# With $OUT set, JSON results and logs go there. Exit status: 0 when every
# step passed. Extra arguments (--quick) go to python_check.py and
# varlen_check.py.
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
PREFIX=$(readlink -f "${1:-.gpu-jit/prefix}")
shift || true
OUT=${OUT:-/tmp/attngen-out}
mkdir -p "$OUT"
# A copy may have lost the library's symlinks; put them back.
real=$(ls "$PREFIX"/lib/libattngen.so.*.*.* | head -n 1)
for link in libattngen.so libattngen.so.0.1; do
  [ -e "$PREFIX/lib/$link" ] || ln -sf "$(basename "$real")" "$PREFIX/lib/$link"
done
export ATTNGEN_LIBRARY=$PREFIX/lib/libattngen.so
export PYTHONPATH=$PWD/python
export ATTNGEN_CACHE_DIR=$(mktemp -d /tmp/attngen-cache-XXXXXX)
status=0
step() { echo; echo "== $*"; }
fail() { echo "FAILED: $*"; status=1; }

step "environment"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
echo "libattngen: $(du -hL "$ATTNGEN_LIBRARY" | cut -f1)"; ldd "$ATTNGEN_LIBRARY"

step "C++ example: find_package(attngen) on the installed prefix, JIT + launch + check"
cmake -S examples/cpp -B /tmp/example -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -Dattngen_DIR="$PREFIX/lib/cmake/attngen" > /tmp/example-configure.log 2>&1 \
  || { cat /tmp/example-configure.log; fail "example configure"; }
cmake --build /tmp/example > /tmp/example-build.log 2>&1 || { cat /tmp/example-build.log; fail "example build"; }
/tmp/example/jit_example --arch=sm_80 || fail "jit_example --arch=sm_80"
/tmp/example/jit_example || fail "jit_example on the GPU"

step "compile-speed benchmark (C API, the JIT on this machine)"
g++ -O2 -std=c++17 jit/tests/bench_compile.cpp -I"$PREFIX/include" -L"$PREFIX/lib" -lattngen \
  -Wl,-rpath,"$PREFIX/lib" -o /tmp/bench_compile || fail "bench build"
/tmp/bench_compile --json="$OUT/bench_compile.json" | tee "$OUT/bench_compile.log" || fail "bench"

step "Python unit tests (errors, torch.compile, opcheck, reference)"
python3 -m unittest discover -s python/tests -v 2>&1 | tee "$OUT/unittest.log"
[ "${PIPESTATUS[0]}" = 0 ] || fail "python unit tests"

step "Python example"
python3 examples/python/attention_example.py || fail "python example"

step "Python API: correctness over many shapes, speed vs SDPA"
python3 gpu/python_check.py --json "$OUT/python_check.json" "$@" 2>&1 | tee "$OUT/python_check.log"
[ "${PIPESTATUS[0]}" = 0 ] || fail "python_check"
step "Python API, variable-length batches: correctness per sequence, speed vs dense and torch varlen"
python3 gpu/varlen_check.py --json "$OUT/varlen_check.json" "$@" 2>&1 | tee "$OUT/varlen_check.log"
[ "${PIPESTATUS[0]}" = 0 ] || fail "varlen_check"
if command -v compute-sanitizer >/dev/null 2>&1; then
  step "compute-sanitizer memcheck on varlen kernels (small cases)"
  compute-sanitizer --tool memcheck --error-exitcode 1 python3 gpu/varlen_check.py --sanitize \
    > "$OUT/varlen_memcheck.log" 2>&1 || { tail -n 30 "$OUT/varlen_memcheck.log"; fail "varlen memcheck"; }
  tail -n 3 "$OUT/varlen_memcheck.log"
fi
step "KV-cache decoding: correctness (paged, split-KV, GQA), CUDA graphs, torch.compile, decode speed vs SDPA"
python3 gpu/decode_check.py --json "$OUT/decode_check.json" "$@" 2>&1 | tee "$OUT/decode_check.log"
[ "${PIPESTATUS[0]}" = 0 ] || fail "decode_check"
step "flash_attn drop-in (attngen.flash_attn_interface): flash_attn's criterion, decode speed vs SDPA"
python3 gpu/flash_attn_check.py --json "$OUT/flash_attn_check.json" "$@" 2>&1 | tee "$OUT/flash_attn_check.log"
[ "${PIPESTATUS[0]}" = 0 ] || fail "flash_attn_check"
if command -v compute-sanitizer >/dev/null 2>&1; then
  step "compute-sanitizer memcheck and racecheck on the KV-cache kernels with windows (small cases)"
  for tool in memcheck racecheck; do
    timeout 300 compute-sanitizer --tool $tool --error-exitcode 1 python3 gpu/flash_attn_check.py \
      --quick --only kvcache > "$OUT/flash_attn_$tool.log" 2>&1 \
      || { tail -n 30 "$OUT/flash_attn_$tool.log"; fail "flash_attn_check under $tool"; }
    tail -n 2 "$OUT/flash_attn_$tool.log"
  done
fi
WHEEL=$(ls "$(dirname "$PREFIX")"/wheel/attngen-*.whl 2>/dev/null | head -n 1)
if [ -n "$WHEEL" ]; then
  step "pip install of the wheel (self-contained library inside), tests against the install"
  # Into a target folder: the python with torch here is itself a venv, and a
  # venv made from it would not see its torch.
  python3 -m pip install -q --no-index --no-deps --target /tmp/wheel-site "$WHEEL" \
    || fail "pip install $WHEEL"
  # From outside the source tree, without ATTNGEN_LIBRARY: the package must
  # find its own library. Only the no-torch test may be skipped.
  (cd /tmp && env -u ATTNGEN_LIBRARY PYTHONPATH=/tmp/wheel-site python3 -c \
    'import attngen; print("installed:", attngen.__file__, attngen._library_path)' \
    && cp -r "$OLDPWD/python/tests" /tmp/wheel-tests \
    && env -u ATTNGEN_LIBRARY PYTHONPATH=/tmp/wheel-site python3 -m unittest discover \
       -s /tmp/wheel-tests 2>&1 | tail -n 3 | tee /tmp/wheel-tests.log \
    && grep -q "OK (skipped=1)" /tmp/wheel-tests.log) || fail "tests with the installed wheel"
fi

echo
echo "run_python.sh: $([ $status = 0 ] && echo all steps passed || echo SOME STEPS FAILED)"
exit $status
