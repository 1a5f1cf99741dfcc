#!/usr/bin/env bash
# Compiles the exp2-emulation matrix gpu/exp2.sh checks and times: sm_90a bf16
# d128, d128 soft cap 2, d64, d64 causal and d64 soft cap 2, each with 0, 1/4,
# 3/8 and 1/2 of the score exponentials on the FMA pipe (--exp2-emulate; 0 is
# the default kernel), 5/8 and 3/4 too for the soft-capped ones (two MUFU ops
# per score), and d64 bottom-right causal at 1/2 (rows that see no key: O = 0,
# LSE = -inf through the software path); for correctness of the other paths
# the same lowering takes, f16 d128 soft cap 2 and sm_80 bf16 d64 at 1/2 (with
# their MUFU-only kernels). Into DIR/exp2.
#   bash gpu/make_exp2_kernels.sh [ATTNGEN] [DIR]
set -euo pipefail
ATTNGEN=${1:-build/bin/attngen}
DIR=${2:-.gpu}
OUTDIR=$DIR/exp2
mkdir -p "$OUTDIR"
rm -f "$OUTDIR"/*.ptx "$OUTDIR"/*.json
# name:flags:fractions
variants=(
  "d128::0 1/4 3/8 1/2"
  "d128_softcap2:--softcap=2:0 1/4 3/8 1/2 5/8 3/4"
  "d64:--head-dim=64:0 1/4 3/8 1/2"
  "d64_causal:--head-dim=64 --causal --causal-align=top-left:0 1/4 3/8 1/2"
  "d64_softcap2:--head-dim=64 --softcap=2:0 1/4 3/8 1/2 5/8 3/4"
  "d64_causal_br:--head-dim=64 --causal --causal-align=bottom-right:1/2"
)
for variant in "${variants[@]}"; do
  IFS=: read -r name flags fractions <<< "$variant"
  for f in $fractions; do
    # The file is named after the kernel (_exp2emu<k>o8 when k > 0).
    eighths=0
    [[ $f == */* ]] && eighths=$(( 8 * ${f%/*} / ${f#*/} ))
    suffix=""
    [ "$eighths" -gt 0 ] && suffix=_exp2emu${eighths}o8
    # shellcheck disable=SC2086  # flags is a word list
    "$ATTNGEN" --arch=sm_90a $flags --exp2-emulate="$f" \
      -o "$OUTDIR/sm90a_bf16_${name}${suffix}.ptx"
  done
done
for f in 0 1/2; do
  suffix=""
  [ "$f" = 1/2 ] && suffix=_exp2emu4o8
  "$ATTNGEN" --arch=sm_90a --dtype=f16 --softcap=2 --exp2-emulate=$f \
    -o "$OUTDIR/sm90a_f16_d128_softcap2${suffix}.ptx"
  "$ATTNGEN" --arch=sm_80 --head-dim=64 --exp2-emulate=$f -o "$OUTDIR/sm80_bf16_d64${suffix}.ptx"
done
ls "$OUTDIR"/*.ptx | wc -l
