#!/usr/bin/env bash
# Session 15 device run 1: per-token gradients stored once (O) against v11 (base), and O with session 13's
# latency placement + unrolled global k loops (LUO); all --gpu-io=bf16. Builds (here, about 4 minutes each):
#   LINAC_LINACC=<linacc of a28f28c> LINAC_GPU_OUT=out/gpu-base LINAC_GPU_FLAGS="--gpu-io=bf16" bash bench/gpu/build.sh
#   LINAC_GPU_OUT=out/gpu-O LINAC_GPU_FLAGS="--gpu-io=bf16" bash bench/gpu/build.sh
#   LINAC_GPU_OUT=out/gpu-LUO LINAC_GPU_FLAGS="--gpu-io=bf16 --gpu-placement=latency --gpu-unroll-global-k=4" \
#     bash bench/gpu/build.sh
# staged as out/dev/s15r1/{base,O,LUO}/{gpu-check,gpu-bench} (stripped, bins.tgz), run with carry ["out/dev/s15r1"].
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( 540 - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
step check-O 60 ./O/gpu-check --no-timing --repeat 2
step check1-O 60 env LINAC_CUDA_VALUE_SPLITS=1 ./O/gpu-check --no-timing
step check1-LUO 60 env LINAC_CUDA_VALUE_SPLITS=1 ./LUO/gpu-check --no-timing
step bench-base-1 70 ./base/gpu-bench --quick
step bench-O-1 70 ./O/gpu-bench --quick
step bench-LUO-1 70 ./LUO/gpu-bench --quick
step bench-base-2 70 ./base/gpu-bench --quick
step bench-O-2 70 ./O/gpu-bench --quick
step bench-LUO-2 70 ./LUO/gpu-bench --quick
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sectors_op_red.sum,lts__t_sectors_op_atom.sum,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed
for b in base O; do for k in gla_backward_chunk16_k128 gated_deltanet_backward_chunk32_k128; do
  ex=${k%%_backward*}
  step ncu-$b-$k 40 ncu --clock-control none --metrics $M -k regex:$k -c 1 ./$b/gpu-bench --quick $ex
done; done
k=gla_backward_chunk16_k128
step sass-O-$k 90 sh -c "ncu --clock-control none --section SourceCounters --section WarpStateStats -k regex:$k -c 1 --page source --print-source sass --csv ./O/gpu-bench --quick gla > $R/sass-O-$k.csv; gzip -9 $R/sass-O-$k.csv"
step b256-base 45 ./base/gpu-bench --quick --head-dim 256 gated_deltanet gla simple_gla
step b256-O 45 ./O/gpu-bench --quick --head-dim 256 gated_deltanet gla simple_gla
step bench-O-z4 40 env LINAC_CUDA_VALUE_SPLITS=4 ./O/gpu-bench --quick gated_deltanet gla simple_gla
step bench-O-z2 40 env LINAC_CUDA_VALUE_SPLITS=2 ./O/gpu-bench --quick gated_deltanet gla simple_gla
for f in bench-base-1 bench-O-1 bench-LUO-1 bench-base-2 bench-O-2 bench-LUO-2 b256-base b256-O bench-O-z4 bench-O-z2; do echo "== $f"; grep -E "^\S+ +[0-9]" $R/$f.txt | head -10; done
for f in check-O check1-O check1-LUO; do echo "== $f"; grep -E "FAIL|mismatch|error" $R/$f.txt | head -5; tail -1 $R/$f.txt; done
for f in $R/ncu-*.txt; do echo "== $f"; grep -E "^\s+(gpu__|dram__|lts__|smsp__|sm__|l1tex__)" $f; done
cat $R/steps.txt
