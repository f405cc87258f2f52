#!/usr/bin/env bash
# The main job: build linac (installing what is missing), compile the example
# recurrences with linacc, check every compiled kernel against the fp64
# reference, then train a tiny 3:1 hybrid (Gated DeltaNet + softmax attention)
# on the CPU and evaluate it (validation loss, MQAR, needle, variable tracking).
#   ./scripts/run.sh [CONFIG]     (default runtime/configs/tiny-hybrid.cfg)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${LINAC_BUILD_DIR:-$root/build}"
config="${1:-$root/runtime/configs/tiny-hybrid.cfg}"
"$root/scripts/build.sh"
out="$root/out"
mkdir -p "$out"
for f in "$root"/examples/*.mlir; do
  echo "linacc $(basename "$f") -> out/kernels/"
  "$build/bin/linacc" "$f" --target=cpu --chunked --chunk-sizes=64 -o "$out/kernels"
done
"$build/bin/cpu-forward-bench" 256 2 32
cd "$out"
"$build/bin/linac-train" train "$config" --out run
"$build/bin/linac-train" eval "$config" --checkpoint run/model.ckpt --report run/eval.json
echo "loss curve: out/run/loss.svg, log: out/run/log.csv, report: out/run/eval.json"
