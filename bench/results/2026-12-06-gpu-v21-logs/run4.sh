#!/usr/bin/env bash
# Session 22, device call 1: T3 = the backward's split state operands (the state's low part as a second bf16 copy,
# one more mma per state-reading product) against T2 = the same compiler with the split off (= 06772b4's kernels):
# compute-sanitizer, gpu-check both modes and GDN repeated, runtime-gpu-test; T3 vs T2 fwd+bwd, two rounds.
# Build: LINAC_GPU_OUT=out/gpu-T3 LINAC_GPU_FLAGS=--gpu-io=bf16 bash bench/gpu/build.sh (T2: the same with the
# experiment's LINAC_SPLIT_OFF=1); ninja -C build runtime-gpu-test; tar czf bins4.tgz T3 T2 rt.
cd "$(dirname "$0")" && tar xzf bins4.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san1-T3 100 env LINAC_CUDA_VALUE_SPLITS=1 $CS --tool memcheck --print-limit 4 ./T3/gpu-check --no-timing
step check1-T3 50 env LINAC_CUDA_VALUE_SPLITS=1 ./T3/gpu-check --no-timing
step check-T3 50 ./T3/gpu-check --no-timing
step rt 90 ./rt/runtime-gpu-test
EX="gated_deltanet deltanet gla simple_gla rwkv6 hgrn2"
for r in 1 2; do
step bench-T3-$r 60 ./T3/gpu-bench --quick $EX
step bench-T2-$r 60 ./T2/gpu-bench --quick $EX
done
step rep1-T3 60 env LINAC_CUDA_VALUE_SPLITS=1 ./T3/gpu-check --no-timing --repeat 10 --only gated_deltanet
for f in $R/san*.txt $R/check*.txt $R/rep*.txt $R/rt.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; tail -n 2 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
