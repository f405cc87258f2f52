#!/usr/bin/env bash
# Session 29, device call 1: A = the committed default (6991daa, --gpu-io=bf16; baseline); Z = A with the fast
# exponentials as ex2.approx.ftz.f32 (CudaTarget: libdevice's __nv_exp2f calls replaced after convert-gpu-to-nvvm);
# SZ = Z with the pairs kernel's inputs staged a chunk slot ahead (TileToFragments: prefetch through the slot
# loop's search and chunk test). Checks of SZ (all eight, both slice modes) first.
cd "$(dirname "$0")" && tar xzf bins1.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s); BUDGET=${BUDGET:-420}
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
step check-SZ 60 ./SZ/gpu-check --no-timing
step check-SZ-fixed 60 env LINAC_CUDA_VALUE_SPLITS=1 ./SZ/gpu-check --no-timing
step bench-A-1 70 ./A/gpu-bench --quick
step bench-SZ-1 70 ./SZ/gpu-bench --quick
step bench-Z-1 70 ./Z/gpu-bench --quick
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
for v in A SZ; do step ncu-$v 60 $NCU -k regex:"(backward|forward)_chunk16" -c 8 ./$v/gpu-bench --quick gla; done
step bench-SZ-2 70 ./SZ/gpu-bench --quick
step bench-Z-2 70 ./Z/gpu-bench --quick
step bench-A-2 70 ./A/gpu-bench --quick
step ncu-gdn-A 60 $NCU -k regex:"gated_deltanet_(backward|forward)" -c 8 ./A/gpu-bench --quick gated_deltanet
step check-Z 60 ./Z/gpu-check --no-timing
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "linac_|gpu__time_duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF)}' | head -8; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
