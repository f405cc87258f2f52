#!/usr/bin/env bash
# Session 12 device run 1: the chunk-parallel split (--gpu-split) re-timed with the v10 generator, three phase shapes.
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 430 - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
step bench-v10 60 ./v10/gpu-bench --quick
step bench-s 80 ./s/gpu-bench --quick
step bench-q 80 ./q/gpu-bench --quick
step bench-h 80 ./h/gpu-bench --quick
step check-s 100 ./s/gpu-check --no-timing
for f in bench-v10 bench-s bench-q bench-h; do echo "== $f"; grep -E "^\S+ +[0-9]" $R/$f.txt | head -20; done
tail -5 $R/check-s.txt
