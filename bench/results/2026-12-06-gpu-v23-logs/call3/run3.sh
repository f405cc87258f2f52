#!/usr/bin/env bash
# Session 24, device call 3: two one-flag experiments against T7 (HEAD's kernels):
#  F   = fast exponentials (ex2.approx) in the backward kernels too (an experiment switch, LINAC_EXP_FASTBWD=1, in a
#        copy of linac-tile-to-fragments; build: LINAC_EXP_FASTBWD=1 LINAC_LINACC=<exp linacc>
#        LINAC_GPU_OUT=out/gpu-F LINAC_GPU_FLAGS=--gpu-io=bf16 bash bench/gpu/build.sh);
#  W16 = 16 warps a block in the fragment kernels (LINAC_GPU_OUT=out/gpu-W16 LINAC_GPU_FLAGS="--gpu-io=bf16
#        --gpu-fragments=16" bash bench/gpu/build.sh, HEAD's linacc).
cd "$(dirname "$0")" && tar xzf bins3.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
step check1-F 60 env LINAC_CUDA_VALUE_SPLITS=1 ./F/gpu-check --no-timing
step check1-W16 60 env LINAC_CUDA_VALUE_SPLITS=1 ./W16/gpu-check --no-timing
EX="gated_deltanet deltanet simple_gla gla rwkv6 hgrn2"
for r in 1 2; do
for v in T7 F W16; do step bench-$v-$r 70 ./$v/gpu-bench --quick $EX; done
done
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; tail -n 2 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
