#!/usr/bin/env bash
# Session 20 call 1: W8B (HEAD default, paired unstaged loads) vs V8B; sanitizer + gpu-check first; then W8B full quick bench.
cd "$(dirname "$0")" && tar xzf bins8.tgz
step() { echo "### $1 $(date +%T)"; }
nvidia-smi --query-gpu=name --format=csv,noheader
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
step sanitizer; LINAC_CUDA_VALUE_SPLITS=1 timeout 60 $CS --tool memcheck --print-limit 4 ./W8B/gpu-check --no-timing 2>&1 | tail -4
step check1; LINAC_CUDA_VALUE_SPLITS=1 timeout 30 ./W8B/gpu-check --no-timing 2>&1 | tail -1
step check; timeout 30 ./W8B/gpu-check --no-timing 2>&1 | tail -1
for r in 1 2; do for b in V8B W8B; do step "$b $r"; timeout 40 ./$b/gpu-bench --quick rwkv6 gated_deltanet 2>&1 | grep -E "^\S+ +[0-9]" | awk '{print $1, $4, $5}'; done; done
step full; timeout 200 ./W8B/gpu-bench --quick 2>&1 | tail -40
step end
