#!/usr/bin/env bash
# Device run 8 (session 11): f16 I/O (--gpu-io=f16): the GPU check both ways and the quick benchmark.
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 240 - t0 + START )); if (( left < 20 )); then echo "$name skipped" >> $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
step check-f16 100 ./f16/gpu-check --no-timing --repeat 2
step check1-f16 100 env LINAC_CUDA_VALUE_SPLITS=1 ./f16/gpu-check --no-timing
step bench-f16 60 ./f16/gpu-bench --quick
