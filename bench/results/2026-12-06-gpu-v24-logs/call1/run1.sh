#!/usr/bin/env bash
# Session 25, device call 1: the chunk-parallel split (--gpu-split) re-timed with today's fragment kernels.
# F2 = HEAD's kernels (LINAC_GPU_FLAGS=--gpu-io=bf16); S256 / S512 = the same plus --gpu-split
# --gpu-phase-block-size=256|512 --gpu-phase-blocks-per-sm=1 (bench/gpu/build.sh, HEAD fad8d8d's linacc).
# Checks, per-kernel durations (ncu gpu__time_duration) of the split's GDN and GLA phases, timing.
cd "$(dirname "$0")" && tar xzf bins1.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
step check-S256 60 ./S256/gpu-check --no-timing
step check-S512 60 ./S512/gpu-check --no-timing
EX="gated_deltanet deltanet simple_gla gla rwkv6 hgrn2"
for v in F2 S256 S512; do step bench-$v 90 ./$v/gpu-bench --quick $EX; done
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
for v in S256 S512; do
  step ncu-$v-gdn 60 $NCU -k regex:"gated_deltanet" -c 16 ./$v/gpu-bench --quick gated_deltanet
  step ncu-$v-gla 60 $NCU -k regex:"linac_gla" -c 16 ./$v/gpu-bench --quick gla
done
step ncu-F2-gdn 60 $NCU -k regex:"gated_deltanet" -c 6 ./F2/gpu-bench --quick gated_deltanet
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -5; command tail -n 2 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "linac_|gpu__time_duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF)}' | head -16; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
