#!/usr/bin/env bash
# Session 20, device call 2: Y8B (ldmatrix fragments, one untransposed operand copy a tile, bf16x2-packed 32-bit copy
# stores) against W8B (HEAD dc2f5ae's default); ncu of Y8B's GDN kernels.
#   W8B --gpu-io=bf16 at dc2f5ae;  Y8B --gpu-io=bf16 with the ldmatrix change
# Build: LINAC_GPU_OUT=out/gpu-Y8B LINAC_GPU_FLAGS=--gpu-io=bf16 bash bench/gpu/build.sh; tar czf bins9.tgz W8B Y8B.
cd "$(dirname "$0")" && tar xzf bins9.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san1-Y8B 60 env LINAC_CUDA_VALUE_SPLITS=1 $CS --tool memcheck --print-limit 4 ./Y8B/gpu-check --no-timing
step check1-Y8B 60 env LINAC_CUDA_VALUE_SPLITS=1 ./Y8B/gpu-check --no-timing
step check-Y8B 60 ./Y8B/gpu-check --no-timing
if grep -q "match the fp64" $R/check1-Y8B.txt; then
  for r in 1 2; do for b in W8B Y8B; do step bench-$b-$r 75 ./$b/gpu-bench --quick; done; done
  NCU="ncu --clock-control none --set full --import-source no"
  for dir in forward backward; do
    n=gdn-$dir
    step ncu-$n 70 $NCU -k regex:"linac_gated_deltanet_${dir}.*k128_v128" -s 2 -c 1 -o $R/$n ./Y8B/gpu-bench --quick gated_deltanet
    ncu --import $R/$n.ncu-rep --page details > $R/$n-details.txt 2>&1
    ncu --import $R/$n.ncu-rep --page source --csv --print-source sass > $R/$n-source.csv 2>&1
    rm -f $R/$n.ncu-rep
  done
fi
for f in $R/san*.txt $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; tail -n 1 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for n in gdn-forward gdn-backward; do echo "== $n"; grep -E "Duration|Issue Slots Busy|Registers Per|Achieved Occ" $R/$n-details.txt | head -5; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
