#!/usr/bin/env bash
cd "$(dirname "$0")" && tar xzf ../s18/bins5.tgz
R=$OUT/r; mkdir -p $R
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
echo "sanitizer: $CS" > $R/san.txt
LINAC_CUDA_VALUE_SPLITS=1 timeout 200 $CS --tool memcheck --print-limit 8 ./R8B/gpu-check --no-timing >> $R/san.txt 2>&1
echo "rc=$?" >> $R/san.txt
timeout 150 $CS --tool memcheck --print-limit 8 ./R8B/gpu-bench --quick retnet >> $R/san2.txt 2>&1
echo "rc=$?" >> $R/san2.txt
cd $OUT && tar czf r.tgz r && rm -rf r
