#!/usr/bin/env bash
# Session 12 device run 6: K = V = 256 in one run for v10, m (mma.sync no longer a memory access) and fit (v11),
# interleaved; runtime-gpu-test with the v11 compiler.
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 400 - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
step rt 60 ./rt/runtime-gpu-test
E="simple_gla gla rwkv6 deltanet"
step b256 300 bash -c "for b in v10 m fit v10 fit; do ./\$b/gpu-bench --quick --head-dim 256 $E | grep -E '^(simple|gla|rwkv|delta)' | sed \"s/^/\$b /\"; done"
echo "== b256"; awk '{print $1, $2, $5, $6}' $R/b256.txt
echo "== rt"; tail -2 $R/rt.txt
