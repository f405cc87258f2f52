#!/usr/bin/env bash
# The CUDA backend's check and benchmark on a GPU machine, from a build made elsewhere (build-rt/bin and the data
# shards in build-rt/data carried along): runtime-gpu-test, then the hybrid on the license corpus and MQAR, each
# trained and evaluated. Usage: runtime/cuda/h200-run.sh OUT_DIR. bench/results/2026-12-02-h200-runtime-cuda.md
# holds one run.
set -uo pipefail
out="${1:?usage: h200-run.sh OUT_DIR}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
mkdir -p "$out"
# cuBLAS: the toolkit's, else the one PyTorch's wheels carry.
cublas="$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib 2>/dev/null | head -1)"
if ! ls "$cublas"/libcublas.so.13 >/dev/null 2>&1; then
  cublas="$(dirname "$(find / -name 'libcublas.so.13*' -not -path '/proc/*' 2>/dev/null | head -1)")"
fi
export LD_LIBRARY_PATH="$cublas:${LD_LIBRARY_PATH:-}"
echo "cuBLAS from $cublas"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
rm -rf data && cp -r build-rt/data data
status=0
timeout 60 build-rt/bin/runtime-gpu-test 2>&1 | tee "$out/gpu-test.log" || status=1
timeout 120 build-rt/bin/linac-train-cuda train runtime/cuda/configs/h200-hybrid.cfg --out runs/h200-hybrid 2>&1 |
  tee "$out/train-hybrid.log" || status=1
timeout 75 build-rt/bin/linac-train-cuda mqar runtime/cuda/configs/h200-mqar.cfg --out runs/h200-mqar 2>&1 |
  tee "$out/train-mqar.log" || status=1
tar czf "$out/runs.tgz" --exclude=model.ckpt runs
echo "== summary"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/gpu-test.log"
grep -hE "^model:|tokens/s;|^validation|^mqar|^needle|^variable|^task" "$out"/train-*.log
exit $status
