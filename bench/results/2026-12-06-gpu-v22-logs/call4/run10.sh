#!/usr/bin/env bash
# Session 23, device call 4: the gradient tails of the other examples with T7 (e8131d4's kernels), one value slice,
# "strong K=V=64" and "K=V=128": 4 processes x 100 repeats (30 s cap) per example and case (fresh inputs every repeat).
cd "$(dirname "$0")" && tar xzf bins7.tgz
R=$OUT/r; mkdir -p $R
for e in deltanet simple_gla retnet gla rwkv6 hgrn2; do for c in "strong K=V=64" "K=V=128"; do
  tag=$e-$(echo $c | tr -cd 'A-Za-z0-9')
  for p in 1 2 3 4; do LINAC_CUDA_VALUE_SPLITS=1 timeout 30 ./T7/gpu-check --no-timing --repeat 100 --only "$e $c" > $R/$tag-$p.txt 2>&1 & done; wait
  cat $R/$tag-*.txt | awk -v t=$tag -v e=$e '$1==e && /(strong|K=V)/{n++; if ($0 ~ /FAIL/) f++; v=$(NF); if ($NF=="FAIL") v=$(NF-1); print v > "/dev/stderr"} END{print t, "runs", n, "fails", f+0}' 2>$R/$tag.vals
  sort -g $R/$tag.vals | awk '{a[NR]=$1} END{print "  median", a[int(NR/2)], "p99", a[int(NR*0.99)], "max", a[NR]}'
  grep -h "seed" $R/$tag-*.txt | head -3
done; done
nvidia-smi --query-gpu=name --format=csv
cd $OUT && tar czf r.tgz r && rm -rf r
