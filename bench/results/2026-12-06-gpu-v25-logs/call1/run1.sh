#!/usr/bin/env bash
# Session 26, device call 1: the pairs kernel (linacc --gpu-pair-kernel, this session's linac-gpu-chunk):
# P1 = --gpu-io=bf16 --gpu-pair-kernel; P2 = the same with --gpu-pair-blocks-per-sm=2; F2 = the default kernels
# (no pairs kernel; PTX byte-identical to HEAD 0e19a6b's). Checks (both slice modes; compute-sanitizer on GLA),
# timing two rounds, per-kernel durations (ncu gpu__time_duration) of the GLA backward kernels.
cd "$(dirname "$0")" && tar xzf bins1.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
EX="gla hgrn2 rwkv6 simple_gla retnet"
step bench-F2-1 40 ./F2/gpu-bench --quick $EX
step bench-P1-1 40 ./P1/gpu-bench --quick $EX
step check-P1 60 ./P1/gpu-check --no-timing
step check-P1-fixed 60 env LINAC_CUDA_VALUE_SPLITS=1 ./P1/gpu-check --no-timing
step bench-P2-1 40 ./P2/gpu-bench --quick $EX
step sanitize-P1 120 compute-sanitizer ./P1/gpu-check --no-timing --only gla
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
for v in P1 P2; do step ncu-$v 60 $NCU -k regex:"backward_chunk16" -c 6 ./$v/gpu-bench --quick gla; done
for v in F2 P1 P2; do step bench-$v-2 40 ./$v/gpu-bench --quick $EX; done
for f in $R/check*.txt $R/sanitize*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 2 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "linac_|gpu__time_duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF)}' | head -16; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
