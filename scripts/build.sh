#!/usr/bin/env bash
# Configures and builds linac in build/ (override with LINAC_BUILD_DIR).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${LINAC_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
if [[ ! -f $build/build.ninja ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
jobs="${LINAC_JOBS:-$(nproc)}"
cmake --build "$build" -j "$jobs"
