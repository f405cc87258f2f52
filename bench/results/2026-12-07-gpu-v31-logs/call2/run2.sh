#!/usr/bin/env bash
# Session 32, device call 2 (any GPU): N = the default (d0a6983's kernels), P = --gpu-l2-prefetch (every
# unstaged loop load of the next chunk prefetched to L2), PS = the same for the boundary state only (loads of
# at least 16384 elements). On an H200 first the missing H200 numbers of N (check, all examples, fla).
# NS = N with every triangular solve replaced by its right-hand side (EXP_NO_SOLVE, timing only: wrong values).
cd "$(dirname "$0")" && for t in bins*.tgz; do tar xzf $t; done
R=$OUT/r; mkdir -p $R
START=$(date +%s); BUDGET=${BUDGET:-540}
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
cat $R/gpu.txt
if grep -q H200 $R/gpu.txt; then
  step check-N 60 ./N/gpu-check --no-timing
  step bench-N-1 70 ./N/gpu-bench --quick
  step bench-N-2 70 ./N/gpu-bench --quick
fi
step check-P 60 ./P/gpu-check --no-timing
for r in 1 2; do for v in N P PS NS; do step dn-$v-$r 30 ./$v/gpu-bench --quick gated_deltanet deltanet; done; done
for v in N P PS NS; do step ncu-$v 60 ncu --clock-control none --metrics gpu__time_duration.sum -k regex:"backward_chunk32_k128" -c 4 ./$v/gpu-bench --quick gated_deltanet; done
if grep -q H200 $R/gpu.txt; then
  step fla 230 bash -c "cd $(pwd)/../../../.. && python3 bench/fla_side_by_side.py"
fi
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 1 $f; done
for f in $R/bench-N-*.txt $R/dn-*.txt; do [ -f $f ] || continue; echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for v in N P PS NS; do echo "== ncu $v"; grep -E "backward|duration" $R/ncu-$v.txt | awk '{print $1, $NF}' | head -12; done
[ -f $R/fla.txt ] && tail -12 $R/fla.txt
cat $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
