#!/usr/bin/env bash
# Session 24, device call 4: N1 = exact tile simplifications (linac-gpu-chunk: constant fills folded, gated
# products of zero gates as masked plain products, dead tiles dropped; linac-tile-to-fragments: an elementwise op
# of one operand on a broadcast tile applied to its column first) + two-slice copies through the fragment
# lowering; against T7 (HEAD's kernels). Build: LINAC_LINACC=<this linacc> LINAC_GPU_OUT=out/gpu-N1
# LINAC_GPU_FLAGS=--gpu-io=bf16 bash bench/gpu/build.sh (fixed-size kernels byte-identical to the committed
# linacc's).
cd "$(dirname "$0")" && tar xzf bins4.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san1-N1 100 env LINAC_CUDA_VALUE_SPLITS=1 $CS --tool memcheck --print-limit 4 ./N1/gpu-check --no-timing
step check1-N1 50 env LINAC_CUDA_VALUE_SPLITS=1 ./N1/gpu-check --no-timing
step check-N1 50 ./N1/gpu-check --no-timing
EX="gated_deltanet deltanet simple_gla gla rwkv6 hgrn2"
for r in 1 2; do
for v in T7 N1; do step bench-$v-$r 70 ./$v/gpu-bench --quick $EX; done
done
step rep1-N1 60 env LINAC_CUDA_VALUE_SPLITS=1 ./N1/gpu-check --no-timing --repeat 10 --only deltanet
for f in $R/san*.txt $R/check*.txt $R/rep*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; tail -n 2 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
