#!/usr/bin/env bash
# Session 32, device call 3 (any GPU): N = the default (d0a6983's kernels) against SP = --gpu-solve=product
# (the delta rule's triangular solves as products with the inverse, computed by one warp a solve, on the tensor
# cores), SPC = SP with one inverse a chunk shared by the backward's two solves (kept as every thread's values),
# SPQ = SP with the inverse reading L four entries at a time. N2 = N with the shared-memory placement trying
# three orders (the fewest bytes kept), as all the SP builds have it. Correctness first, then two rounds, then
# ncu per kernel. On an H200 also every example.
cd "$(dirname "$0")" && for t in bins*.tgz; do tar xzf $t; done
R=$OUT/r; mkdir -p $R
START=$(date +%s); BUDGET=${BUDGET:-540}
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
cat $R/gpu.txt
step check-SP 90 ./SP/gpu-check --no-timing
step check-SP-fixed 90 env LINAC_CUDA_VALUE_SPLITS=1 ./SP/gpu-check --no-timing
for r in 1 2; do for v in N N2 SP SPC SPQ; do step dn-$v-$r 30 ./$v/gpu-bench --quick gated_deltanet deltanet; done; done
if grep -q H200 $R/gpu.txt; then
  step bench-N-1 70 ./N/gpu-bench --quick
  step bench-SP-1 70 ./SP/gpu-bench --quick
fi
step check-N2 60 ./N2/gpu-check --no-timing
step check-SPC 60 ./SPC/gpu-check --no-timing --only deltanet
for r in 1 2; do for v in N N2; do step kg-$v-$r 40 ./$v/gpu-bench --quick gla hgrn2 rwkv6; done; done
for v in N N2 SP SPC SPQ; do step ncu-$v 60 ncu --clock-control none --metrics gpu__time_duration.sum -k regex:"deltanet_(forward|backward)_chunk32_k128" -c 12 ./$v/gpu-bench --quick gated_deltanet deltanet; done
if grep -q H200 $R/gpu.txt; then
  step bench-N-2 70 ./N/gpu-bench --quick
  step bench-SP-2 70 ./SP/gpu-bench --quick
  step fla 200 bash -c "cd $(pwd)/../../../.. && python3 bench/fla_side_by_side.py"
fi
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 1 $f; done
for f in $R/dn-*.txt $R/kg-*.txt $R/bench-*.txt; do [ -f $f ] || continue; echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for v in N N2 SP SPC SPQ; do echo "== ncu $v"; grep -E "linac_|duration" $R/ncu-$v.txt | awk '{print $1, $NF}' | paste - - | sort | uniq -c | head -12; done
[ -f $R/fla.txt ] && tail -12 $R/fla.txt
cat $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
