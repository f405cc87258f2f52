#!/usr/bin/env bash
# Session 28, device call 2: D = session 27's default build (0312f24, --gpu-io=bf16; baseline);
# A = this session's default (the pairs kernel after the in-order backward, adding atomically; ex2.approx in the
# pairs kernel; PTX byte-identical to call 1's NA); Z = A with every fast exponential as ex2.approx.ftz.f32
# (inline PTX in place of libdevice's __nv_exp2f, whose non-ftz ex2 costs a range test and two scalings;
# an env switch in a /tmp copy of CudaTarget.cpp, not committed). Checks of Z in both slice modes first.
cd "$(dirname "$0")" && tar xzf bins2.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s); BUDGET=${BUDGET:-200}
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
step check-Z 60 ./Z/gpu-check --no-timing
step check-Z-fixed 60 env LINAC_CUDA_VALUE_SPLITS=1 ./Z/gpu-check --no-timing
step bench-A-1 60 ./A/gpu-bench --quick
step bench-Z-1 60 ./Z/gpu-bench --quick
step bench-D-1 60 ./D/gpu-bench --quick
step bench-Z-2 60 ./Z/gpu-bench --quick
step bench-A-2 60 ./A/gpu-bench --quick
step bench-D-2 60 ./D/gpu-bench --quick
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
for v in A Z; do step ncu-$v 60 $NCU -k regex:"(backward|forward)_chunk16" -c 8 ./$v/gpu-bench --quick gla; done
step check-A-fixed 60 env LINAC_CUDA_VALUE_SPLITS=1 ./A/gpu-check --no-timing
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "linac_|gpu__time_duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF)}' | head -8; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
