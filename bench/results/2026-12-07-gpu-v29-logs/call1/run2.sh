#!/usr/bin/env bash
# Session 30, device call 2: A = the committed default (6503ec0's kernels, --gpu-io=bf16; baseline); R2 / R4 = A
# with --gpu-boundary-every=2 / 4 (the in-order kernels keep every 2nd / 4th chunk's initial state; the backward
# rebuilds the others with the forward's state recurrence). Alternating bench rounds, ncu per kernel, checks.
cd "$(dirname "$0")" && for t in bins*.tgz; do tar xzf $t; done
R=$OUT/r; mkdir -p $R
START=$(date +%s); BUDGET=${BUDGET:-360}
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
step check-R2 60 ./R2/gpu-check --no-timing
step bench-A-1 70 ./A/gpu-bench --quick
step bench-R2-1 70 ./R2/gpu-bench --quick
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
for v in A R2; do step ncu-gla-$v 60 $NCU -k regex:"gla_(backward|forward)_chunk16" -c 8 ./$v/gpu-bench --quick gla; done
step bench-R2-2 70 ./R2/gpu-bench --quick
step bench-A-2 70 ./A/gpu-bench --quick
for v in A R2; do step ncu-gdn-$v 60 $NCU -k regex:"gated_deltanet_(backward|forward)" -c 8 ./$v/gpu-bench --quick gated_deltanet; done
step bench-R4-1 70 ./R4/gpu-bench --quick
step check-R2-fixed 60 env LINAC_CUDA_VALUE_SPLITS=1 ./R2/gpu-check --no-timing
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "linac_|gpu__time_duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF)}' | head -12; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
