#!/usr/bin/env bash
# Session 15 device run (combined, for a scarce device): v11 (base) against per-token gradients stored once (O),
# O with latency placement + unrolled global k loops (LUO), O with the boundary-state kernel at 4 value slices
# (B4), and the split at chunk 64 with blocked per-key pairs (S64F). Build commands: run1-run.sh and run2-run.sh.
# Staged as out/dev/s15c/{base,O,LUO,B4,S64F}/{gpu-check,gpu-bench} (stripped, bins.tgz), carry ["out/dev/s15c"].
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 550 - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
step check-O 60 ./O/gpu-check --no-timing
step check1-O 60 env LINAC_CUDA_VALUE_SPLITS=1 ./O/gpu-check --no-timing
step check1-LUO 60 env LINAC_CUDA_VALUE_SPLITS=1 ./LUO/gpu-check --no-timing
step check1-B4 60 env LINAC_CUDA_VALUE_SPLITS=1 ./B4/gpu-check --no-timing
for r in 1 2; do for b in base O LUO B4; do step bench-$b-$r 70 ./$b/gpu-bench --quick; done; done
step check-S64F 60 ./S64F/gpu-check --no-timing
step bench-S64F 70 ./S64F/gpu-bench --quick gated_deltanet gla simple_gla
k=gla_backward_chunk16_k128
step sass-O-$k 90 sh -c "ncu --clock-control none --section SourceCounters --section WarpStateStats -k regex:$k -c 1 --page source --print-source sass --csv ./O/gpu-bench --quick gla > $R/sass-O-$k.csv; gzip -9 $R/sass-O-$k.csv"
for f in bench-base-1 bench-O-1 bench-LUO-1 bench-B4-1 bench-base-2 bench-O-2 bench-LUO-2 bench-B4-2 bench-S64F; do echo "== $f"; grep -E "^\S+ +[0-9]" $R/$f.txt | head -10; done
for f in check-O check1-O check1-LUO check1-B4 check-S64F; do echo "== $f"; grep -E "FAIL|mismatch|error" $R/$f.txt | head -5; tail -1 $R/$f.txt; done
cat $R/steps.txt
