#!/usr/bin/env bash
# Compiles the soft-cap matrix gpu/softcap.sh checks and times: each soft cap
# with the fixed max of attn-bounded-softmax (the default) beside the same
# kernel with the running max (--no-bounded-softmax, _runmax), and the plain
# kernel the bar compares with (soft cap <= 10% over it):
#   sm_90a bf16 d128 caps 2, 30, 50 (50: the largest the fixed max takes),
#   d128 causal 30, d128 bottom-right causal 30, d64 30, d256 30; f16 d128 30
#   and bf16 d128 cap 60 (both keep the running max: one kernel each);
#   sm_80 bf16 d128 30 and d64 causal 30.
# Into DIR/softcap.
#   bash gpu/make_softcap_kernels.sh [ATTNGEN] [DIR]
set -euo pipefail
ATTNGEN=${1:-build/bin/attngen}
DIR=${2:-.gpu}
OUTDIR=$DIR/softcap
mkdir -p "$OUTDIR"
rm -f "$OUTDIR"/*.ptx "$OUTDIR"/*.json
# name:flags (sm_90a bf16 unless the flags say otherwise)
pairs=(
  "sm90a_bf16_d128_softcap2:--softcap=2"
  "sm90a_bf16_d128_softcap30:--softcap=30"
  "sm90a_bf16_d128_softcap50:--softcap=50"
  "sm90a_bf16_d128_causal_softcap30:--causal --causal-align=top-left --softcap=30"
  "sm90a_bf16_d128_causal_br_softcap30:--causal --causal-align=bottom-right --softcap=30"
  "sm90a_bf16_d64_softcap30:--head-dim=64 --softcap=30"
  "sm90a_bf16_d256_softcap30:--head-dim=256 --softcap=30"
  "sm80_bf16_d128_softcap30:--arch=sm_80 --softcap=30"
  "sm80_bf16_d64_causal_softcap30:--arch=sm_80 --head-dim=64 --causal --causal-align=top-left --softcap=30"
)
singles=(
  "sm90a_bf16_d128:"
  "sm90a_bf16_d128_causal:--causal --causal-align=top-left"
  "sm90a_bf16_d64:--head-dim=64"
  "sm90a_bf16_d256:--head-dim=256"
  "sm90a_f16_d128_softcap30:--dtype=f16 --softcap=30"
  "sm90a_bf16_d128_softcap60:--softcap=60"
)
for entry in "${pairs[@]}" "${singles[@]}"; do
  IFS=: read -r name flags <<< "$entry"
  # shellcheck disable=SC2086  # flags is a word list
  "$ATTNGEN" --arch=sm_90a $flags -o "$OUTDIR/$name.ptx"
done
for entry in "${pairs[@]}"; do
  IFS=: read -r name flags <<< "$entry"
  # shellcheck disable=SC2086
  "$ATTNGEN" --arch=sm_90a $flags --no-bounded-softmax -o "$OUTDIR/${name}_runmax.ptx"
done
ls "$OUTDIR"/*.ptx | wc -l
