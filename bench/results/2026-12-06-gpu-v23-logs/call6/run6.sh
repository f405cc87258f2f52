#!/usr/bin/env bash
# Session 24, device call 6: runtime-gpu-test (the runtime's GPU mixer training through the training pair: fp32
# I/O, chunk 64, the shared-memory lowering, now with linac-gpu-chunk's exact tile simplifications) built at
# 06683b1. Build: ninja -C build runtime-gpu-test; rt/ = build/bin/runtime-gpu-test and build/bin/novel-kernels/.
cd "$(dirname "$0")" && tar xzf bins6.tgz
R=$OUT/r; mkdir -p $R
(cd rt && timeout 150 ./runtime-gpu-test) > $R/rt.txt 2>&1; echo "rt rc=$?" | tee $R/steps.txt
tail -n 5 $R/rt.txt; grep -E "FAIL|rror" $R/rt.txt | head -5
nvidia-smi --query-gpu=name --format=csv
cd $OUT && tar czf r.tgz r && rm -rf r
