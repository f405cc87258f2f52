#!/usr/bin/env bash
# Builds the GPU check program here (no GPU needed): linacc --target=cuda for
# every example, then the host programs against the CUDA driver API stub. The
# results, build-gpu/gpu-check and build-gpu/gpu-bench, run on the device machine.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# LINAC_GPU_BLOCK_SIZE picks the threads per block (default 0: linacc's choice by kernel, docs/gpu.md),
# LINAC_GPU_CHUNK the chunk size (default auto: chunks 32 and 16 compiled, each recurrence timed through its
# unsuffixed launchers, which run 16 for matrix states with per-key gates up to K = V = 128 and 32 otherwise:
# bench/NOTES.md v8), LINAC_GPU_OUT the output folder, LINAC_GPU_FLAGS further linacc flags (e.g. --gpu-split).
# LINAC_GPU_EMULATION=1 builds the programs to run here instead, on the CUDA driver emulator (docs/emulation.md):
# the same kernels compiled for this host too (linacc --gpu-emulation), linked against build/lib/libLinacCudaEmu.a
# in place of libcuda. LINAC_LINACC names another linacc (default build/bin/linacc), e.g. a copy built from an
# earlier commit, for a side-by-side run.
block="${LINAC_GPU_BLOCK_SIZE:-0}"
chunk="${LINAC_GPU_CHUNK:-auto}"
sizes="$chunk"
if [[ $chunk == auto ]]; then
  sizes=32,16
  chunk=0
fi
out="${LINAC_GPU_OUT:-$root/build-gpu}"
mkdir -p "$out"
emulation=()
driver=(-L/usr/local/cuda/lib64/stubs -lcuda)
if [[ ${LINAC_GPU_EMULATION:-0} == 1 ]]; then
  emulation=(--gpu-emulation)
  driver=("$root/build/lib/libLinacCudaEmu.a" -lpthread)
fi
for f in "$root"/examples/*.mlir; do
  # shellcheck disable=SC2086
  "${LINAC_LINACC:-$root/build/bin/linacc}" "$f" --target=cuda --chunk-sizes="$sizes" --gpu-block-size="$block" ${LINAC_GPU_FLAGS:-} \
    "${emulation[@]}" -o "$out"
done
flags=(-std=c++17 -O2 -DLINAC_GPU_CHUNK="$chunk" -I"$root/test/Numerics" -I"$out" -I"$root/build/kernels/cpu" -I/usr/local/cuda/include)
g++ "${flags[@]}" -c "$root/test/Numerics/Reference.cpp" -o "$out/Reference.o"
for f in "$out"/*_cuda.cpp; do g++ "${flags[@]}" -c "$f" -o "${f%.cpp}.o"; done
objects=("$out"/*_cuda.o)
if [[ ${#emulation[@]} -gt 0 ]]; then
  objects+=("$out"/*_emu.o)
fi
for tool in gpu_check gpu_bench; do
  g++ "${flags[@]}" "$root/bench/gpu/$tool.cpp" "${objects[@]}" "$out/Reference.o" "${driver[@]}" -o "$out/${tool//_/-}"
done
echo "built $out/gpu-check and $out/gpu-bench"
