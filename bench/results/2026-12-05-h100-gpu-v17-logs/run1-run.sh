#!/usr/bin/env bash
# Session 18 device run: confirm G8B against base (alternating rounds), profile G8B's GDN and GLA kernels and
# S8B's GDN forward phases (per-kernel time), dump SASS of the profiled cubins.
cd "$(dirname "$0")" && tar xzf bins.tgz
R=$OUT/r; mkdir -p $R
START=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); local left=$(( ${BUDGET:-540} - t0 + START )); if (( left < 20 )); then echo "$name skipped" | tee -a $R/steps.txt; return; fi; (( lim > left )) && lim=$left; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv; uname -r; which ncu cuobjdump; } > $R/gpu.txt 2>&1
for c in cubin/*.cubin; do cuobjdump -sass $c | gzip > $R/$(basename $c .cubin).sass.gz; done
for r in 1 2; do for b in base G8B; do step bench-$b-$r 70 ./$b/gpu-bench --quick; done; done
NCU="ncu --clock-control none --set full --import-source no"
for ex in gated_deltanet gla; do for dir in forward backward; do
  step ncu-$ex-$dir 80 $NCU -k regex:"linac_${ex}_${dir}.*k128_v128" -s 2 -c 1 -o $R/ncu-$ex-$dir ./G8B/gpu-bench --quick $ex
  [ -f $R/ncu-$ex-$dir.ncu-rep ] && ncu --import $R/ncu-$ex-$dir.ncu-rep --page details > $R/ncu-$ex-$dir-details.txt 2>&1
done; done
step ncu-split-gdn 80 ncu --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy -k regex:"linac_gated_deltanet_.*k128_v128" -s 6 -c 6 ./S8B/gpu-bench --quick gated_deltanet
for f in $R/bench-*.txt; do echo "== $(basename $f)"; grep -E "^\S+ +[0-9]" $f | head -10; done
for f in $R/ncu-*-details.txt; do echo "== $(basename $f)"; grep -E "Duration|Registers Per|Achieved Occupancy|Memory Throughput|Compute \(SM\) Throughput|Local" $f | head -12; done
grep -E "linac_|Duration|Grid Size|Block Size" $R/ncu-split-gdn.txt | head -40
cat $R/gpu.txt $R/steps.txt
