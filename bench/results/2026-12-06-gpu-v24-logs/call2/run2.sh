#!/usr/bin/env bash
# Session 25, device call 2: ncu --set full of the split's GDN phase kernels (S256, bins1.tgz; run1.sh's header):
# why each phase takes as long as the whole in-order kernel.
cd "$(dirname "$0")" && tar xzf bins1.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
NCU="ncu --clock-control none --set full --import-source no"
prof() { # name binary example kernel-regex
  local n=$1 bin=$2 ex=$3 re=$4; shift 4
  step ncu-$n 90 $NCU -k regex:"$re" -s 2 -c 1 -o $R/$n ./$bin/gpu-bench --quick $ex
  [ -f $R/$n.ncu-rep ] || return
  ncu --import $R/$n.ncu-rep --page details > $R/$n-details.txt 2>&1
  ncu --import $R/$n.ncu-rep --page source --csv --print-source sass > $R/$n-source.csv 2>&1
  rm -f $R/$n.ncu-rep
  { echo "##### $n"; grep -E "Duration|Issue Slots Busy|Registers Per|Achieved Occ|Local Memory Spill|Warp Cycles Per Issued|Shared Memory|L1/TEX Hit|Compute \(SM\) Th|Memory Throughput|Executed Ipc A|Block Limit|Waves Per SM|Executed Instructions  " $R/$n-details.txt | head -24; python3 ncu_summary.py ops $R/$n-source.csv | head -22; python3 ncu_summary.py regions $R/$n-source.csv | head -20; } >> $R/summary.txt 2>&1
  gzip $R/$n-source.csv
}
prof fbefore S256 gated_deltanet "gated_deltanet_forward_chunk32_before_k128"
prof fchain S256 gated_deltanet "gated_deltanet_forward_chunk32_chain_k128"
prof fafter S256 gated_deltanet "gated_deltanet_forward_chunk32_after_k128"
prof bafter S256 gated_deltanet "gated_deltanet_backward_chunk32_after_k128"
prof bchain S256 gated_deltanet "gated_deltanet_backward_chunk32_chain_k128"
cat $R/summary.txt
cat $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
