#!/usr/bin/env bash
# Compiles the 50-kernel matrix of the GPU check with attngen (on the build
# machine: the GPU machine has no LLVM/MLIR) into DIR as NAME.ptx + NAME.json:
# per target f16/bf16 x d64/d128 x {plain, causal}, bf16 d256, bottom-right
# causal (FlashAttention's alignment) for bf16 d128 and f16 d64, two
# soft-capped kernels (cap 2, small enough to bite on randn inputs: bf16 d128
# bottom-right causal, f16 d64 plain), the sm_80 K/V ring ablation
# (bf16 d128 with 1 and 3 stages, plain and causal), and ten sliding windows:
# a causal window wider than a block (256, 0), two-sided narrower than a
# block (100, 50), the diagonal alone (0, 0), right side only (-1, 64), left
# side only (7, -1), wide two-sided at d256 (1024, 1024), both alignments,
# and the speed rows' (1024, 0) and (1024, 1024) at bf16 d128 and d64 (beside
# the plain kernels of the same shape).
#   bash gpu/make_kernels.sh [ATTNGEN] [DIR]
set -euo pipefail
ATTNGEN=${1:-build/bin/attngen}
DIR=${2:-.gpu/kernels}
mkdir -p "$DIR"
for arch in sm_80 sm_90a; do
  for dtype in bf16 f16; do
    for d in 64 128; do
      for causal in "" "--causal --causal-align=top-left"; do
        name="${arch}_${dtype}_d${d}${causal:+_causal}"
        "$ATTNGEN" --arch=$arch --dtype=$dtype --head-dim=$d $causal -o "$DIR/$name.ptx"
      done
    done
  done
  "$ATTNGEN" --arch=$arch --dtype=bf16 --head-dim=256 -o "$DIR/${arch}_bf16_d256.ptx"
  for variant in "bf16 128" "f16 64"; do
    set -- $variant
    "$ATTNGEN" --arch=$arch --dtype=$1 --head-dim=$2 --causal --causal-align=bottom-right \
      -o "$DIR/${arch}_$1_d$2_causal_br.ptx"
  done
  "$ATTNGEN" --arch=$arch --dtype=bf16 --head-dim=128 --causal --causal-align=bottom-right \
    --softcap=2 -o "$DIR/${arch}_bf16_d128_causal_br_softcap2.ptx"
  "$ATTNGEN" --arch=$arch --dtype=f16 --head-dim=64 --softcap=2 -o "$DIR/${arch}_f16_d64_softcap2.ptx"
  # Sliding windows: "dtype d window align name".
  for variant in "bf16 128 256,0 bottom-right l256_r0_br" "f16 64 100,50 top-left l100_r50" \
                 "bf16 128 0,0 top-left l0_r0" "f16 128 -1,64 bottom-right r64_br" \
                 "bf16 64 7,-1 bottom-right l7_br" "bf16 256 1024,1024 top-left l1024_r1024" \
                 "bf16 128 1024,0 bottom-right l1024_r0_br" "bf16 128 1024,1024 bottom-right l1024_r1024_br" \
                 "bf16 64 1024,0 bottom-right l1024_r0_br" "bf16 64 1024,1024 bottom-right l1024_r1024_br"; do
    set -- $variant
    "$ATTNGEN" --arch=$arch --dtype=$1 --head-dim=$2 --window=$3 --causal-align=$4 \
      -o "$DIR/${arch}_$1_d$2_window_$5.ptx"
  done
done
# The sm_80 K/V ring ablation beside the default (2 stages): attn-tile's single
# buffers (--stages=1) and three stages, bf16 d128 plain and causal.
for stages in 1 3; do
  for causal in "" "--causal --causal-align=top-left"; do
    "$ATTNGEN" --arch=sm_80 --dtype=bf16 --head-dim=128 $causal --stages=$stages \
      -o "$DIR/sm_80_bf16_d128${causal:+_causal}_s$stages.ptx"
  done
done
ls "$DIR" | wc -l
