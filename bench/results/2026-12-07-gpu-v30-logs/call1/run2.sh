#!/usr/bin/env bash
# Session 31, device call: D = the committed default (c31219b's kernels, --gpu-io=bf16; baseline);
# X = D with --gpu-save-solves (the in-order delta rule's solve kept beside the boundary states; the backward
# loads it); XR2 = X with --gpu-boundary-every=2 (every kernel keeps every second state; the delta rule's rebuild
# then loads the solves too); I = D with --gpu-ftz-exp2=all (the fast exponentials as the
# llvm.nvvm.ex2.approx.ftz.f32 intrinsic in every kernel); C16 = D at chunk 16 only (LINAC_GPU_CHUNK=16);
# R4 = session 30's build with --gpu-boundary-every=4. Alternating bench rounds, ncu per kernel, checks.
cd "$(dirname "$0")" && for t in bins*.tgz; do tar xzf $t; done
R=$OUT/r; mkdir -p $R
START=$(date +%s); BUDGET=${BUDGET:-540}
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
DN="gated_deltanet deltanet"
step check-X 60 ./X/gpu-check --no-timing
step check-XR2 60 ./XR2/gpu-check --no-timing
step bench-D-1 70 ./D/gpu-bench --quick
step bench-X-1 30 ./X/gpu-bench --quick $DN
step bench-XR2-1 30 ./XR2/gpu-bench --quick $DN
step bench-I-1 70 ./I/gpu-bench --quick
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
for v in D X XR2; do step ncu-gdn-$v 40 $NCU -k regex:"linac_gated_deltanet_(backward|forward)" -c 8 ./$v/gpu-bench --quick gated_deltanet; done
for r in gla rwkv6; do for v in D I; do step ncu-$r-$v 40 $NCU -k regex:"linac_${r}_(backward|forward)" -c 8 ./$v/gpu-bench --quick $r; done; done
step ncu-gdn-I 40 $NCU -k regex:"linac_gated_deltanet_(backward|forward)" -c 8 ./I/gpu-bench --quick gated_deltanet
step bench-XR2-2 30 ./XR2/gpu-bench --quick $DN
step bench-X-2 30 ./X/gpu-bench --quick $DN
step bench-D-2 70 ./D/gpu-bench --quick
step bench-I-2 70 ./I/gpu-bench --quick
step check-I 60 ./I/gpu-check --no-timing
step check-D 60 ./D/gpu-check --no-timing
step bench-C16-1 70 ./C16/gpu-bench --quick
step check-XR2-fixed 60 env LINAC_CUDA_VALUE_SPLITS=1 ./XR2/gpu-check --no-timing
step bench-R4-1 70 ./R4/gpu-bench --quick
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -8; command tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "linac_|gpu__time_duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF)}' | head -12; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
