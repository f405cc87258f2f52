#!/usr/bin/env bash
# Session 35 call 1: the tail kernel (T: --gpu-tail-kernel=all) against the default build (F), same machine.
cd "$(dirname "$0")" && tar xzf bins.tgz
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
for e in gated_deltanet retnet; do timeout 60 ./gpu-T/gpu-check --only $e > $OUT/check-T-$e.txt 2>&1; echo "check-T $e rc=$?"; tail -n 1 $OUT/check-T-$e.txt; done
for r in 1 2; do
  for b in F T; do
    echo "== round $r build $b" | tee -a $OUT/bench.txt
    timeout 60 ./gpu-$b/gpu-bench --quick gated_deltanet deltanet retnet simple_gla >> $OUT/bench.txt 2>&1
  done
done
cat $OUT/bench.txt | grep -v "^\s*$" | head -80
timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum,launch__registers_per_thread -k regex:"gated_deltanet_backward_chunk32" -c 4 ./gpu-T/gpu-bench --quick gated_deltanet > $OUT/ncu-T.txt 2>&1
grep -E "backward_chunk32|duration|registers" $OUT/ncu-T.txt | head -20
