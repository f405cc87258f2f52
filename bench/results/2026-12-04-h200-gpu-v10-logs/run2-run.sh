#!/usr/bin/env bash
# Device run 2 (session 11): shared-memory traffic and bank conflicts of the v9 kernels (ncu metrics).
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
M=smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg,gpu__time_duration.sum,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,lts__t_bytes.sum,smsp__average_warp_latency_issue_stalled_barrier.ratio
for k in gated_deltanet_forward_chunk32_k128 gated_deltanet_backward_chunk32_k128 gla_forward_chunk16_k128 gla_backward_chunk16_k128; do
  ex=${k%%_forward*}; ex=${ex%%_backward*}
  timeout 100 ncu --clock-control none --metrics $M -k regex:$k -c 1 ./v9/gpu-bench --quick $ex > $R/ncu-$k.txt 2>&1
  echo "$k rc=$?"
done
