#!/usr/bin/env bash
# Session 31, device call 4: only on an H200 (else it stops at once): N (the new default) and D (c31219b's
# default), alternating rounds, a check, then fla's Triton kernels with what budget is left.
cd "$(dirname "$0")" && for t in bins*.tgz; do tar xzf $t; done
R=$OUT/r; mkdir -p $R
START=$(date +%s); BUDGET=${BUDGET:-300}
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
cat $R/gpu.txt
if ! grep -q H200 $R/gpu.txt; then echo "not an H200: stopping"; exit 0; fi
step check-N 60 ./N/gpu-check --no-timing
step bench-N-1 70 ./N/gpu-bench --quick
step bench-D-1 70 ./D/gpu-bench --quick
step bench-N-2 70 ./N/gpu-bench --quick
step fla 200 bash -c "cd $(pwd)/../../.. && python3 bench/fla_side_by_side.py"
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
tail -12 $R/fla.txt
cat $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
