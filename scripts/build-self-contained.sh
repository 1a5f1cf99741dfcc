#!/usr/bin/env bash
# Builds a self-contained libattngen.so (the JIT and the runtime, with LLVM,
# MLIR, fmt and libstdc++ linked in statically) into build-self-contained/,
# and a stripped copy into DEST (default out/self-contained/). It needs only
# libc, libm, libz and libzstd, so the JIT can run on a machine without LLVM
# (the GPU machine: gpu/run_python.sh carries it there).
#   bash scripts/build-self-contained.sh [DEST]
set -euo pipefail
cd "$(dirname "$0")/.."
LLVM=/usr/lib/llvm-22
DEST=${1:-out/self-contained}
if [ ! -f build-self-contained/build.ninja ]; then
  cmake -S . -B build-self-contained -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DATTNGEN_SELF_CONTAINED=ON \
    -DMLIR_DIR=$LLVM/lib/cmake/mlir -DLLVM_DIR=$LLVM/lib/cmake/llvm
fi
ninja -C build-self-contained -j "${ATTNGEN_JOBS:-2}" attngen_jit
mkdir -p "$DEST"
strip --strip-unneeded -o "$DEST/libattngen.so" build-self-contained/lib/libattngen.so
echo "self-contained JIT: $DEST/libattngen.so ($(du -h "$DEST/libattngen.so" | cut -f1)), needs:"
readelf -d "$DEST/libattngen.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/  \1/p'
