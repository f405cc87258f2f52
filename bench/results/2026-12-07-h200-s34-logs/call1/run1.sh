#!/usr/bin/env bash
# Session 34, device call 1 (any GPU): runtime-gpu-test's GpuDataParallel (first GPU run, #7) and the rest of
# runtime-gpu-test; gpu-check of the default kernels (F = HEAD's default, built at f150ad8; compiler code
# unchanged since); every example timed twice (--quick) and once at all shapes; ncu of the delta rule kernels;
# fla side by side (delta rule ops) with what is left.
cd "$(dirname "$0")" && for t in bins*.tgz; do tar xzf $t; done
R=$OUT/r; mkdir -p $R
START=$(date +%s); BUDGET=${BUDGET:-570}
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( BUDGET - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
cat $R/gpu.txt
NCCL=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null)
step dp 200 env LD_LIBRARY_PATH=$NCCL ./runtime-gpu-test --gtest_filter='GpuDataParallel.*'
step bench-1 50 ./gpu-F/gpu-bench --quick
if grep -q H200 $R/gpu.txt; then
  # First H200 since session 20: correctness there, then fla's delta rule ops beside ours, every shape.
  step check-F 90 ./gpu-F/gpu-check --no-timing
  step fla 150 bash -c "cd $(pwd)/../../../.. && python3 bench/fla_side_by_side.py chunk_gated_delta_rule chunk_delta_rule"
  step bench-2 50 ./gpu-F/gpu-bench --quick
  step bench-all 100 ./gpu-F/gpu-bench
else
  step rt 130 env LD_LIBRARY_PATH=$NCCL ./runtime-gpu-test --gtest_filter='-GpuDataParallel.*'
  step ncu-dn 60 ncu --clock-control none --metrics gpu__time_duration.sum -k regex:"deltanet_(forward|backward)_chunk32_k128" -c 16 ./gpu-F/gpu-bench --quick gated_deltanet deltanet
  step bench-2 50 ./gpu-F/gpu-bench --quick
fi
echo "== dp"; grep -E "^\[ +(OK|FAILED|PASSED)|Failure|step +[0-9]:|error" $R/dp.txt | head -60
echo "== rt"; grep -E "^\[ +(OK|FAILED|PASSED) |^\[==|FAIL|rror" $R/rt.txt | tail -30
echo "== check"; grep -E "FAIL|mismatch|rror" $R/check-F.txt | head -8; tail -n 1 $R/check-F.txt
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $2, $3, $4, $5, $10, $11}'; done
echo "== ncu"; grep -E "linac_|duration" $R/ncu-dn.txt | awk '{print $1, $NF}' | paste - - | sort | uniq -c | head -12
[ -f $R/fla.txt ] && tail -14 $R/fla.txt
cat $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
