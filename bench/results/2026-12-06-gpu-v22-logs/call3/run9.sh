#!/usr/bin/env bash
# Session 23, device call 3: the dg tail. T7 (e8131d4's kernels) and T3 (89282b8's), one value slice, the GDN cases
# where the defect showed ("strong K=V=64", "K=V=128"): 4 processes x 250 repeats each per binary and case (fresh
# random inputs every repeat); counts of failures and the worst gradients.
cd "$(dirname "$0")" && tar xzf bins7.tgz
R=$OUT/r; mkdir -p $R
for b in T7 T3; do for c in "strong K=V=64" "K=V=128"; do
  tag=$b-$(echo $c | tr -cd 'A-Za-z0-9')
  for p in 1 2 3 4; do LINAC_CUDA_VALUE_SPLITS=1 timeout 100 ./$b/gpu-check --no-timing --repeat 250 --only "gated_deltanet $c" > $R/$tag-$p.txt 2>&1 & done; wait
  cat $R/$tag-*.txt | awk -v t=$tag '/^gated/{n++; if ($0 ~ /FAIL/) f++; v=$(NF); if ($NF=="FAIL") v=$(NF-1); print v > "/dev/stderr"} END{print t, "runs", n, "fails", f+0}' 2>$R/$tag.vals
  sort -g $R/$tag.vals | awk '{a[NR]=$1} END{print "  median", a[int(NR/2)], "p99", a[int(NR*0.99)], "p999", a[int(NR*0.999)], "max", a[NR]}'
  grep -h "dg .*seed" $R/$tag-*.txt | head -3
done; done
nvidia-smi --query-gpu=name --format=csv
cd $OUT && tar czf r.tgz r && rm -rf r
