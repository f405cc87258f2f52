#!/usr/bin/env bash
# Session 31, device call 3: N = the new default (ftz exponentials but in the delta backwards; DeltaNet's solves
# saved and every second state kept; HGRN's backward and training pair at chunk 16), D = c31219b's default
# (baseline). Alternating bench rounds, checks, ncu per kernel; then fla's Triton kernels (third_party/fla).
cd "$(dirname "$0")" && for t in bins*.tgz; do tar xzf $t; done
R=$OUT/r; mkdir -p $R
START=$(date +%s); BUDGET=${BUDGET:-420}
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
step check-N 60 ./N/gpu-check --no-timing
step bench-N-1 70 ./N/gpu-bench --quick
step bench-D-1 70 ./D/gpu-bench --quick
step bench-N-2 70 ./N/gpu-bench --quick
step bench-D-2 70 ./D/gpu-bench --quick
step check-N-fixed 60 env LINAC_CUDA_VALUE_SPLITS=1 ./N/gpu-check --no-timing
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
for v in N D; do step ncu-dn-$v 40 $NCU -k regex:"linac_deltanet_(backward|forward)" -c 8 ./$v/gpu-bench --quick deltanet; done
step fla 200 bash -c "cd $(pwd)/../../.. && python3 bench/fla_side_by_side.py"
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "linac_|gpu__time_duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF)}' | head -12; done
cat $R/fla.txt | tail -12
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
