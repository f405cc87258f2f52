#!/usr/bin/env bash
# Session 27, device call 1: the per-key pair group in one pass (linac-tile-to-fragments lowerKeyPairGroup).
# P1 = v25's default kernels for the per-key examples (out/gpu-P1, PTX = HEAD 01eed25's default for GLA, HGRN-2,
# RWKV-6); G1 = this change, default options (--gpu-io=bf16); G2 = G1 + --gpu-pair-blocks-per-sm=2;
# G3 = G1 + --gpu-pair-block-size=512; G4 = G1 + --gpu-pair-block-size=128 --gpu-pair-blocks-per-sm=4.
cd "$(dirname "$0")" && tar xzf bins1.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
EX="gla hgrn2 rwkv6"
step check-G1 60 ./G1/gpu-check --no-timing
step check-G1-fixed 60 env LINAC_CUDA_VALUE_SPLITS=1 ./G1/gpu-check --no-timing
for v in P1 G1 G2 G3 G4; do step bench-$v-1 40 ./$v/gpu-bench --quick $EX; done
step sanitize-G1 120 compute-sanitizer ./G1/gpu-check --no-timing --only gla
for v in G2 G3 G4; do step check-$v 60 ./$v/gpu-check --no-timing --only " "; done
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
for v in P1 G1 G3; do step ncu-$v 60 $NCU -k regex:"backward_chunk16" -c 6 ./$v/gpu-bench --quick gla; done
for v in P1 G1 G2 G3 G4; do step bench-$v-2 40 ./$v/gpu-bench --quick $EX; done
for f in $R/check*.txt $R/sanitize*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 2 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "linac_|gpu__time_duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF)}' | head -16; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
