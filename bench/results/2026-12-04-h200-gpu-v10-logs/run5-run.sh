#!/usr/bin/env bash
# Device run 5 (session 11): the v10 default build (pattern padding and 2 x 4 warp tiles in fixed-size forwards).
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 420 - t0 + START )); if (( left < 20 )); then echo "$name skipped" >> $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
step check-v10 100 ./v10/gpu-check --no-timing --repeat 2
step check1-v10 100 env LINAC_CUDA_VALUE_SPLITS=1 ./v10/gpu-check --no-timing
step bench-v10 60 ./v10/gpu-bench --quick
step bench-v10-64 40 ./v10/gpu-bench --quick --head-dim 64
step bench-v10-256 80 ./v10/gpu-bench --quick --head-dim 256
step rt 60 ./rt/runtime-gpu-test
step bench-v10-full 120 ./v10/gpu-bench gated_deltanet gla deltanet
