#!/usr/bin/env bash
# Session 21, device call 1: T1 (fp32 boundary states again; the training pair: the forward saves each chunk's
# initial state, the backward given them skips its recomputing pass) against Y8B (session 20's build: bf16
# boundaries, the plain pair). T1 timed both ways in the same call: the training pair (default) and the plain
# pair (LINAC_BENCH_RECOMPUTE=1: the same kernels, the backward recomputing).
# Build: LINAC_GPU_OUT=out/gpu-T1 LINAC_GPU_FLAGS=--gpu-io=bf16 bash bench/gpu/build.sh; tar czf bins.tgz Y8B T1.
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-560} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san1-T1 90 env LINAC_CUDA_VALUE_SPLITS=1 $CS --tool memcheck --print-limit 4 ./T1/gpu-check --no-timing
step check1-T1 50 env LINAC_CUDA_VALUE_SPLITS=1 ./T1/gpu-check --no-timing
step check-T1 50 ./T1/gpu-check --no-timing
EX="gated_deltanet deltanet gla simple_gla rwkv6 hgrn2"
step bench-T1-1 70 ./T1/gpu-bench --quick $EX
step bench-T1plain-1 70 env LINAC_BENCH_RECOMPUTE=1 ./T1/gpu-bench --quick $EX
step bench-Y8B-1 70 ./Y8B/gpu-bench --quick $EX
step bench-T1-2 40 ./T1/gpu-bench --quick gated_deltanet deltanet gla
step bench-T1plain-2 40 env LINAC_BENCH_RECOMPUTE=1 ./T1/gpu-bench --quick gated_deltanet deltanet gla
for f in $R/san*.txt $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
