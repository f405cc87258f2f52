#!/usr/bin/env bash
# Session 26, device call 3: (a) runtime-gpu-test built at this session's code (the runtime's kernels: fp32 I/O,
# chunk 64, the shared-memory lowering; GLA-class recurrences now with the pairs kernel by default), rt/ =
# build/bin/runtime-gpu-test and build/bin/novel-kernels/ (ninja -C build). (b) v24's staged call 7: the same
# upper bound as v24 call 6 for Gated DeltaNet, simple GLA and DeltaNet: NP = an experiment build whose backward
# kernels replace every gated pair op by a zero tile (wrong gradients, timing only; the patch is
# 2026-12-06-gpu-v24-logs/call6/nopairs.patch), against F2 (v23's default kernels).
cd "$(dirname "$0")" && tar xzf bins3.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
step rt 150 bash -c "cd rt && ./runtime-gpu-test"
EX="gated_deltanet simple_gla deltanet"
for v in F2 NP; do step bench-$v 40 ./$v/gpu-bench --quick $EX; done
NCU="ncu --clock-control none --metrics gpu__time_duration.sum"
for v in F2 NP; do step ncu-$v 60 $NCU -k regex:"backward_chunk32_k128" -c 6 ./$v/gpu-bench --quick $EX; done
echo "== rt"; tail -n 5 $R/rt.txt; grep -E "FAIL|rror" $R/rt.txt | head -5
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | awk '{print $1, $4, $5}'; done
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "linac_|gpu__time_duration" $f | sed 's/(.*//' | paste - - | awk '{print $1, $(NF)}' | head -16; done
cat $R/gpu.txt $R/steps.txt
cd $OUT && tar czf r.tgz r && rm -rf r
