#!/usr/bin/env bash
# seeds.sh BIN: the three replay seeds of the GDN gate-gradient defect, one value slice
for s in 5092371406438289095:"gated_deltanet strong K=V=64" 10046267551694400660:"gated_deltanet K=V=128" 10596105325833055410:"gated_deltanet strong K=V=64"; do
  echo "== $1 seed ${s%%:*}"; LINAC_SEED=${s%%:*} LINAC_CUDA_VALUE_SPLITS=1 ./$1/gpu-check --no-timing --only "${s#*:}" | grep -E "^gated|match"
done
