#!/usr/bin/env bash
# Session 12 device run 2: dropBarriers knows mma.sync touches no memory (m); tile ops ordered by level (sa).
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 440 - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
step check-sa 100 ./sa/gpu-check --no-timing
step check1-sa 100 env LINAC_CUDA_VALUE_SPLITS=1 ./sa/gpu-check --no-timing
step bench-m 40 ./m/gpu-bench --quick
step bench-sa 40 ./sa/gpu-bench --quick
step check-m 100 ./m/gpu-check --no-timing
step bench-sa-64 40 ./sa/gpu-bench --quick --head-dim 64
step bench-m-64 40 ./m/gpu-bench --quick --head-dim 64
for f in bench-m bench-sa bench-m-64 bench-sa-64; do echo "== $f"; grep -E "^\S+ +[0-9]" $R/$f.txt | head -20; done
for f in check-sa check1-sa check-m; do echo "== $f"; grep -E "FAIL|mismatch|error" $R/$f.txt | head -5; tail -2 $R/$f.txt; done
