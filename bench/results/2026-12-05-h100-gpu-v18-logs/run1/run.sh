#!/usr/bin/env bash
# Staged for the next device call (session 18 had no device time left): R8B against G8B.
#   G8B  --gpu-io=bf16 --gpu-fragments=8 --gpu-fragments-backward (v16's best; binaries of d06bf27/f223adf)
#   R8B  G8B + --gpu-fragments-prefetch, with the paired stores and the solve's vector loads (commit 763a26e)
# Build: LINAC_GPU_OUT=out/gpu-R8B LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-fragments=8 --gpu-fragments-backward
#   --gpu-fragments-prefetch" bash bench/gpu/build.sh (G8B the same without the last flag); gpu-check and
#   gpu-bench of each stripped into stage/X; tar czf bins5.tgz G8B R8B; carried as out/dev/s18 with this script.
# R8B is clean on the CUDA driver emulator in three modes; not yet run on hardware.
cd "$(dirname "$0")" && tar xzf bins5.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
step check1-R8B 60 env LINAC_CUDA_VALUE_SPLITS=1 ./R8B/gpu-check --no-timing
step check-R8B 90 ./R8B/gpu-check --no-timing
for r in 1 2; do for b in G8B R8B; do step bench-$b-$r 70 ./$b/gpu-bench --quick; done; done
step ncu-R8B-gdn 60 ncu --clock-control none --section SpeedOfLight --section WarpStateStats -k regex:"linac_gated_deltanet_.*k128_v128" -s 4 -c 2 ./R8B/gpu-bench --quick gated_deltanet
for f in $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror" $f | head -5; tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | head -10; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r   # one file back (many files were left out in session 18)
