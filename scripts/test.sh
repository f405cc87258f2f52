#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: lit, then the ctest suites.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${LINAC_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"
status=0
echo "== lit"
/usr/lib/llvm-22/bin/lit -sv "$build/test" || status=1
echo "== ctest"
(cd "$build" && ctest --output-on-failure -E '^lit$') || status=1
exit $status
