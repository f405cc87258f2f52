#!/usr/bin/env bash
# Session 17 device run (one call, for a scarce device; it supersedes v15's run1, whose questions it keeps).
#   base  v11 (a28f28c's linacc)                          O     the default since v14 (gradients stored once)
#   G16B  O + --gpu-fragments=16 --gpu-fragments-backward (register-resident forwards and backwards of every
#         matrix-state example, the per-key ones too; nvvm.maxnreg; commit e005b4b)
#   S16B  G16B + --gpu-split (the chunk-parallel split's before / chain / after kernels, all register-resident,
#         the chain computing its K^T V updates from chunk-sized frontier tiles; commit a9ca74c)
#   G8B, S8B  the same at 8 warps (255 registers a thread)
#   (G16B, S16B, G8B, S8B built at d06bf27 - exponentials for kept pairs only - G16B again at f223adf, same PTX;
#   all four configurations clean on the emulator in three modes.)
#   B4    O + --gpu-boundary-slices=4 (v14)             LUO   O + --gpu-placement=latency --gpu-unroll-global-k=4
# Built with `LINAC_GPU_OUT=out/gpu-X LINAC_GPU_FLAGS="--gpu-io=bf16 <flags>" bash bench/gpu/build.sh` (base:
# LINAC_LINACC=<a28f28c's linacc>), gpu-check and gpu-bench of each stripped into stage/X, `tar czf bins.tgz`;
# carried as out/dev/s17 (run.sh = this script). Results go under $OUT as each step ends.
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
# The fragment kernels are the fixed-size ones: one value slice reaches them at gpu-check's shapes.
for b in G16B S16B G8B S8B; do step check1-$b 40 env LINAC_CUDA_VALUE_SPLITS=1 ./$b/gpu-check --no-timing; done
# Most important first (a step that would not fit the budget is skipped): gpu-bench --quick took 30-60 s in v11.
for b in base G16B S16B O G8B S8B B4; do step bench-$b-1 60 ./$b/gpu-bench --quick; done
for b in base G16B; do step bench-$b-2 60 ./$b/gpu-bench --quick; done
step bench-LUO-1 60 ./LUO/gpu-bench --quick
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | head -10; done
for f in $R/check1-*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|error" $f | head -5; tail -1 $f; done
cat $R/gpu.txt $R/steps.txt
