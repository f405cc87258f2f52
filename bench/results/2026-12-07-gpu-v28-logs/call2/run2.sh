#!/usr/bin/env bash
# Session 29, device call 2: a second round of A (6991daa) against Z (d695727, ex2.approx.ftz) and ncu of RWKV-6's
# and GLA's kernels for both (call 1 had one A round; its forwards looked slower with ftz).
cd "$(dirname "$0")" && tar xzf bins1.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s); BUDGET=${BUDGET:-200}
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name --format=csv > $R/gpu.txt 2>&1
step bench-Z-3 60 ./Z/gpu-bench --quick
step bench-A-2 60 ./A/gpu-bench --quick
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
for v in A Z; do step ncu-rwkv6-$v 30 $NCU -k regex:"rwkv6_(backward|forward)_chunk16" -c 8 ./$v/gpu-bench --quick rwkv6; done
for v in A Z; do step ncu-gdn-$v 30 $NCU -k regex:"gated_deltanet_(backward|forward)_chunk32" -c 8 ./$v/gpu-bench --quick gated_deltanet; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "^\s+linac_|gpu__time_duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF)}'; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
