#!/usr/bin/env python3
"""Per-tile-op profile of a generated kernel without line info.

Reads the CSV of `ncu --page source --print-source sass --csv` (with the SourceCounters section collected) and
splits the kernel's SASS at its barriers (BAR.SYNC): every tile op's loop ends in one, so the segments follow the
tile ops in program order. Prints, per segment, the instructions, the executed instructions, the warp stall
samples and the shared-memory wavefronts (with the share of them that bank conflicts add), largest first: by
samples, or with --wavefronts by shared-memory wavefronts (the forwards' limiter in v10).

usage: sass_segments.py [--wavefronts] profile.csv[.gz] [top]
"""
import gzip
import csv
import sys


def main():
    args = [a for a in sys.argv[1:] if a != "--wavefronts"]
    by_wavefronts = len(args) < len(sys.argv) - 1
    path = args[0]
    top = int(args[1]) if len(args) > 1 else 25
    with (gzip.open(path, "rt", newline="") if path.endswith(".gz") else open(path, newline="")) as f:
        lines = [l for l in f if l.startswith('"')]
    rows = list(csv.reader(lines))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    header, body = rows[start], rows[start + 1:]

    def column(*names):
        for name in names:
            for i, h in enumerate(header):
                if h.strip().lower() == name.lower():
                    return i
        for name in names:
            for i, h in enumerate(header):
                if name.lower() in h.lower():
                    return i
        return None

    src = column("Source")
    samples = column("Warp Stall Sampling (All Samples)", "Warp Stall Sampling")
    executed = column("Instructions Executed")
    wavefronts = column("L1 Wavefronts Shared")
    excessive = column("L1 Wavefronts Shared Excessive")
    stalls = [(i, h[len("stall_"):]) for i, h in enumerate(header) if h.startswith("stall_") and "Not Issued" not in h]
    if src is None or samples is None:
        sys.exit("missing columns")

    def num(row, i):
        if i is None or i >= len(row):
            return 0.0
        try:
            return float(row[i].replace(",", "") or 0)
        except ValueError:
            return 0.0

    segments = []
    def fresh(first):
        return {"first": first, "n": 0, "samples": 0.0, "executed": 0.0, "wavefronts": 0.0, "excessive": 0.0,
                "ops": {}, "stalls": {}}

    current = fresh(0)
    for index, row in enumerate(body):
        text = row[src]
        current["n"] += 1
        current["samples"] += num(row, samples)
        current["executed"] += num(row, executed)
        current["wavefronts"] += num(row, wavefronts)
        current["excessive"] += num(row, excessive)
        opcode = text.strip().split(" ")[0] if text.strip() else "?"
        if opcode.startswith("@"):
            parts = text.strip().split()
            opcode = parts[1] if len(parts) > 1 else opcode
        opcode = opcode.split(".")[0]
        current["ops"][opcode] = current["ops"].get(opcode, 0.0) + num(row, samples)
        for i, name in stalls:
            current["stalls"][name] = current["stalls"].get(name, 0.0) + num(row, i)
        if "BAR.SYNC" in text or "BAR.SYNC.DEFER_BLOCKING" in text:
            segments.append(current)
            current = fresh(index + 1)
    segments.append(current)
    total = sum(s["samples"] for s in segments) or 1.0
    overall = {}
    for s in segments:
        for k, v in s["stalls"].items():
            overall[k] = overall.get(k, 0.0) + v
    print("stalls:", " ".join(f"{k}:{100 * v / total:.1f}" for k, v in sorted(overall.items(), key=lambda kv: -kv[1])[:8]))
    shared = sum(s["wavefronts"] for s in segments) or 1.0
    print(f"{len(segments)} segments, {len(body)} instructions, {total:.0f} samples, {shared:.3g} shared wavefronts")
    key = "wavefronts" if by_wavefronts else "samples"
    order = sorted(range(len(segments)), key=lambda i: -segments[i][key])
    for i in order[:top]:
        s = segments[i]
        hot = sorted(s["ops"].items(), key=lambda kv: -kv[1])[:4]
        hot = " ".join(f"{k}:{100 * v / total:.1f}" for k, v in hot)
        why = sorted(s["stalls"].items(), key=lambda kv: -kv[1])[:3]
        hot += " | " + " ".join(f"{k}:{100 * v / total:.1f}" for k, v in why)
        print(f"seg {i:4d} @{s['first']:6d} n={s['n']:5d} exec={s['executed']:12.0f} "
              f"samples={100 * s['samples'] / total:5.1f}% shared={100 * s['wavefronts'] / shared:5.1f}% "
              f"(conflicts {100 * s['excessive'] / max(s['wavefronts'], 1.0):3.0f}%)  {hot}")


if __name__ == "__main__":
    main()
