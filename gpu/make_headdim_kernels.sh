#!/usr/bin/env bash
# Compiles the kernels of the head-dim check (issue 9 item 4) with attngen on
# the build machine (the GPU machine has no LLVM/MLIR), as NAME.ptx + NAME.json:
#
#   DIR/headdim_full   d40, d96, d192 (the first-class sizes and a head dim
#                      that is not a multiple of 16), both targets, bf16 not
#                      causal and f16 bottom-right causal: 12 kernels for the
#                      full correctness sweep (45 / 71 cases each)
#   DIR/headdim        every other head dim of the set {8, 16, 40, 64, 72, 80,
#                      96, 112, 128, 160, 192, 224, 256}, the same two
#                      variants per target: 40 kernels for the quick sweep
#                      Both hold, besides, the sm_90a kernels of the head
#                      dims up to d176 (whose default epilogue is the TMA
#                      store) built with the register epilogue
#                      (--tma-store=false): NAME_notma
#   DIR/headdim_tiles  the tile candidates of d96 and d192 for the speed rows
#                      (bf16; sm_90a also causal): the default, FlashAttention-3's
#                      or -2's shape and their neighbours, named
#                      ARCH_bf16_dD[_causal]_BMxBN_wW[_sS][_default] (S: sm_80
#                      K/V stages when not the default's)
#
#   bash gpu/make_headdim_kernels.sh [ATTNGEN] [DIR]     (DIR default .gpu)
#   then on the GPU machine: bash gpu/headdim.sh LIB
set -euo pipefail
ATTNGEN=${1:-build/bin/attngen}
DIR=${2:-.gpu}
rm -rf "$DIR/headdim_full" "$DIR/headdim" "$DIR/headdim_tiles"
mkdir -p "$DIR/headdim_full" "$DIR/headdim" "$DIR/headdim_tiles"
for arch in sm_80 sm_90a; do
  a=${arch/_/}
  for d in 8 16 40 64 72 80 96 112 128 160 192 224 256; do
    case $d in 40 | 96 | 192) out=$DIR/headdim_full ;; *) out=$DIR/headdim ;; esac
    "$ATTNGEN" --arch=$arch --head-dim=$d --dtype=bf16 -o "$out/${a}_bf16_d$d.ptx"
    "$ATTNGEN" --arch=$arch --head-dim=$d --dtype=f16 --causal --causal-align=bottom-right \
      -o "$out/${a}_f16_d${d}_causal_br.ptx"
    # The register epilogue where the TMA one is the default (attn-tma-store
    # runs wherever the output tile fits, up to d176): NAME_notma.
    if [ $arch = sm_90a ] && [ $d -le 176 ]; then
      "$ATTNGEN" --arch=$arch --head-dim=$d --dtype=bf16 --tma-store=false \
        -o "$out/${a}_bf16_d${d}_notma.ptx"
      "$ATTNGEN" --arch=$arch --head-dim=$d --dtype=f16 --causal --causal-align=bottom-right \
        --tma-store=false -o "$out/${a}_f16_d${d}_causal_br_notma.ptx"
    fi
  done
done

# Tile candidates: "ARCH D BMxBNxWARPS[xSTAGES]..." with the default first
# (the default is compiled without overrides and checked to be that shape).
candidates=(
  "sm_90a 96 128x144x8 128x128x8 128x160x8 128x176x8 192x96x12 192x144x12"
  "sm_90a 192 128x96x8 128x64x8 128x80x8 128x112x8"
  "sm_80 96 128x64x4 128x64x4x1 128x96x4 128x48x4x1 128x64x8 64x64x4"
  "sm_80 192 128x64x8 128x64x8x1 64x64x4x1 128x32x8 64x32x4x1"
)
for line in "${candidates[@]}"; do
  set -- $line
  arch=$1 d=$2
  shift 2
  a=${arch/_/}
  default=$1
  causals=("")
  [ "$arch" = sm_90a ] && causals+=(--causal)
  for causal in "${causals[@]}"; do
    c=${causal:+_causal}
    for shape in "$@"; do
      IFS=x read -r bm bn w s <<< "$shape"
      name="${a}_bf16_d${d}${c}_${bm}x${bn}_w${w}${s:+_s$s}"
      if [ "$shape" = "$default" ]; then
        "$ATTNGEN" --arch=$arch --head-dim=$d $causal -o "$DIR/headdim_tiles/${name}_default.ptx"
        grep -q "\"block_m\": $bm," "$DIR/headdim_tiles/${name}_default.json" &&
          grep -q "\"block_n\": $bn," "$DIR/headdim_tiles/${name}_default.json" ||
          { echo "error: the default of $arch d$d$c is no longer ${bm}x${bn}: update this list" >&2; exit 1; }
      else
        "$ATTNGEN" --arch=$arch --head-dim=$d $causal --block-m=$bm --block-n=$bn --num-warps=$w \
          ${s:+--stages=$s} -o "$DIR/headdim_tiles/$name.ptx"
      fi
    done
  done
done
# Registers and spills of the candidates (ptxas where installed), for the
# benchmark table to be read with.
PTXAS=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
if [ -x "$PTXAS" ]; then
  for ptx in "$DIR"/headdim_tiles/*.ptx; do
    arch=sm_90a
    case $(basename "$ptx") in sm80_*) arch=sm_80 ;; esac
    stats=$("$PTXAS" -arch=$arch -v "$ptx" -o /dev/null 2>&1 |
      sed -n 's/.*Used \([0-9]*\) registers.*/\1 regs/p; s/.*[^0-9]\([0-9]\+\) bytes spill stores.*/spill \1/p' |
      tr '\n' ' ')
    echo "$(basename "$ptx" .ptx): $stats"
  done > "$DIR/headdim_tiles/candidates.txt"
  cat "$DIR/headdim_tiles/candidates.txt"
fi
for sub in headdim_full headdim headdim_tiles; do
  echo "$DIR/$sub: $(ls "$DIR/$sub"/*.ptx | wc -l) kernels"
done
