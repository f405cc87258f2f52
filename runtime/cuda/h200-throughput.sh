#!/usr/bin/env bash
# Training throughput of the H200 hybrid config with the current kernels: 60 steps in fp32 and with bf16
# matmuls. Usage (on the GPU machine, from the repository root): runtime/cuda/h200-throughput.sh BIN DATA OUT
#   BIN: a linac-train-cuda built here (build/bin/linac-train-cuda, carried); DATA: a folder with train.bin
#   and val.bin (`linac-train prepare DIR` here); OUT: where the logs go.
set -u
bin="${1:?usage: h200-throughput.sh BIN DATA OUT}" data="${2:?}" out="${3:?}"
cublas=$(dirname "$(find / -name 'libcublas.so.13*' -not -path '/proc/*' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$cublas:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
rm -rf data runs/throughput && cp -r "$data" data && mkdir -p runs/throughput/fp32 runs/throughput/bf16 "$out"
sed -e 's/^steps = 300/steps = 60/' -e 's/^eval_lengths = .*/eval_lengths = 128/' \
  runtime/cuda/configs/h200-hybrid.cfg >runs/throughput/fp32/config.cfg
cp runs/throughput/fp32/config.cfg runs/throughput/bf16/config.cfg
echo "precision = bf16" >>runs/throughput/bf16/config.cfg
for p in fp32 bf16; do
  timeout 90 "$bin" train runs/throughput/$p/config.cfg --out runs/throughput/$p >"$out/hybrid-$p.log" 2>&1
  grep -hE "^model:|tokens/s;|^validation" "$out/hybrid-$p.log" | tail -n 4
done
