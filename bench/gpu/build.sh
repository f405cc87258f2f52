#!/usr/bin/env bash
# Builds the GPU check program here (no GPU needed): linacc --target=cuda for
# every example, then the host program against the CUDA driver API stub. The
# result, build-gpu/gpu-check, runs on the device machine.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/build-gpu"
mkdir -p "$out"
for f in "$root"/examples/*.mlir; do
  "$root/build/bin/linacc" "$f" --target=cuda --chunk-sizes=64 -o "$out"
done
g++ -std=c++17 -O2 -I"$root/test/Numerics" -I"$out" -I"$root/build/kernels/cpu" -I/usr/local/cuda/include \
  "$root/bench/gpu/gpu_check.cpp" "$out"/*_cuda.cpp "$root/test/Numerics/Reference.cpp" \
  -L/usr/local/cuda/lib64/stubs -lcuda -o "$out/gpu-check"
echo "built $out/gpu-check"
