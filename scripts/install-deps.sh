#!/usr/bin/env bash
# Installs what attngen needs on Debian 12: LLVM/MLIR 22 (headers, libraries,
# FileCheck, lit), fmt, ninja and cmake. The CUDA toolkit (ptxas, cuda.h) is
# optional: without it the PTX is still produced, only not assembled by the
# tests, and the runtime is built against the headers when they exist.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PACKAGES=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools libfmt-dev
          ninja-build cmake g++ python3 python3-venv zlib1g-dev libzstd-dev)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
else
  echo "== all packages present"
fi
