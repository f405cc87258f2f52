#!/usr/bin/env bash
# Session 27, device call 2: D = this session's default build (--gpu-io=bf16: the per-key pair group in one
# pass, the pairs kernel at 2 blocks a multiprocessor; PTX of GLA, HGRN-2, RWKV-6 byte-identical to call 1's G2,
# the other five byte-identical to v25's F2); P1 = v25's default for the per-key examples (baseline);
# FX2 = D with ex2.approx exponentials in the pairs kernel too (an env switch in a /tmp copy of linacc, not
# committed); PS = D with the pairs kernel second (it adds its per-token gradients atomically into the in-order
# backward's plain stores; env switches in /tmp copies of GpuChunk.cpp and CudaTarget.cpp, not committed).
# Checks (PS in both slice modes), two timing rounds, ncu of GLA's backward kernels; ordered by priority.
cd "$(dirname "$0")" && tar xzf bins2.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
EX="gla hgrn2 rwkv6"
step check-PS 60 ./PS/gpu-check --no-timing
step check-PS-fixed 60 env LINAC_CUDA_VALUE_SPLITS=1 ./PS/gpu-check --no-timing
step check-FX2 60 ./FX2/gpu-check --no-timing
step bench-P1-1 40 ./P1/gpu-bench --quick $EX
step bench-D-1 60 ./D/gpu-bench --quick
step bench-PS-1 40 ./PS/gpu-bench --quick $EX
step bench-FX2-1 40 ./FX2/gpu-bench --quick $EX
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
for v in D PS; do step ncu-$v 60 $NCU -k regex:"backward_chunk16" -c 6 ./$v/gpu-bench --quick gla; done
step bench-P1-2 40 ./P1/gpu-bench --quick $EX
step bench-PS-2 40 ./PS/gpu-bench --quick $EX
step bench-D-2 60 ./D/gpu-bench --quick
step bench-FX2-2 40 ./FX2/gpu-bench --quick $EX
step check-D-fixed 60 env LINAC_CUDA_VALUE_SPLITS=1 ./D/gpu-check --no-timing
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "linac_|gpu__time_duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF)}' | head -4; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
