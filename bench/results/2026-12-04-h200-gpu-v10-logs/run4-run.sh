#!/usr/bin/env bash
# Device run 4 (session 11): padding by pattern with slots shared across paddings (pp2), plus 2 x 4 warp tiles (pw).
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 420 - t0 + START )); if (( left < 20 )); then echo "$name skipped" >> $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
M=l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed,gpu__time_duration.sum
step check-pp2 100 ./pp2/gpu-check --no-timing
step check1-pp2 100 env LINAC_CUDA_VALUE_SPLITS=1 ./pp2/gpu-check --no-timing
step check-pw 100 ./pw/gpu-check --no-timing
step check1-pw 100 env LINAC_CUDA_VALUE_SPLITS=1 ./pw/gpu-check --no-timing
step bench-pp2 60 ./pp2/gpu-bench --quick
step bench-pw 60 ./pw/gpu-bench --quick
step bench-v9 60 ./v9/gpu-bench --quick
step bench-pp2-64 40 ./pp2/gpu-bench --quick --head-dim 64
step bench-pw-64 40 ./pw/gpu-bench --quick --head-dim 64
for v in pp2 pw; do for k in gated_deltanet_forward_chunk32_k128 gated_deltanet_backward_chunk32_k128; do
  step ncu-$v-$k 40 ncu --clock-control none --metrics $M -k regex:$k -c 1 ./$v/gpu-bench --quick gated_deltanet
done; done
