#!/usr/bin/env bash
# Session 31, device call 5: why the ftz intrinsic (I) and the saved solves (X) slow Gated DeltaNet's backward:
# ncu --set full of one launch of its chunk-32 K = V = 128 backward in D (c31219b's default), I and X.
cd "$(dirname "$0")" && for t in bins*.tgz; do tar xzf $t; done
R=$OUT/r; mkdir -p $R
START=$(date +%s); BUDGET=${BUDGET:-300}
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name --format=csv > $R/gpu.txt 2>&1
for v in D X I; do step full-$v 100 ncu --set full --import-source no -k regex:"linac_gated_deltanet_backward_chunk32_k128_v128" -c 1 ./$v/gpu-bench --quick gated_deltanet; done
for v in D X I; do step stall-$v 60 ncu --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_local.sum" -k regex:"linac_gated_deltanet_backward_chunk32_k128_v128" -c 1 ./$v/gpu-bench --quick gated_deltanet; done
for v in D X I; do echo "== stalls $v"; grep -E "smsp__|sm__|l1tex__" $R/stall-$v.txt | awk '{print $1, $NF}' | sort -k2 -g -r | head -14; done
for v in D X I; do echo "== $v"; grep -E "Duration|Executed Instructions  |Issue Slots Busy|Registers Per|Local Memory Spill|Achieved Occupancy|Stall|L1/TEX Hit|L2 Hit|DRAM Throughput|Memory Throughput|Executed Ipc A" $R/full-$v.txt | head -30; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
