#!/usr/bin/env bash
# Session 15 device run 2 (after run1c): boundary-state kernel at 8 and 2 value slices (B8, B2), with LUO (LUOB4);
# the split at chunk 64 with blocked per-key pairs and 4 blocks of 256 threads a multiprocessor in its parallel
# phases (S64FP4), and at chunk 64 (S64) and 32 (S32) as built; against O. Builds (about 2 minutes each):
#   LINAC_GPU_OUT=out/gpu-B8 LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-boundary-slices=8" bash bench/gpu/build.sh
#   LINAC_GPU_OUT=out/gpu-B2 LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-boundary-slices=2" bash bench/gpu/build.sh
#   LINAC_GPU_OUT=out/gpu-LUOB4 LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-boundary-slices=4 --gpu-placement=latency \
#     --gpu-unroll-global-k=4" bash bench/gpu/build.sh
#   LINAC_GPU_CHUNK=64 LINAC_GPU_OUT=out/gpu-S64FP4 LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-split --gpu-factor-gates \
#     --gpu-phase-block-size=256 --gpu-phase-blocks-per-sm=4" bash bench/gpu/build.sh
#   LINAC_GPU_CHUNK=64 LINAC_GPU_OUT=out/gpu-S64 LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-split" bash bench/gpu/build.sh
#   LINAC_GPU_CHUNK=32 LINAC_GPU_OUT=out/gpu-S32 LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-split" bash bench/gpu/build.sh
# staged as out/dev/s15r2/<build>/{gpu-check,gpu-bench} (stripped, bins.tgz), carry ["out/dev/s15r2"].
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 550 - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
EX="gated_deltanet gla deltanet retnet simple_gla hgrn2 rwkv6"
for b in B8 B2 LUOB4; do step check1-$b 60 env LINAC_CUDA_VALUE_SPLITS=1 ./$b/gpu-check --no-timing; done
for b in O B8 B2 LUOB4; do step bench-$b 70 ./$b/gpu-bench --quick $EX; done
for b in S64FP4 S64 S32; do step check-$b 60 ./$b/gpu-check --no-timing; done
for b in S64FP4 S64 S32; do step bench-$b 70 ./$b/gpu-bench --quick gated_deltanet gla simple_gla; done
step bench-O-2 70 ./O/gpu-bench --quick $EX
for b in O B8 B2 LUOB4 S64FP4 S64 S32 O-2; do echo "== bench-$b"; grep -E "^\S+ +[0-9]" $R/bench-$b.txt | head -10; done
for b in check1-B8 check1-B2 check1-LUOB4 check-S64FP4 check-S64 check-S32; do echo "== $b"; grep -E "FAIL|mismatch|error" $R/$b.txt | head -5; tail -1 $R/$b.txt; done
cat $R/steps.txt
