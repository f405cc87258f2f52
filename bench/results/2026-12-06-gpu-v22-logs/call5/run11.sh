#!/usr/bin/env bash
# Session 23, device call 5: runtime-gpu-test (the runtime's GPU mixer training through the training pair: fp32
# I/O, chunk 64, the shared-memory lowering with this session's scalar factors) built at d585e12.
# Build: ninja -C build runtime-gpu-test; rt/ = build/bin/runtime-gpu-test and build/bin/novel-kernels/.
cd "$(dirname "$0")" && tar xzf bins11.tgz
R=$OUT/r; mkdir -p $R
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
(cd rt && timeout 120 ./runtime-gpu-test) > $R/rt.txt 2>&1; echo "rt rc=$?" | tee $R/steps.txt
tail -n 5 $R/rt.txt; grep -E "FAIL|rror" $R/rt.txt | head -5
nvidia-smi --query-gpu=name --format=csv
cd $OUT && tar czf r.tgz r && rm -rf r
