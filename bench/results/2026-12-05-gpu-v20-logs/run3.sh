#!/usr/bin/env bash
# Session 21, device call 2 (staged as run3 after run2 was refused): T2 (= 0fbcc64, the committed training pair) on
# the hardware: compute-sanitizer, gpu-check both modes, runtime-gpu-test (the runtime's mixer trains through the
# pair: fp32 I/O, chunk 64); T2's training pair against its plain pair (LINAC_BENCH_RECOMPUTE=1); and Z2 = T2's
# compiler with --gpu-static-slices=2 (fixed-size copies for two value slices: 128 registers, 2 blocks a
# multiprocessor; GLA's chunk-16 backward spills 940 -> 20 bytes), run with LINAC_CUDA_VALUE_SPLITS=2 (every
# launch in two slices) against its default (one slice at this shape), two rounds.
# Build: LINAC_GPU_OUT=out/gpu-T2 LINAC_GPU_FLAGS=--gpu-io=bf16 bash bench/gpu/build.sh;
# LINAC_GPU_OUT=out/gpu-Z2 LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-static-slices=2" bash bench/gpu/build.sh;
# ninja -C build runtime-gpu-test; tar czf bins3.tgz T2 Z2 rt (rt: runtime-gpu-test and novel-kernels/).
cd "$(dirname "$0")" && tar xzf bins3.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san1-T2 90 env LINAC_CUDA_VALUE_SPLITS=1 $CS --tool memcheck --print-limit 4 ./T2/gpu-check --no-timing
step check1-T2 50 env LINAC_CUDA_VALUE_SPLITS=1 ./T2/gpu-check --no-timing
step check-T2 50 ./T2/gpu-check --no-timing
step san2-Z2 90 env LINAC_CUDA_VALUE_SPLITS=2 $CS --tool memcheck --print-limit 4 ./Z2/gpu-check --no-timing
step check2-Z2 50 env LINAC_CUDA_VALUE_SPLITS=2 ./Z2/gpu-check --no-timing
step rt 90 ./rt/runtime-gpu-test
EX="gated_deltanet deltanet gla simple_gla rwkv6 hgrn2"
step bench-T2-1 60 ./T2/gpu-bench --quick $EX
step bench-T2plain-1 60 env LINAC_BENCH_RECOMPUTE=1 ./T2/gpu-bench --quick $EX
for r in 1 2; do
step bench-Z2z1-$r 60 ./Z2/gpu-bench --quick $EX
step bench-Z2z2-$r 60 env LINAC_CUDA_VALUE_SPLITS=2 ./Z2/gpu-bench --quick $EX
done
for f in $R/san*.txt $R/check*.txt $R/rt.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; tail -n 2 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
