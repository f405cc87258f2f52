#!/usr/bin/env bash
# Session 24, device call 1: Z16 = two value slices (--gpu-static-slices=2) through the fragment lowering (a
# running state read at one block-uniform offset is taken whole), chunk 16 (LINAC_GPU_CHUNK=16: GDN's chunk-32
# z2 backward does not fit); the z2 copies run at 256 threads, 128 registers, 2 blocks a multiprocessor.
# Against T7 (HEAD's kernels, default chunks). Build: LINAC_LINACC=<exp linacc> LINAC_GPU_CHUNK=16
# LINAC_GPU_OUT=out/gpu-Z16 LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-static-slices=2" bash bench/gpu/build.sh
cd "$(dirname "$0")" && tar xzf bins1.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san2-Z16 120 env LINAC_CUDA_VALUE_SPLITS=2 $CS --tool memcheck --print-limit 4 ./Z16/gpu-check --no-timing
step check2-Z16 60 env LINAC_CUDA_VALUE_SPLITS=2 ./Z16/gpu-check --no-timing
EX="gated_deltanet deltanet simple_gla gla rwkv6 hgrn2"
for r in 1 2; do
step bench-T7-$r 70 ./T7/gpu-bench --quick $EX
step bench-Z16s2-$r 70 env LINAC_CUDA_VALUE_SPLITS=2 ./Z16/gpu-bench --quick $EX
step bench-Z16s1-$r 70 env LINAC_CUDA_VALUE_SPLITS=1 ./Z16/gpu-bench --quick $EX
done
for f in $R/san*.txt $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; tail -n 2 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
