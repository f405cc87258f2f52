#!/usr/bin/env bash
# Session 19, device call 3: T8B (R8B with the prefetch guard fixed) against G8B.
#   G8B --gpu-io=bf16 --gpu-fragments=8 --gpu-fragments-backward (binaries of d06bf27/f223adf)
#   T8B G8B + --gpu-fragments-prefetch at the session-19 fix (staging of an iteration that does not run reads nothing)
# Build: LINAC_GPU_OUT=out/gpu-T8B LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-fragments=8 --gpu-fragments-backward
#   --gpu-fragments-prefetch" bash bench/gpu/build.sh; gpu-check and gpu-bench stripped; tar czf bins6.tgz G8B T8B.
cd "$(dirname "$0")" && tar xzf bins6.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san1-T8B 60 env LINAC_CUDA_VALUE_SPLITS=1 $CS --tool memcheck --print-limit 4 ./T8B/gpu-check --no-timing
step san-T8B 60 $CS --tool memcheck --print-limit 4 ./T8B/gpu-check --no-timing
step check1-T8B 60 env LINAC_CUDA_VALUE_SPLITS=1 ./T8B/gpu-check --no-timing
step check-T8B 90 ./T8B/gpu-check --no-timing
for r in 1 2; do for b in G8B T8B; do step bench-$b-$r 70 ./$b/gpu-bench --quick; done; done
step ncu-T8B-gdn 60 ncu --clock-control none --section SpeedOfLight -k regex:"linac_gated_deltanet_.*k128_v128" -s 4 -c 2 ./T8B/gpu-bench --quick gated_deltanet
for f in $R/san*.txt $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | head -10; done
grep -E "Duration|linac_" $R/ncu-T8B-gdn.txt | head -12
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
