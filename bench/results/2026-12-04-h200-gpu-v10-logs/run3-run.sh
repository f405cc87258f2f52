#!/usr/bin/env bash
# Device run 3 (session 11): row padding by fragment pattern (--gpu-pad-by-pattern) against v9; conflicts by ncu.
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 400 - t0 + START )); if (( left < 20 )); then echo "$name skipped" >> $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
M=l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed,gpu__time_duration.sum
step check-pp 100 ./pp/gpu-check --no-timing
step check1-pp 100 env LINAC_CUDA_VALUE_SPLITS=1 ./pp/gpu-check --no-timing
step bench-pp 60 ./pp/gpu-bench --quick
step bench-v9 60 ./v9/gpu-bench --quick
step bench-pp-64 40 ./pp/gpu-bench --quick --head-dim 64
for k in gated_deltanet_forward_chunk32_k128 gated_deltanet_backward_chunk32_k128 gla_forward_chunk16_k128 gla_backward_chunk16_k128; do
  ex=${k%%_forward*}; ex=${ex%%_backward*}
  step ncu-pp-$k 60 ncu --clock-control none --metrics $M -k regex:$k -c 1 ./pp/gpu-bench --quick $ex
done
