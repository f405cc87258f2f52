#!/usr/bin/env bash
# Device run 6 (session 11): per-instruction shared-memory wavefronts of the v10 GDN forward and backward (ncu source view).
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
for k in gated_deltanet_forward_chunk32_k128 gated_deltanet_backward_chunk32_k128; do
  timeout 120 ncu --clock-control none --section SourceCounters --section WarpStateStats -k regex:$k -c 1 --page source --print-source sass --csv ./v10/gpu-bench --quick gated_deltanet > $R/$k.csv 2>&1
  echo "$k rc=$?"; gzip -9 $R/$k.csv
done
ls -la $R
