#!/usr/bin/env bash
# Session 33, device call 2 (an H200 only: on another GPU it stops at once): F = the default at f150ad8,
# every example two rounds, and fla side by side (bench/fla_side_by_side.py) in the same call.
cd "$(dirname "$0")" && for t in bins*.tgz; do tar xzf $t; done
R=$OUT/r; mkdir -p $R
START=$(date +%s); BUDGET=${BUDGET:-560}
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-560} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
cat $R/gpu.txt
if grep -q H200 $R/gpu.txt; then
  step check-F 90 ./F/gpu-check --no-timing
  step bench-F-1 90 ./F/gpu-bench --quick
  step fla 240 bash -c "cd $(pwd)/../../../.. && python3 bench/fla_side_by_side.py"
  step bench-F-2 90 ./F/gpu-bench --quick
fi
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 1 $f; done
for f in $R/bench-*.txt; do [ -f $f ] || continue; echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $2, $3, $4, $5}'; done
[ -f $R/fla.txt ] && tail -20 $R/fla.txt
cat $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
