#!/usr/bin/env bash
# Session 23, device call 2: Z7 = this session's compiler (e8131d4) with --gpu-static-slices=2 (fixed-size copies for
# two value slices: 128 registers a thread, two blocks a multiprocessor), run with LINAC_CUDA_VALUE_SPLITS=2 (every
# launch in two slices) against its default (one slice at this shape: 128 sequence-heads), two rounds alternating;
# compute-sanitizer and gpu-check with two slices first.
# Build: LINAC_GPU_OUT=out/gpu-Z7 LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-static-slices=2" bash bench/gpu/build.sh;
# tar czf bins8.tgz Z7.
cd "$(dirname "$0")" && tar xzf bins8.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san2-Z7 100 env LINAC_CUDA_VALUE_SPLITS=2 $CS --tool memcheck --print-limit 4 ./Z7/gpu-check --no-timing
step check2-Z7 50 env LINAC_CUDA_VALUE_SPLITS=2 ./Z7/gpu-check --no-timing
EX="gated_deltanet deltanet gla simple_gla rwkv6 hgrn2"
for r in 1 2; do
step bench-z1-$r 60 ./Z7/gpu-bench --quick $EX
step bench-z2-$r 60 env LINAC_CUDA_VALUE_SPLITS=2 ./Z7/gpu-bench --quick $EX
done
for f in $R/san*.txt $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; tail -n 2 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
