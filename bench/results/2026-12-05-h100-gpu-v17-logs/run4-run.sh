#!/usr/bin/env bash
# Session 18 device run 3: P8B (G8B + --gpu-fragments-prefetch) checked, then timed against G8B (alternating).
cd "$(dirname "$0")" && tar xzf bins4.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
step check1-Q8B 60 env LINAC_CUDA_VALUE_SPLITS=1 ./Q8B/gpu-check --no-timing
for r in 1 2; do for b in G8B Q8B; do step bench-$b-$r 70 ./$b/gpu-bench --quick; done; done
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -5; tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | head -10; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r4.tgz r && rm -rf r
