#!/usr/bin/env bash
# Session 16 device run (one call, for a scarce device): v14's questions and v15's together.
#   base  v11 (a28f28c's linacc)                         O     HEAD's default (per-token gradients stored once)
#   LUO   O + --gpu-placement=latency --gpu-unroll-global-k=4
#   B4    O + --gpu-boundary-slices=4
#   F16   O + --gpu-fragments=16 (the register-resident forwards; commit 3adf447)
#   F16B  F16 + --gpu-fragments-backward (and the backwards of simple GLA, RetNet, DeltaNet, GDN; 7c7d2af)
#   F8B   the same at 8 warps (255 registers a thread: the W = 16 backwards spill 196-948 bytes; 7c7d2af)
#   F8    O + --gpu-fragments=8 (commit b9fdcb8: the forwards but RWKV-6's)
# Built with `LINAC_GPU_OUT=out/gpu-X LINAC_GPU_FLAGS="--gpu-io=bf16 <flags>" bash bench/gpu/build.sh` (base:
# LINAC_LINACC=<a28f28c's linacc>), gpu-check and gpu-bench of each stripped into stage/X, `tar czf bins.tgz`;
# carried as out/dev/s16 (run.sh = this script).
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
# The fragment kernels are the fixed-size ones: one value slice reaches them at gpu-check's shapes.
for b in F16 F16B F8B F8 O B4; do step check1-$b 40 env LINAC_CUDA_VALUE_SPLITS=1 ./$b/gpu-check --no-timing; done
for b in base O F16 F16B F8B F8 LUO B4; do step bench-$b-1 60 ./$b/gpu-bench --quick; done
for b in base O F16 F16B; do step bench-$b-2 60 ./$b/gpu-bench --quick; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | head -10; done
for f in $R/check1-*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|error" $f | head -5; tail -1 $f; done
cat $R/gpu.txt $R/steps.txt
