#!/usr/bin/env bash
# Compiles the sm_90a kernels gpu/fa3.sh checks: the default schedule for
# every head dim (causal top-left and bottom-right and not, soft-capped,
# sliding windows (1024, 0) and (1024, 1024) bottom-right, bf16; f16 d128;
# windows (100, 50), (0, 0), (-1, 64) f16 and a soft-capped causal window at
# d128) into DIR/fa3, and the d128 ablations (each FlashAttention-3 technique
# switched off, also on a window; the register epilogue too) and the d64 and
# d256 ones of pingpong and the epilogue into DIR/ablation.
#   bash gpu/make_fa3_kernels.sh [ATTNGEN] [DIR]
set -euo pipefail
ATTNGEN=${1:-build/bin/attngen}
DIR=${2:-.gpu}
mkdir -p "$DIR/fa3" "$DIR/ablation"
for d in 64 128 256; do
  for causal in "" "--causal --causal-align=top-left"; do
    "$ATTNGEN" --head-dim=$d $causal -o "$DIR/fa3/sm90a_bf16_d${d}${causal:+_causal}.ptx"
  done
  "$ATTNGEN" --head-dim=$d --causal --causal-align=bottom-right \
    -o "$DIR/fa3/sm90a_bf16_d${d}_causal_br.ptx"
  "$ATTNGEN" --head-dim=$d --softcap=2 -o "$DIR/fa3/sm90a_bf16_d${d}_softcap2.ptx"
  # The other grid beside the default at every head dim (attn-persistent is
  # on by default for unmasked d64 and d128 and for causal masks): _pers or
  # _nopers, as the kernel's name says. It matters most at 1k.
  for causal in "" "--causal --causal-align=top-left"; do
    for persistent in true false; do
      out="$DIR/fa3/tmp.ptx"
      "$ATTNGEN" --head-dim=$d $causal --persistent=$persistent -o "$out"
      kernel=$(sed -n 's/.*"kernel": "attn_fwd_\(.*\)".*/\1/p' "${out%.ptx}.json")
      case $kernel in
        *_pers | *_nopers)
          mv "$out" "$DIR/fa3/$kernel.ptx"; mv "${out%.ptx}.json" "$DIR/fa3/$kernel.json" ;;
      esac
    done
  done
  rm -f "$DIR/fa3/tmp.ptx" "$DIR/fa3/tmp.json"
  for window in 1024,0 1024,1024; do
    "$ATTNGEN" --head-dim=$d --window=$window --causal-align=bottom-right \
      -o "$DIR/fa3/sm90a_bf16_d${d}_window_l${window%,*}_r${window#*,}_br.ptx"
  done
done
"$ATTNGEN" --head-dim=128 --dtype=f16 -o "$DIR/fa3/sm90a_f16_d128.ptx"
"$ATTNGEN" --head-dim=128 --window=100,50 -o "$DIR/fa3/sm90a_bf16_d128_window_l100_r50.ptx"
"$ATTNGEN" --head-dim=128 --window=0,0 -o "$DIR/fa3/sm90a_bf16_d128_window_l0_r0.ptx"
"$ATTNGEN" --head-dim=128 --dtype=f16 --window=-1,64 --causal-align=bottom-right \
  -o "$DIR/fa3/sm90a_f16_d128_window_r64_br.ptx"
"$ATTNGEN" --head-dim=128 --window=256,0 --softcap=2 --causal-align=bottom-right \
  -o "$DIR/fa3/sm90a_bf16_d128_window_l256_r0_br_softcap2.ptx"
for ablation in no-warp-specialize no-intra-wg-overlap stages3; do
  flag=--$ablation
  [ $ablation = stages3 ] && flag=--stages=3
  "$ATTNGEN" --window=1024,0 --causal-align=bottom-right $flag \
    -o "$DIR/ablation/d128_window_l1024_r0_br_${ablation//-/_}.ptx"
done
for causal in "" "--causal --causal-align=top-left"; do
  c=${causal:+_causal}
  "$ATTNGEN" $causal --no-warp-specialize -o "$DIR/ablation/d128${c}_no_warp_specialize.ptx"
  "$ATTNGEN" $causal --no-intra-wg-overlap -o "$DIR/ablation/d128${c}_no_intra_wg_overlap.ptx"
  "$ATTNGEN" $causal --no-pingpong -o "$DIR/ablation/d128${c}_no_pingpong.ptx"
  "$ATTNGEN" $causal --no-pingpong --no-intra-wg-overlap -o "$DIR/ablation/d128${c}_ws_only.ptx"
  "$ATTNGEN" $causal --stages=3 -o "$DIR/ablation/d128${c}_stages3.ptx"
  "$ATTNGEN" $causal --tma-store=false -o "$DIR/ablation/d128${c}_no_tma_store.ptx"
  # The grid that is not the default: one CTA per tile (both are persistent).
  "$ATTNGEN" $causal --persistent=false -o "$DIR/ablation/d128${c}_no_persistent.ptx"
done
# Pingpong and the TMA epilogue at the other head dims (d256 has no room
# for the TMA one).
for d in 64 256; do
  for causal in "" "--causal --causal-align=top-left"; do
    c=${causal:+_causal}
    "$ATTNGEN" --head-dim=$d $causal --no-pingpong -o "$DIR/ablation/d${d}${c}_no_pingpong.ptx"
  done
done
"$ATTNGEN" --head-dim=64 --tma-store=false -o "$DIR/ablation/d64_no_tma_store.ptx"
"$ATTNGEN" --head-dim=64 --causal --causal-align=top-left --tma-store=false -o "$DIR/ablation/d64_causal_no_tma_store.ptx"
ls "$DIR"/fa3/*.ptx "$DIR"/ablation/*.ptx | wc -l
