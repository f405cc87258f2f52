#!/usr/bin/env bash
# Session 20, device call 5: E8B (Y8B + the fragment kernels' exponentials as exp2(x log2 e): ex2.approx and a multiply)
# Build: LINAC_GPU_OUT=out/gpu-E8B LINAC_GPU_FLAGS=--gpu-io=bf16 bash bench/gpu/build.sh; tar czf bins11.tgz Y8B E8B.
cd "$(dirname "$0")" && tar xzf bins11.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san1-E8B 60 env LINAC_CUDA_VALUE_SPLITS=1 $CS --tool memcheck --print-limit 4 ./E8B/gpu-check --no-timing
step check1-E8B 40 env LINAC_CUDA_VALUE_SPLITS=1 ./E8B/gpu-check --no-timing
step check-E8B 40 ./E8B/gpu-check --no-timing
EX="gla rwkv6 hgrn2 deltanet gated_deltanet simple_gla"
for r in 1 2; do for b in Y8B E8B; do step bench-$b-$r 60 ./$b/gpu-bench --quick $EX; done; done
for f in $R/san*.txt $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
