#!/usr/bin/env bash
# Session 20, device call 3: ncu of Y8B's per-key kernels (GLA forward and backward, RWKV-6 backward; chunk 16,
# K = V = 128), per-SASS source pages summarized. Binaries: bins9.tgz (see run2.sh).
cd "$(dirname "$0")" && tar xzf bins9.tgz
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt
NCU="ncu --clock-control none --set full --import-source no"
for spec in gla:backward gla:forward rwkv6:backward; do
  e=${spec%:*}; dir=${spec#*:}; n=$e-$dir
  timeout 90 $NCU -k regex:"linac_${e}_${dir}_chunk16_k128_v128" -s 2 -c 1 -o $R/$n ./Y8B/gpu-bench --quick $e > $R/ncu-$n.txt 2>&1
  ncu --import $R/$n.ncu-rep --page details > $R/$n-details.txt 2>&1
  ncu --import $R/$n.ncu-rep --page source --csv --print-source sass > $R/$n-source.csv 2>&1
  rm -f $R/$n.ncu-rep
  grep -E "Duration|Issue Slots Busy|Registers Per|Achieved Occ|Local Memory Spill" $R/$n-details.txt | head -6
done
cat $R/gpu.txt
cd $OUT && tar czf r.tgz r && rm -rf r
