#!/usr/bin/env bash
# Session 33, device call 1 (any GPU): N = --gpu-product-solves=none (session 32's default kernels) against
# F = the new default (--gpu-product-solves=auto: product solves in the forwards, substitutions in the
# backwards). Correctness of F first (three value-slice modes), then three rounds of the delta rule examples,
# ncu of the delta rule forwards, every example once each; on an H200 also fla side by side.
cd "$(dirname "$0")" && for t in bins*.tgz; do tar xzf $t; done
R=$OUT/r; mkdir -p $R
START=$(date +%s); BUDGET=${BUDGET:-560}
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-560} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
cat $R/gpu.txt
step check-F 90 ./F/gpu-check --no-timing
step check-F-fixed 90 env LINAC_CUDA_VALUE_SPLITS=1 ./F/gpu-check --no-timing
step check-F-reverse 90 env LINAC_CUDA_EMU_ORDER=reverse ./F/gpu-check --no-timing
for r in 1 2 3; do for v in N F; do step dn-$v-$r 30 ./$v/gpu-bench --quick gated_deltanet deltanet; done; done
for v in N F; do step ncu-gdn-$v 60 ncu --clock-control none --metrics gpu__time_duration.sum -k regex:"gated_deltanet_(forward|backward)_chunk32_k128" -c 8 ./$v/gpu-bench --quick gated_deltanet; done
for v in N F; do step ncu-dn-$v 60 ncu --clock-control none --metrics gpu__time_duration.sum -k regex:"_deltanet_(forward|backward)_chunk32_k128" -c 8 ./$v/gpu-bench --quick deltanet; done
step bench-F-1 90 ./F/gpu-bench --quick
step bench-N-1 90 ./N/gpu-bench --quick
if grep -q H200 $R/gpu.txt; then
  step fla 220 bash -c "cd $(pwd)/../../../.. && python3 bench/fla_side_by_side.py"
  step bench-F-2 90 ./F/gpu-bench --quick
fi
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 1 $f; done
for f in $R/dn-*.txt $R/bench-*.txt; do [ -f $f ] || continue; echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $2, $3, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "linac_|duration" $f | awk '{print $1, $NF}' | paste - - | sort | uniq -c | head -12; done
[ -f $R/fla.txt ] && tail -14 $R/fla.txt
cat $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
