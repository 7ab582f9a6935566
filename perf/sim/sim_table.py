#!/usr/bin/env python3
"""The Markdown table of docs/ALGORITHMS.md "Which algorithm wins where, simulated".

Usage: sim_table.py JSON_DIR FABRIC...  (JSON_DIR/FABRIC.json written by trnccl-sim -J with
--algo all; sim_table.sh runs both). Per size and fabric: the fastest algorithm the simulator
found (xC: C channels) and its time, and where the tuner picks another, its pick and how much
slower the simulator finds it.
"""
import json
import os
import sys


def human(b):
    for unit, name in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= unit:
            return f"{b // unit} {name}"
    return f"{b} B"


def cell(row):
    ran = [x for x in row["results"] if x.get("ran")]
    best = min(ran, key=lambda x: x["time_us"])
    name = best["algorithm"] + (f"×{best['channels']}" if best.get("channels", 1) > 1 else "")
    text = f"{name} {best['time_us']:.0f} µs"
    if row.get("tuner_excess", 0) > 0.005:
        text += f" (tuner: {row['tuner']}, +{100 * row['tuner_excess']:.0f} %)"
    return text


def main():
    folder, fabrics = sys.argv[1], sys.argv[2:]
    data = {}
    for f in fabrics:
        with open(os.path.join(folder, f + ".json")) as fp:
            data[f] = json.load(fp)
    sizes = [r["size"] for r in data[fabrics[0]]["rows"]]
    print("| size | " + " | ".join(f"{f} ({data[f]['ranks']} ranks)" for f in fabrics) + " |")
    print("|---|" + "---|" * len(fabrics))
    for i, size in enumerate(sizes):
        cells = [cell(data[f]["rows"][i]) for f in fabrics]
        print(f"| {human(size)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
