#!/usr/bin/env bash
# Session 25, device call 6: an upper bound, not a kernel: NP = F2's linacc with an experiment switch
# (LINAC_EXP_NOPAIRS, never committed; the patch is kept beside this script as nopairs.patch) that replaces every gated pair op of the backward kernels (gated_dot,
# gated_matmul, gate_grad) by a zero tile before simplification: the backward without its intra-chunk pair work
# (wrong gradients; timing only). Build: LINAC_EXP_NOPAIRS=1 LINAC_LINACC=<patched linacc> LINAC_GPU_OUT=out/gpu-NP
# LINAC_GPU_FLAGS=--gpu-io=bf16 bash bench/gpu/build.sh. ptxas spills of the K = V = 128 backwards: GLA 932 -> 0,
# HGRN-2 1096 -> 104, RWKV-6 1500 -> 192. Timing F2 against NP, two rounds, and the backward kernels' durations.
cd "$(dirname "$0")" && tar xzf bins6.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
EX="gla hgrn2 rwkv6"
for r in 1 2; do
for v in F2 NP; do step bench-$v-$r 40 ./$v/gpu-bench --quick $EX; done
done
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
for v in F2 NP; do step ncu-$v 60 $NCU -k regex:"backward_chunk16_k128" -c 6 ./$v/gpu-bench --quick $EX; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "^\s+linac_|duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF-1), $NF}'; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
