#!/usr/bin/env bash
# Session 25, device call 4: ncu --set full of M1's and F2's GLA backward (chunk 16): why telescoped factors
# cost 6 ms (call 3). Binaries: bins3.tgz (run3.sh's header).
cd "$(dirname "$0")" && tar xzf bins3.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
NCU="ncu --clock-control none --set full --import-source no"
prof() { local n=$1 bin=$2 ex=$3 re=$4
  step ncu-$n 90 $NCU -k regex:"$re" -s 2 -c 1 -o $R/$n ./$bin/gpu-bench --quick $ex
  [ -f $R/$n.ncu-rep ] || return
  ncu --import $R/$n.ncu-rep --page details > $R/$n-details.txt 2>&1
  ncu --import $R/$n.ncu-rep --page source --csv --print-source sass > $R/$n-source.csv 2>&1
  rm -f $R/$n.ncu-rep
  { echo "##### $n"; grep -E "Duration|Issue Slots Busy|Local Memory Spill|Warp Cycles Per Issued|Executed Ipc A|Executed Instructions  " $R/$n-details.txt | head -10; python3 ncu_summary.py ops $R/$n-source.csv 2>/dev/null | head -16; python3 ncu_summary.py regions $R/$n-source.csv 2>/dev/null | head -14; } >> $R/summary.txt 2>&1
  gzip $R/$n-source.csv
}
prof gla-bwd-M1 M1 gla "linac_gla_backward_chunk16_k128_v128"
prof gla-bwd-F2 F2 gla "linac_gla_backward_chunk16_k128_v128"
cat $R/summary.txt; cat $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
