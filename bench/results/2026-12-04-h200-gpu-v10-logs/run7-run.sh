#!/usr/bin/env bash
# Device run 7 (session 11): pattern padding weighted by operand traffic, in every fixed-size kernel (pa) against v10.
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 300 - t0 + START )); if (( left < 20 )); then echo "$name skipped" >> $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
step check-pa 100 ./pa/gpu-check --no-timing
step check1-pa 100 env LINAC_CUDA_VALUE_SPLITS=1 ./pa/gpu-check --no-timing
step bench-pa 60 ./pa/gpu-bench --quick
step bench-v10 60 ./v10/gpu-bench --quick
step bench-pa-64 40 ./pa/gpu-bench --quick --head-dim 64
