#!/usr/bin/env bash
# Session 18 device run 2: ncu of G8B's GDN and GLA kernels, reports as text (details, raw, per-SASS source) in one tgz.
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/p; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv > $R/gpu.txt 2>&1
NCU="ncu --clock-control none --set full --import-source no"
for ex in gated_deltanet gla; do for dir in forward backward; do
  n=$ex-$dir
  timeout 90 $NCU -k regex:"linac_${ex}_${dir}.*k128_v128" -s 2 -c 1 -o $R/$n ./G8B/gpu-bench --quick $ex > $R/$n.log 2>&1
  ncu --import $R/$n.ncu-rep --page details > $R/$n-details.txt 2>&1
  ncu --import $R/$n.ncu-rep --page raw --csv > $R/$n-raw.csv 2>&1
  ncu --import $R/$n.ncu-rep --page source --csv --print-source sass > $R/$n-source.csv 2>&1
  rm -f $R/$n.ncu-rep
  echo "== $n"; grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|Stall|stall" $R/$n-details.txt | head -12
done; done
cd $OUT && tar czf prof.tgz p && rm -rf p && ls -la prof.tgz
