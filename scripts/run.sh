#!/usr/bin/env bash
# The main job: build linac (installing what is missing), compile every example
# recurrence with linacc, and run each compiled kernel against the fp64 reference.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${LINAC_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"
out="$root/out"
for f in "$root"/examples/*.mlir; do
  echo "linacc $(basename "$f") -> out/"
  "$build/bin/linacc" "$f" --target=cpu --chunked --chunk-sizes=64,16,32 -o "$out"
done
"$build/bin/cpu-forward-bench" "$@"
