"""Summaries of an ncu source page (ncu --import X.ncu-rep --page source --csv --print-source sass > X.csv).

  python3 ncu_summary.py ops X.csv            instructions and stall samples by SASS opcode
  python3 ncu_summary.py regions X.csv        by region between barriers (BAR), regions with >= 1% of samples
  python3 ncu_summary.py top X.csv 0,3,5      the most stalled instructions of those regions
"""
import collections
import csv
import re
import sys


def load(path):
    rows = list(csv.reader(open(path)))
    header, data = rows[1], rows[2:]
    col = {h: i for i, h in enumerate(header)}
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]

    def num(row, key):
        try:
            return float(row[col[key]].replace(",", ""))
        except ValueError:
            return 0.0

    def opcode(row):
        return re.sub(r"^@!?U?P\w+\s+", "", row[col["Source"]].strip()).split(" ")[0].split(".")[0]

    return data, col, reasons, num, opcode


def ops(path):
    data, _, reasons, num, opcode = load(path)
    samples = sum(num(r, "Warp Stall Sampling (All Samples)") for r in data)
    executed = sum(num(r, "Instructions Executed") for r in data)
    by = collections.defaultdict(lambda: [0.0, 0.0, collections.Counter()])
    for r in data:
        e = by[opcode(r)]
        e[0] += num(r, "Instructions Executed")
        e[1] += num(r, "Warp Stall Sampling (All Samples)")
        for k in reasons:
            e[2][k] += num(r, k)
    print("samples", samples, "instructions executed", executed)
    print("%-10s %8s %7s %7s  top reasons" % ("op", "instr%", "samp%", "s/ki"))
    for op, (n, s, c) in sorted(by.items(), key=lambda kv: -kv[1][1])[:22]:
        top = ", ".join("%s %.0f%%" % (k[6:], 100 * v / max(s, 1)) for k, v in c.most_common(3))
        print("%-10s %7.1f%% %6.1f%% %7.2f  %s" % (op, 100 * n / executed, 100 * s / samples, s / max(n, 1) * 1000, top))


def regions(path, wanted=None):
    data, col, reasons, num, opcode = load(path)
    samples = sum(num(r, "Warp Stall Sampling (All Samples)") for r in data)
    segs = [{"start": data[0][col["Address"]], "n": 0.0, "s": 0.0, "ops": collections.Counter(),
             "why": collections.Counter(), "lines": []}]
    for r in data:
        seg, op = segs[-1], opcode(r)
        n, s = num(r, "Instructions Executed"), num(r, "Warp Stall Sampling (All Samples)")
        seg["n"] += n
        seg["s"] += s
        seg["ops"][op] += n
        for k in reasons:
            seg["why"][k] += num(r, k)
        seg["lines"].append((s, r[col["Source"]].strip(), max(reasons, key=lambda k: num(r, k))))
        if op == "BAR":
            segs.append({"start": r[col["Address"]], "n": 0.0, "s": 0.0, "ops": collections.Counter(),
                         "why": collections.Counter(), "lines": []})
    total = sum(x["n"] for x in segs)
    if wanted is None:
        print("regions", len(segs), "total samples", samples)
        for i, sg in enumerate(segs):
            if sg["s"] / samples >= 0.01:
                print("%3d %s samp %5.1f%% instr %5.1f%%  %s" % (
                    i, sg["start"], 100 * sg["s"] / samples, 100 * sg["n"] / total,
                    " ".join("%s:%d" % (k, v / 1e6) for k, v in sg["ops"].most_common(6))))
        return
    for i in wanted:
        print("== region", i, segs[i]["why"].most_common(6))
        for s, src, why in sorted(segs[i]["lines"], reverse=True)[:12]:
            print("   %6d %-70s %s" % (s, src[:70], why))


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "ops":
        ops(path)
    elif mode == "regions":
        regions(path)
    else:
        regions(path, [int(x) for x in sys.argv[3].split(",")])
