#!/usr/bin/env bash
# Session 35 call 2: per-kernel times of DeltaNet's and RetNet's backwards, default (F) against the tail cut (T).
cd "$(dirname "$0")" && tar xzf bins.tgz
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
for b in F T; do
  for e in deltanet retnet; do
    timeout 50 ncu --clock-control none --metrics gpu__time_duration.sum,launch__registers_per_thread,dram__bytes.sum -k regex:"^linac_${e}_(forward|backward)_chunk32" -c 6 ./gpu-$b/gpu-bench --quick $e > $OUT/ncu-$b-$e.txt 2>&1
    echo "== $b $e"; grep -E "^  linac|duration|registers|dram__bytes" $OUT/ncu-$b-$e.txt | sed -E 's/\(([0-9]+, [0-9]+, [0-9]+)\)x.*/\1/' | head -24
  done
done
