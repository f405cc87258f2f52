#!/usr/bin/env bash
# Session 33, device call 3 (one GPU; issue #7): linac-train-cuda's data-parallel paths on one GPU, never run
# before. (a) 1 rank, (b) 2 ranks sharing GPU 0 with host sums (--reduce host, the default), (c) 1 rank through
# NCCL (libnccl.so.2 from the machine's torch), (d) 2 NCCL ranks on a 1-GPU machine: must fail with a clear
# error. runtime/configs/tiny-hybrid.cfg (150 steps) with --device cuda; the losses of each log.csv compared.
cd "$(dirname "$0")"
ROOT=$(cd ../../../.. && pwd)
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt; cat $R/gpu.txt
NCCL=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null)
[ -z "$NCCL" ] && NCCL=$(dirname "$(find / -name 'libnccl.so.2' 2>/dev/null | head -1)")
echo "nccl lib: $NCCL" | tee $R/nccl-path.txt
T=./linac-train-cuda; CFG=$ROOT/runtime/configs/tiny-hybrid.cfg
run() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); (cd $ROOT && timeout $lim "$@") > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt; }
run r1 120 $PWD/$T train $CFG --device cuda --out $R/runs/r1
run r2 120 $PWD/$T train $CFG --device cuda --out $R/runs/r2 --ranks 2
run n1 120 env LD_LIBRARY_PATH=$NCCL $PWD/$T train $CFG --device cuda --out $R/runs/n1 --ranks 1 --reduce nccl
run n2 30 env LD_LIBRARY_PATH=$NCCL $PWD/$T train $CFG --device cuda --out $R/runs/n2 --ranks 2 --reduce nccl
for v in r1 r2 n1 n2; do echo "== $v"; tail -n 4 $R/$v.txt; done
python3 - $R/runs <<'PY'
import csv, sys, os
base = sys.argv[1]
def losses(run):
    p = os.path.join(base, run, "log.csv")
    if not os.path.exists(p): return None
    return [float(r["loss"]) for r in csv.DictReader(open(p))]
ref = losses("r1")
for run in ["r2", "n1"]:
    x = losses(run)
    if ref is None or x is None: print(run, "no log"); continue
    n = min(len(ref), len(x)); d = max(abs(a - b) for a, b in zip(ref[:n], x[:n]))
    print(f"{run}: {len(x)} steps (r1 {len(ref)}), max |loss - r1| {d:.3g}, last {x[n-1]:.5f} vs {ref[n-1]:.5f}")
PY
cat $R/steps.txt
rm -rf $R/runs/*/model.ckpt
cd $OUT && tar czf r.tgz r && rm -rf r
