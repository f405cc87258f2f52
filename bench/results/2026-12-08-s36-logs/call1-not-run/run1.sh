#!/usr/bin/env bash
# Session 36 call 1, staged and not run (no device was lent in session 36). The right-looking substitution (R)
# and the interleaved split terms (I, timed beside F like R)
# against the default (F) on the same machine; R2 = R with substitutions in the forwards too; per-kernel times of
# F, R and the split (S) for Gated DeltaNet and DeltaNet; fla's delta-rule ops' kernels (bench/fla_kernels.py).
# Builds (here, about 5 min each; two in parallel about 6):
#   LINAC_GPU_OUT=out/gpu-F  LINAC_GPU_FLAGS="--gpu-io=bf16" bash bench/gpu/build.sh
#   LINAC_GPU_OUT=out/gpu-R  LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-substitution=right" bash bench/gpu/build.sh
#   LINAC_GPU_OUT=out/gpu-R2 LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-substitution=right --gpu-product-solves=none" bash bench/gpu/build.sh
#   LINAC_GPU_OUT=out/gpu-I  LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-interleave-terms" bash bench/gpu/build.sh
#   LINAC_GPU_OUT=out/gpu-S  LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-split --gpu-phase-block-size=256 --gpu-phase-blocks-per-sm=1" bash bench/gpu/build.sh
# then: mkdir -p out/dev/sNN/call1, copy this file there, (cd out && tar czf dev/sNN/call1/bins.tgz gpu-{F,R,R2,I,S}/gpu-{check,bench}),
# and run `bash out/dev/sNN/call1/run1.sh` carrying out/dev/sNN and third_party/fla (fla's `fla` package copied there).
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here" && tar xzf bins.tgz
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $OUT/gpu.txt
for e in gated_deltanet deltanet; do
  for b in R R2; do
    timeout 60 ./gpu-$b/gpu-check --only $e > $OUT/check-$b-$e.txt 2>&1; echo "check-$b $e rc=$?"; tail -n 1 $OUT/check-$b-$e.txt
  done
done
# Bit-identical X: the same seed prints the same errors.
for b in F R; do LINAC_SEED=3636 timeout 60 ./gpu-$b/gpu-check --only "gated_deltanet K=V=128" > $OUT/seed-$b.txt 2>&1; done
diff <(grep -v "^device" $OUT/seed-F.txt) <(grep -v "^device" $OUT/seed-R.txt) > /dev/null && echo "F and R print the same errors (seed 3636)" || { echo "F and R differ:"; paste $OUT/seed-F.txt $OUT/seed-R.txt | head -20; }
for r in 1 2; do
  for b in F R R2 I; do
    echo "== round $r build $b" | tee -a $OUT/bench.txt
    timeout 60 ./gpu-$b/gpu-bench --quick gated_deltanet deltanet >> $OUT/bench.txt 2>&1
  done
done
grep -v "^\s*$" $OUT/bench.txt | head -40
for b in F R S; do
  for e in gated_deltanet deltanet; do
    [[ $b == S && $e == deltanet ]] && continue
    timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum,launch__registers_per_thread,dram__bytes.sum,launch__grid_size,launch__block_size -k regex:"^linac_${e}_(forward|backward)_chunk32" -c 12 ./gpu-$b/gpu-bench --quick $e > $OUT/ncu-$b-$e.txt 2>&1
    echo "== ncu $b $e"; grep -E "^  linac|duration|registers|dram__bytes|grid_size|block_size" $OUT/ncu-$b-$e.txt | sed -E 's/\(([0-9]+, [0-9]+, [0-9]+)\)x.*/\1/' | head -60
  done
done
cd "$here/../../../.."   # the repository root
export TRITON_CACHE_DIR=/tmp/triton-cache
timeout 250 python3 bench/fla_kernels.py chunk_delta_rule chunk_gated_delta_rule > $OUT/fla-kernels.txt 2>&1; echo "fla rc=$?"
grep -v Warning $OUT/fla-kernels.txt | head -60
