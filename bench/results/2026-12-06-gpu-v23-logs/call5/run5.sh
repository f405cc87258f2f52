#!/usr/bin/env bash
# Session 24, device call 5: F2 = this session's kernels (exact tile simplifications; fast exponentials in the
# backwards without per-key pairs; two-slice copies through the fragment lowering). Build: LINAC_LINACC=<linacc of
# these sources> LINAC_GPU_OUT=out/gpu-F2 LINAC_GPU_FLAGS=--gpu-io=bf16 bash bench/gpu/build.sh (PTX byte-identical
# to the committed linacc's). Checks, then F2 against T7 (v22's kernels) two rounds, then the dg tail of the GDN
# "strong K=V=64" case (one slice, 4 processes x 150 fresh inputs) and of simple GLA's (4 x 100).
cd "$(dirname "$0")" && tar xzf bins5.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
step san1-F2 100 env LINAC_CUDA_VALUE_SPLITS=1 $CS --tool memcheck --print-limit 4 ./F2/gpu-check --no-timing
step check1-F2 50 env LINAC_CUDA_VALUE_SPLITS=1 ./F2/gpu-check --no-timing
step check-F2 50 ./F2/gpu-check --no-timing
EX="gated_deltanet deltanet simple_gla retnet gla rwkv6 hgrn2"
for r in 1 2; do
for v in T7 F2; do step bench-$v-$r 70 ./$v/gpu-bench --quick $EX; done
done
tail() { command tail "$@"; }
for c in "gated_deltanet strong K=V=64:150" "simple_gla strong K=V=64:100"; do
  name=${c%:*}; n=${c##*:}; tag=F2-$(echo $name | tr -cd 'A-Za-z0-9')
  for p in 1 2 3 4; do LINAC_CUDA_VALUE_SPLITS=1 timeout 100 ./F2/gpu-check --no-timing --repeat $n --only "$name" > $R/$tag-$p.txt 2>&1 & done; wait
  cat $R/$tag-*.txt | awk -v t=$tag '/^(gated|simple)/{n++; if ($0 ~ /FAIL/) f++; v=$(NF); if ($NF=="FAIL") v=$(NF-1); print v > "/dev/stderr"} END{print t, "runs", n, "fails", f+0}' 2>$R/$tag.vals | tee -a $R/tail.txt
  sort -g $R/$tag.vals | awk '{a[NR]=$1} END{print "  median", a[int(NR/2)], "p99", a[int(NR*0.99)], "max", a[NR]}' | tee -a $R/tail.txt
done
for f in $R/san*.txt $R/check*.txt; do echo "== $(basename $f)"; grep -E "FAIL|mismatch|rror|Invalid|at linac" $f | head -5; command tail -n 2 $f; done
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
cat $R/gpu.txt $R/steps.txt $R/tail.txt
cd $OUT && tar czf r.tgz r && rm -rf r
