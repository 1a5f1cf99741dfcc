#!/usr/bin/env bash
# Installs, builds and runs every test (lit: dialect, passes, codegen, PTX
# through ptxas when the CUDA toolkit is present, tools, runtime self-test).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
/usr/lib/llvm-22/bin/lit -sv build/test
