#!/usr/bin/env bash
# Session 13 device run 1 -- STAGED, NOT RUN: the device tool lent no machine in session 13.
# Slot placement by latency (L), products' k loops over global slots unrolled by 4 (U), both (LU), against the
# default (base); all --gpu-io=bf16. Build here first (about 4 minutes each), then stage the stripped binaries:
#   LINAC_GPU_OUT=out/gpu-base LINAC_GPU_FLAGS="--gpu-io=bf16" bash bench/gpu/build.sh
#   LINAC_GPU_OUT=out/gpu-L LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-placement=latency" bash bench/gpu/build.sh
#   LINAC_GPU_OUT=out/gpu-U LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-unroll-global-k=4" bash bench/gpu/build.sh
#   LINAC_GPU_OUT=out/gpu-LU LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-placement=latency --gpu-unroll-global-k=4" \
#     bash bench/gpu/build.sh
#   mkdir -p out/dev/s13r1/stage && for b in base L U LU; do mkdir -p out/dev/s13r1/stage/$b && \
#     cp out/gpu-$b/gpu-check out/gpu-$b/gpu-bench out/dev/s13r1/stage/$b/ && strip out/dev/s13r1/stage/$b/*; done && \
#     tar czf out/dev/s13r1/bins.tgz -C out/dev/s13r1/stage . && cp this script out/dev/s13r1/run.sh
# and run `bash out/dev/s13r1/run.sh` on the device with carry ["out/dev/s13r1"] (about 450 s with the start).
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 520 - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
for b in L U LU; do step check1-$b 60 env LINAC_CUDA_VALUE_SPLITS=1 ./$b/gpu-check --no-timing; done
step check-LU 60 ./LU/gpu-check --no-timing
EX="gated_deltanet gla deltanet retnet simple_gla hgrn2 rwkv6"
step bench-base-1 70 ./base/gpu-bench --quick $EX
step bench-LU-1 70 ./LU/gpu-bench --quick $EX
step bench-L 70 ./L/gpu-bench --quick $EX
step bench-U 70 ./U/gpu-bench --quick $EX
step bench-base-2 70 ./base/gpu-bench --quick $EX
step bench-LU-2 70 ./LU/gpu-bench --quick $EX
step b256-base 40 ./base/gpu-bench --quick --head-dim 256 gated_deltanet simple_gla
step b256-LU 40 ./LU/gpu-bench --quick --head-dim 256 gated_deltanet simple_gla
for f in bench-base-1 bench-LU-1 bench-L bench-U bench-base-2 bench-LU-2 b256-base b256-LU; do echo "== $f"; grep -E "^\S+ +[0-9]" $R/$f.txt | head -10; done
for b in L U LU; do echo "== check1-$b"; tail -1 $R/check1-$b.txt; done
echo "== check-LU"; tail -1 $R/check-LU.txt
cat $R/steps.txt
