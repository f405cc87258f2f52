#!/usr/bin/env bash
# Staged for the next device call (session 19 had no device time left): W8B (V8B + paired loads of unstaged fragment tiles, 6b1b95b)
# against V8B on RWKV-6 and GDN, one round each, gpu-check of W8B (one slice) first.
# Build: LINAC_GPU_OUT=out/gpu-W8B LINAC_GPU_FLAGS=--gpu-io=bf16 bash bench/gpu/build.sh; tar czf bins8.tgz V8B W8B.
cd "$(dirname "$0")" && tar xzf bins8.tgz
nvidia-smi --query-gpu=name --format=csv,noheader
LINAC_CUDA_VALUE_SPLITS=1 timeout 20 ./W8B/gpu-check --no-timing 2>&1 | tail -1
for r in 1 2; do for b in V8B W8B; do echo "== $b $r"; timeout 25 ./$b/gpu-bench --quick rwkv6 gated_deltanet 2>&1 | grep -E "^\S+ +[0-9]" | awk '{print $1, $4, $5}'; done; done
