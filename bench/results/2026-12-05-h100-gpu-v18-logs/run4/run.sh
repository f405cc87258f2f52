#!/usr/bin/env bash
# Session 19, device call 4: V8B (the new default: T8B + bf16 boundary states in the fragment backwards) against
# T8B; ncu of V8B's GDN kernels (per-SASS source pages); fla side by side on this machine.
#   T8B --gpu-io=bf16 --gpu-fragments=8 --gpu-fragments-backward --gpu-fragments-prefetch (at 6a5ae2a)
#   V8B --gpu-io=bf16 (the defaults; boundary states in bf16 in the fragment backwards)
# Build: LINAC_GPU_OUT=out/gpu-V8B LINAC_GPU_FLAGS=--gpu-io=bf16 bash bench/gpu/build.sh; gpu-check and gpu-bench
#   stripped; tar czf bins7.tgz T8B V8B. fla: git archive of fla-org/flash-linear-attention bc3b101d's fla/ into
#   third_party/fla (carried).
cd "$(dirname "$0")" && tar xzf bins7.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san1-V8B 60 env LINAC_CUDA_VALUE_SPLITS=1 $CS --tool memcheck --print-limit 4 ./V8B/gpu-check --no-timing
step check1-V8B 60 env LINAC_CUDA_VALUE_SPLITS=1 ./V8B/gpu-check --no-timing
step check-V8B 60 ./V8B/gpu-check --no-timing
for r in 1 2; do for b in T8B V8B; do step bench-$b-$r 75 ./$b/gpu-bench --quick; done; done
NCU="ncu --clock-control none --set full --import-source no"
for dir in forward backward; do
  n=gdn-$dir
  step ncu-$n 70 $NCU -k regex:"linac_gated_deltanet_${dir}.*k128_v128" -s 2 -c 1 -o $R/$n ./V8B/gpu-bench --quick gated_deltanet
  ncu --import $R/$n.ncu-rep --page details > $R/$n-details.txt 2>&1
  ncu --import $R/$n.ncu-rep --page source --csv --print-source sass > $R/$n-source.csv 2>&1
  rm -f $R/$n.ncu-rep
done
step fla 150 bash -c "cd ../../.. && python3 bench/fla_side_by_side.py"
for f in $R/san*.txt $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for n in gdn-forward gdn-backward; do echo "== $n"; grep -E "Duration|Issue Slots Busy|Registers Per|Achieved Occ" $R/$n-details.txt | head -5; done
cat $R/fla.txt | tail -8
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
