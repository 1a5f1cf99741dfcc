#!/usr/bin/env bash
# Configures and builds attngen into build/ (Release, ninja, at most 2 jobs by
# default: ATTNGEN_JOBS overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
LLVM=/usr/lib/llvm-22
# ccache, where installed, lets several checkouts of the tree share objects.
LAUNCHER=()
if command -v ccache >/dev/null 2>&1; then
  LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${LAUNCHER[@]}" \
    -DMLIR_DIR=$LLVM/lib/cmake/mlir -DLLVM_DIR=$LLVM/lib/cmake/llvm \
    -DLLVM_EXTERNAL_LIT=$LLVM/bin/lit
fi
ninja -C build -j "${ATTNGEN_JOBS:-2}" "$@"
