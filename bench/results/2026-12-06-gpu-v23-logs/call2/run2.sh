#!/usr/bin/env bash
# Session 24, device call 2: ncu (--set full) of T7's GDN backward (chunk 32) and forward, GLA backward (chunk 16),
# and of Z16's two-slice GDN kernels (chunk 16, LINAC_CUDA_VALUE_SPLITS=2): why two blocks a multiprocessor did
# not help (call 1). Binaries: bins1.tgz (run1.sh's header).
cd "$(dirname "$0")" && tar xzf bins1.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
NCU="ncu --clock-control none --set full --import-source no"
prof() { # name binary example kernel-regex [env...]
  local n=$1 bin=$2 ex=$3 re=$4; shift 4
  step ncu-$n 110 env "$@" $NCU -k regex:"$re" -s 2 -c 1 -o $R/$n ./$bin/gpu-bench --quick $ex
  [ -f $R/$n.ncu-rep ] || return
  ncu --import $R/$n.ncu-rep --page details > $R/$n-details.txt 2>&1
  ncu --import $R/$n.ncu-rep --page source --csv --print-source sass > $R/$n-source.csv 2>&1
  rm -f $R/$n.ncu-rep
  { echo "##### $n"; grep -E "Duration|Issue Slots Busy|Registers Per|Achieved Occ|Local Memory Spill|Warp Cycles Per Issued|Shared Memory|L1/TEX Hit|Compute \(SM\) Th|Memory Throughput|Executed Ipc A" $R/$n-details.txt | head -14; python3 ncu_summary.py ops $R/$n-source.csv | head -22; python3 ncu_summary.py regions $R/$n-source.csv | head -30; } >> $R/summary.txt 2>&1
  gzip $R/$n-source.csv
}
prof gdn-bwd-T7 T7 gated_deltanet "linac_gated_deltanet_backward_chunk32_k128_v128" LINAC_X=1
prof gdn-bwd-Z16 Z16 gated_deltanet "linac_gated_deltanet_backward_chunk16_k128_v128_z2" LINAC_CUDA_VALUE_SPLITS=2
prof gdn-fwd-T7 T7 gated_deltanet "linac_gated_deltanet_forward_chunk32_k128_v128" LINAC_X=1
prof gdn-fwd-Z16 Z16 gated_deltanet "linac_gated_deltanet_forward_chunk16_k128_v128_z2" LINAC_CUDA_VALUE_SPLITS=2
prof gla-bwd-T7 T7 gla "linac_gla_backward_chunk16_k128_v128" LINAC_X=1
cat $R/summary.txt
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
