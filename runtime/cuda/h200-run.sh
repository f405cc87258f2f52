#!/usr/bin/env bash
# The CUDA backend's check and benchmark on a GPU machine, from a build made elsewhere (carried: build-rt/bin's
# runtime-gpu-test and linac-train-cuda, the data shards in build-rt/data, and a CPU-trained tiny-hybrid
# checkpoint in build-rt/ckpt/cpu-tiny.ckpt). Usage: runtime/cuda/h200-run.sh OUT_DIR; one log per stage in
# OUT_DIR, the run directories (without the large checkpoints) in OUT_DIR/runs.tgz.
# bench/results/2026-12-02-h200-runtime-cuda.md holds a run.
set -uo pipefail
out="${1:?usage: h200-run.sh OUT_DIR}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
mkdir -p "$out" runs
# cuBLAS: the toolkit's, else the one PyTorch's wheels carry.
cublas=/usr/local/cuda/lib64
if ! ls "$cublas"/libcublas.so.13 >/dev/null 2>&1; then
  cublas="$(dirname "$(find / -name 'libcublas.so.13*' -not -path '/proc/*' 2>/dev/null | head -1)")"
fi
export LD_LIBRARY_PATH="$cublas:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
rm -rf data && cp -r build-rt/data data
bin=build-rt/bin
status=0
stage() { # LIMIT_S LOG COMMAND...: a stage's output goes to OUT_DIR/LOG
  local limit=$1 log=$2
  shift 2
  echo "== $*"
  timeout "$limit" "$@" >"$out/$log" 2>&1 || { echo "FAILED (exit $?): $*" | tee -a "$out/$log"; status=1; }
}
stage 40 gpu-test.log $bin/runtime-gpu-test
# The CPU example config on the GPU, and the CPU's checkpoint of it evaluated on the GPU.
stage 40 tiny-gpu.log $bin/linac-train-cuda train runtime/configs/tiny-hybrid.cfg --device cuda --out runs/tiny-gpu
stage 20 cpu-ckpt-on-gpu.log $bin/linac-train-cuda eval runtime/configs/tiny-hybrid.cfg \
  --checkpoint build-rt/ckpt/cpu-tiny.ckpt --report runs/cpu-tiny-on-gpu.json --device cuda
stage 110 hybrid.log $bin/linac-train-cuda train runtime/cuda/configs/h200-hybrid.cfg --out runs/h200-hybrid
# The same hybrid with bf16 matmul inputs, 60 steps, for the throughput.
mkdir -p runs/h200-hybrid-bf16
sed -e 's/^steps = 300/steps = 60/' -e 's/^eval_lengths = .*/eval_lengths = 128/' \
  runtime/cuda/configs/h200-hybrid.cfg >runs/h200-hybrid-bf16/config.cfg
echo "precision = bf16" >>runs/h200-hybrid-bf16/config.cfg
stage 40 hybrid-bf16.log $bin/linac-train-cuda train runs/h200-hybrid-bf16/config.cfg --out runs/h200-hybrid-bf16
stage 70 mqar.log $bin/linac-train-cuda mqar runtime/cuda/configs/h200-mqar-pure.cfg --out runs/h200-mqar-pure
tar czf "$out/runs.tgz" --exclude='h200-*/model.ckpt' runs
echo "== summary"
grep -hE "^\[  (PASSED|FAILED) |FAILED" "$out"/*.log
grep -E "worst gradient" "$out/gpu-test.log"
for log in tiny-gpu cpu-ckpt-on-gpu hybrid hybrid-bf16 mqar; do
  echo "-- $log"
  grep -hE "^model:|tokens/s;|^validation|^mqar|^needle|^variable|^task" "$out/$log.log"
done
exit $status
