#!/usr/bin/env bash
# Session 26, device call 2: FX = P1 (--gpu-pair-kernel, this session's linacc) with fast exponentials
# (ex2.approx) in the pairs kernels too (an experiment switch, LINAC_EXP_PAIRSFAST, in a copy of
# TileToFragments.cpp: the per-key backwards keep math.exp otherwise). ptxas, GLA pairs kernel K = V = 128:
# 6736 -> 3646 PTX lines, spills 224 -> 204 bytes. Checks, timing against P1 (two rounds), per-kernel durations.
cd "$(dirname "$0")" && tar xzf bins2.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
EX="gla hgrn2 rwkv6"
step bench-P1-1 30 ./P1/gpu-bench --quick $EX
step bench-FX-1 30 ./FX/gpu-bench --quick $EX
step check-FX 60 ./FX/gpu-check --no-timing
step check-FX-fixed 60 env LINAC_CUDA_VALUE_SPLITS=1 ./FX/gpu-check --no-timing
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
step ncu-FX 60 $NCU -k regex:"backward_chunk16" -c 6 ./FX/gpu-bench --quick gla hgrn2 rwkv6
step bench-P1-2 30 ./P1/gpu-bench --quick $EX
step bench-FX-2 30 ./FX/gpu-bench --quick $EX
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 2 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "linac_|gpu__time_duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF)}' | head -16; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
