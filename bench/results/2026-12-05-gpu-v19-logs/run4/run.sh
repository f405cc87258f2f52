#!/usr/bin/env bash
# Session 20, device call 4: Y8B (f821754, ldmatrix) against Z8B (Y8B + the products' next k step loaded before
# this step's mma) and P8B (Z8B + per-key pair products split over the parts that minimize rounds x channels).
# Build: LINAC_GPU_OUT=out/gpu-{Z8B,P8B} LINAC_GPU_FLAGS=--gpu-io=bf16 bash bench/gpu/build.sh; tar czf bins10.tgz Y8B Z8B P8B.
cd "$(dirname "$0")" && tar xzf bins10.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san1-P8B 60 env LINAC_CUDA_VALUE_SPLITS=1 $CS --tool memcheck --print-limit 4 ./P8B/gpu-check --no-timing
step check1-P8B 40 env LINAC_CUDA_VALUE_SPLITS=1 ./P8B/gpu-check --no-timing
step check-P8B 40 ./P8B/gpu-check --no-timing
EX="gla rwkv6 hgrn2 deltanet gated_deltanet simple_gla"
for r in 1 2; do for b in Y8B Z8B P8B; do step bench-$b-$r 60 ./$b/gpu-bench --quick $EX; done; done
for f in $R/san*.txt $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
