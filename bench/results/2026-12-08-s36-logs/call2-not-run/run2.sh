#!/usr/bin/env bash
# Session 36 call 2, staged and not run (no device was lent in session 36): where the in-order Gated DeltaNet
# backward's warps wait, by tile op (the SASS split at its barriers: bench/gpu/sass_segments.py), for the default
# (F) and the right-looking substitution (R) and the interleaved split terms (I): whether ptxas had already
# interleaved the left-looking solve's rows (then F's solve segments show no more dependency stalls than R's).
# Builds and bins.tgz as call 1 (gpu-F, gpu-R, gpu-I); run `bash out/dev/sNN/call2/run2.sh` carrying out/dev/sNN.
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here" && tar xzf bins.tgz
root="$here/../../../.."
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
for b in F R I; do
  timeout 150 ncu --clock-control none --section SourceCounters --page source --print-source sass --csv \
    -k regex:"^linac_gated_deltanet_backward_chunk32_k128_v128" -c 1 ./gpu-$b/gpu-bench --quick gated_deltanet \
    > $OUT/source-$b.csv 2>&1
  echo "== $b"; python3 "$root/bench/gpu/sass_segments.py" $OUT/source-$b.csv 12 | head -40
  gzip -f $OUT/source-$b.csv
done
