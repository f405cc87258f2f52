#!/usr/bin/env bash
# Session 25, device call 5: M2 = per-key gated_matmul whose two gates are one tile (mask lower: GLA, HGRN-2)
# with telescoped pair factors (one step table per gate tile shared by the product and its transpose, one
# exponential a row and channel; a running product along each value's row, 1 on the diagonal) against F2 (HEAD
# fad8d8d's kernels). M1 (call 3) had a table per product (one more barrier) and a start exponential a value.
# Build: LINAC_GPU_OUT=out/gpu-M2 LINAC_GPU_FLAGS=--gpu-io=bf16 bash bench/gpu/build.sh with the patched linacc.
# Checks (compute-sanitizer one slice, gpu-check both modes), timing two rounds, then fresh-input tails of the
# per-key examples' strong cases (one slice, 4 processes x N).
cd "$(dirname "$0")" && tar xzf bins5.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san1-M2 100 env LINAC_CUDA_VALUE_SPLITS=1 $CS --tool memcheck --print-limit 4 ./M2/gpu-check --no-timing
step check1-M2 50 env LINAC_CUDA_VALUE_SPLITS=1 ./M2/gpu-check --no-timing
step check-M2 50 ./M2/gpu-check --no-timing
EX="gla hgrn2 rwkv6"
for r in 1 2; do
for v in F2 M2; do step bench-$v-$r 60 ./$v/gpu-bench --quick $EX; done
done
for c in "gla strong K=V=64:100" "hgrn2 strong K=V=64:100" "gla strong decay:100"; do
  name=${c%:*}; n=${c##*:}; tag=M2-$(echo $name | tr -cd 'A-Za-z0-9')
  t0=$(date +%s); (( t0 - START > ${BUDGET:-540} - 60 )) && { echo "$tag skipped" >> $R/tail.txt; continue; }
  for p in 1 2 3 4; do LINAC_CUDA_VALUE_SPLITS=1 timeout 50 ./M2/gpu-check --no-timing --repeat $n --only "$name" > $R/$tag-$p.txt 2>&1 & done; wait
  cat $R/$tag-*.txt | awk -v t=$tag '/^(gla|rwkv6|hgrn2)/{n++; if ($0 ~ /FAIL/) f++; v=$(NF); if ($NF=="FAIL") v=$(NF-1); print v > "/dev/stderr"} END{print t, "runs", n, "fails", f+0}' 2>$R/$tag.vals | tee -a $R/tail.txt
  sort -g $R/$tag.vals | awk '{a[NR]=$1} END{print "  median", a[int(NR/2)], "p99", a[int(NR*0.99)], "max", a[NR]}' | tee -a $R/tail.txt
done
for f in $R/san*.txt $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; command tail -n 2 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
cat $R/gpu.txt $R/steps.txt $R/tail.txt
cd $OUT && tar czf r.tgz r && rm -rf r
