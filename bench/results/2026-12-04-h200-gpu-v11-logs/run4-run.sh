#!/usr/bin/env bash
# Session 12 device run 4: ordered by level in every kernel (all) against the default (fit), interleaved in one
# run; then ncu resources and stall reasons of the GDN forward (fit) and backward (all).
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 450 - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
step check-all 100 ./all/gpu-check --no-timing
E="gated_deltanet deltanet retnet simple_gla gla hgrn2 rwkv6"
step bench-fit-a 60 ./fit/gpu-bench --quick $E
step bench-all-a 60 ./all/gpu-bench --quick $E
step bench-fit-b 60 ./fit/gpu-bench --quick $E
step bench-all-b 60 ./all/gpu-bench --quick $E
M=l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,smsp__average_warp_latency_issue_stalled_barrier.ratio,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
step ncu-fwd 80 ncu --clock-control none --metrics $M --section WarpStateStats -k regex:gated_deltanet_forward_chunk32_k128 -c 1 ./fit/gpu-bench --quick gated_deltanet
step ncu-bwd 100 ncu --clock-control none --metrics $M --section WarpStateStats -k regex:gated_deltanet_backward_chunk32_k128 -c 1 ./all/gpu-bench --quick gated_deltanet
for f in bench-fit-a bench-all-a bench-fit-b bench-all-b; do echo "== $f"; grep -E "^\S+ +[0-9]" $R/$f.txt | awk '{print $1, $4, $5}'; done
for f in ncu-fwd ncu-bwd; do echo "== $f"; grep -E "duration|pct|bytes|ratio|conflicts|wavefronts|Stall|Warp Cycles|Issued" $R/$f.txt | head -24; done
echo "== check"; tail -1 $R/check-all.txt
