#!/usr/bin/env bash
# Session 28, device call 1: D = session 27's default build (0312f24, --gpu-io=bf16; baseline);
# N = this session's default: the pairs kernel runs after the in-order backward and adds its per-token gradients
# by exclusive stores (plain read, add, write), ex2.approx exponentials in the pairs kernel;
# NA = N with those adds atomic (an env switch in a /tmp copy of linacc, not committed).
# Checks (N in both slice modes), two timing rounds, ncu of GLA's backward kernels; ordered by priority.
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
EX="gla hgrn2 rwkv6"
step check-N 60 ./N/gpu-check --no-timing
step check-N-fixed 60 env LINAC_CUDA_VALUE_SPLITS=1 ./N/gpu-check --no-timing
step bench-D-1 60 ./D/gpu-bench --quick
step bench-N-1 60 ./N/gpu-bench --quick
step bench-NA-1 40 ./NA/gpu-bench --quick $EX
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
for v in D N NA; do step ncu-$v 60 $NCU -k regex:"backward_chunk16" -c 6 ./$v/gpu-bench --quick gla; done
step bench-N-2 60 ./N/gpu-bench --quick
step bench-D-2 60 ./D/gpu-bench --quick
step bench-NA-2 40 ./NA/gpu-bench --quick $EX
step sass 30 bash -c "cuobjdump -sass -fun linac_gla_backward_chunk16_pairs_k128_v128 N/gla.cubin || ls /usr/local/cuda/bin"
step ncu-pairs 90 ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis --section InstructionStats --section ComputeWorkloadAnalysis -k regex:"backward_chunk16_pairs" -c 1 ./N/gpu-bench --quick gla
step check-NA 60 ./NA/gpu-check --no-timing
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-[DN]*.txt; do echo "== $(basename $f)"; grep -E "linac_|gpu__time_duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF)}' | head -6; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
