#!/usr/bin/env bash
# Session 12 device run 3: the default build with tile ops ordered by level where the slots allow (fit).
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 450 - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
step check-fit 100 ./fit/gpu-check --no-timing --repeat 2
step check1-fit 100 env LINAC_CUDA_VALUE_SPLITS=1 ./fit/gpu-check --no-timing
step bench-fit 90 ./fit/gpu-bench --quick
step bench-sa-gdn 30 ./sa/gpu-bench --quick gated_deltanet
step bench-fit-64 60 ./fit/gpu-bench --quick --head-dim 64
step bench-fit-256 100 ./fit/gpu-bench --quick --head-dim 256
for f in bench-fit bench-sa-gdn bench-fit-64 bench-fit-256; do echo "== $f"; grep -E "^\S+ +[0-9]" $R/$f.txt | head -20; done
for f in check-fit check1-fit; do echo "== $f"; grep -E "FAIL|mismatch|error" $R/$f.txt | head -5; tail -1 $R/$f.txt; done
