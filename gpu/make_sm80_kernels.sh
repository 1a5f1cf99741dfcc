#!/usr/bin/env bash
# Builds the sm_80 tile-configuration candidates (bf16) into DIR, to pick the
# defaults of passes/lib/TileConfig.cpp (chooseTileConfig, sm_80) from one GPU
# run: K/V ring stages 1 (attn-tile's single buffers), 2, 3 x key blocks x
# warps, at d64 / d128 / d256, causal or not. Names say what they are:
#   sm80_bf16_d128_causal_m128n48w4s2  = block-m 128, block-n 48, 4 warps, 2 stages
# With ptxas on PATH (or in /usr/local/cuda/bin) each kernel's registers and
# spills go to DIR/candidates.txt; a spilling candidate is kept and flagged.
#   bash gpu/make_sm80_kernels.sh [ATTNGEN] [DIR]
# then, on the GPU machine:
#   bash gpu/run.sh DIR build/lib/libattnrt.so --quick --bench-n 1024,8192
set -euo pipefail
ATTNGEN=${1:-build/bin/attngen}
DIR=${2:-.gpu/sm80-candidates}
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
mkdir -p "$DIR"

# head dim | block-m block-n warps stages, one candidate per entry.
CANDIDATES=(
  "64  128 64 4 1"  "64  128 64 4 2"  "64  128 64 4 3"
  "64  128 32 4 2"  "64  128 96 4 2"  "64  64 128 4 2"
  "128 128 32 4 1"  "128 128 32 4 2"  "128 128 32 4 3"
  "128 128 48 4 1"  "128 128 48 4 2"  "128 128 48 4 3"
  "128 128 64 4 1"  "128 128 64 4 2"  "128 128 64 8 2"  "128 64 64 4 2"
  "256 64 64 4 1"   "256 64 64 4 2"   "256 64 32 4 1"
  "256 64 32 4 2"   "256 64 32 4 3"   "256 64 48 4 2"
)

: > "$DIR/candidates.txt"
count=0
for entry in "${CANDIDATES[@]}"; do
  read -r d m n w s <<<"$entry"
  for causal in "" "--causal --causal-align=top-left"; do
    name="sm80_bf16_d${d}${causal:+_causal}_m${m}n${n}w${w}s${s}"
    if ! "$ATTNGEN" --arch=sm_80 --dtype=bf16 --head-dim="$d" $causal --block-m="$m" \
        --block-n="$n" --num-warps="$w" --stages="$s" -o "$DIR/$name.ptx" 2>"$DIR/$name.err"; then
      echo "$name: not built: $(tail -n 1 "$DIR/$name.err")" | tee -a "$DIR/candidates.txt"
      rm -f "$DIR/$name.ptx" "$DIR/$name.json"
      continue
    fi
    rm -f "$DIR/$name.err"
    count=$((count + 1))
    if [ -x "$PTXAS" ]; then
      stats=$("$PTXAS" -arch=sm_80 -v "$DIR/$name.ptx" -o /dev/null 2>&1 |
        sed -n 's/.*Used \([0-9]*\) registers.*/\1 regs/p; s/.*[^0-9]\([0-9]\+\) bytes spill stores.*/spill \1/p' |
        tr '\n' ' ')
      flag=""
      case "$stats" in *"spill 0"*) ;; *) flag="  <- SPILLS";; esac
      echo "$name: $stats$flag" >> "$DIR/candidates.txt"
    fi
  done
done
cat "$DIR/candidates.txt"
echo "$count candidates in $DIR"
