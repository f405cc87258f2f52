#!/usr/bin/env bash
# Device run 1 (session 11): product k steps unrolled (--gpu-k-unroll 4, 16) against v9.
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
pack() { tar czf $OUT/results.tgz -C $OUT r; }
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 400 - t0 + START )); if (( left < 20 )); then echo "$name skipped" >> $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; pack; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
step check-u4 100 ./u4/gpu-check --no-timing
step check-u16 100 ./u16/gpu-check --no-timing
step bench-v9 60 ./v9/gpu-bench --quick
step bench-u4 60 ./u4/gpu-bench --quick
step bench-u16 60 ./u16/gpu-bench --quick
step bench-u4-64 40 ./u4/gpu-bench --quick --head-dim 64
step bench-v9-64 40 ./v9/gpu-bench --quick --head-dim 64
