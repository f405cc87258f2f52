#!/usr/bin/env bash
# Session 22, device call 3: the open dg seed on the hardware, T3 (89282b8) and T2 (06772b4's kernels), one slice.
cd "$(dirname "$0")" && tar xzf bins4.tgz
for b in T3 T2; do for s in 10046267551694400660 5092371406438289095; do
  echo "== $b seed $s"; LINAC_SEED=$s LINAC_CUDA_VALUE_SPLITS=1 timeout 60 ./$b/gpu-check --no-timing --only "gated_deltanet" 2>&1 | grep -E "K=V=128 |strong K=V=64|match"
done; done
nvidia-smi --query-gpu=name --format=csv
