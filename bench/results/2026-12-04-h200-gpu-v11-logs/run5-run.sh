#!/usr/bin/env bash
# Session 12 device run 5: v11 (tile ops ordered by level, default) checked and timed; the delta rule's backward
# at 512 threads (e512); v11 against m (program order) for HGRN at head dim 64 and for the generic kernels.
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 500 - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
step check-v11 100 ./v11/gpu-check --no-timing --repeat 2
step check1-v11 100 env LINAC_CUDA_VALUE_SPLITS=1 ./v11/gpu-check --no-timing
step rt 60 ./rt/runtime-gpu-test
step bench-v11 60 ./v11/gpu-bench --quick
step bench-e512 30 ./e512/gpu-bench --quick gated_deltanet deltanet
step bench-v11-64 40 ./v11/gpu-bench --quick --head-dim 64
step bench-v11-256 100 ./v11/gpu-bench --quick --head-dim 256
step hgrn64 40 bash -c 'for i in 1 2; do ./m/gpu-bench --quick --head-dim 64 hgrn | grep "^hgrn" | sed "s/^/m   /"; ./v11/gpu-bench --quick --head-dim 64 hgrn | grep "^hgrn" | sed "s/^/v11 /"; done'
step generic 60 bash -c 'for b in m v11; do LINAC_CUDA_GENERIC=1 ./$b/gpu-bench --quick gated_deltanet gla | grep -E "^(gated|gla)" | sed "s/^/$b /"; done'
for f in bench-v11 bench-e512 bench-v11-64 bench-v11-256 hgrn64 generic; do echo "== $f"; grep -E "^\S+ +[0-9]|^(m|v11) " $R/$f.txt | head -20; done
for f in check-v11 check1-v11; do echo "== $f"; tail -1 $R/$f.txt; done
echo "== rt"; tail -3 $R/rt.txt
