#!/usr/bin/env bash
# Session 23, device call 1: T7 = scalar factors out of products + both operands of a backward's state-reading
# products split (build: LINAC_LINACC=<linacc of this change> LINAC_GPU_OUT=out/gpu-T7 LINAC_GPU_FLAGS=--gpu-io=bf16
# bash bench/gpu/build.sh) against T3 (89282b8's kernels, session 22): compute-sanitizer, gpu-check both modes, the
# three replay seeds in one slice, GDN repeated; T7 vs T3 forward + backward, two rounds alternating.
cd "$(dirname "$0")" && tar xzf bins7.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san1-T7 100 env LINAC_CUDA_VALUE_SPLITS=1 $CS --tool memcheck --print-limit 4 ./T7/gpu-check --no-timing
step check1-T7 50 env LINAC_CUDA_VALUE_SPLITS=1 ./T7/gpu-check --no-timing
step check-T7 50 ./T7/gpu-check --no-timing
step seeds-T7 40 ./seeds.sh T7
step seeds-T3 40 ./seeds.sh T3
EX="gated_deltanet deltanet gla simple_gla rwkv6 hgrn2"
for r in 1 2; do
step bench-T7-$r 60 ./T7/gpu-bench --quick $EX
step bench-T3-$r 60 ./T3/gpu-bench --quick $EX
done
step rep1-T7 60 env LINAC_CUDA_VALUE_SPLITS=1 ./T7/gpu-check --no-timing --repeat 10 --only gated_deltanet
for f in $R/san*.txt $R/check*.txt $R/rep*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; tail -n 2 $f; done
cat $R/seeds-*.txt
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
