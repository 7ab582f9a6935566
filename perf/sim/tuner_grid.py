#!/usr/bin/env python3
"""The tuner checked against the simulator on the full grid (docs/SIMULATOR.md, "The tuner
checked against the simulator"): for each job below and all-reduce, all-gather and
reduce-scatter at 8 B to 1 GiB (factor 64), the tuner's pick against the fastest algorithm
trnccl-sim finds. Prints the misses (pick more than --max-excess slower) as the doc's markdown
table, and with --estimates every algorithm's estimate against its simulated time (where the
cost model is off, by how much).

Usage: perf/sim/tuner_grid.py [--sim build/tools/trnccl-sim/trnccl-sim] [--estimates]
       [--only SUBSTRING] [--jobs 2]
A few minutes of CPU on the 2-core machine; the CTest tools.trnccl_sim.tuner_grid runs the
cases of this grid that are right.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

JOBS = [
    "trn1.32xlarge --ranks 8",
    "trn1.32xlarge --ranks 16",
    "trn1.32xlarge --ranks 32",
    "trn1.32xlarge --instances 4",
    "trn1.32xlarge --instances 8",
    "trn2.48xlarge-lnc2 --ranks 64",
    "trn2-ultraserver --ranks 128",
    "trn3-ultraserver-gen1 --ranks 64",
    "trn3-ultraserver-gen2 --instances 4",
]
COLLS = ["allreduce", "allgather", "reducescatter"]


def size_name(b):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div} {unit}"
    return f"{b} B"


def run(sim, job, coll, threads):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "grid.json")
        cmd = [sim, *job.split(), "--coll", coll, "-b", "8", "-e", "1G", "-f", "64", "--algo",
               "all", "-j", str(threads), "-J", out]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", default="build/tools/trnccl-sim/trnccl-sim")
    ap.add_argument("--max-excess", type=float, default=0.10)
    ap.add_argument("--estimates", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    misses, right = [], []
    for job in JOBS:
        for coll in COLLS:
            if a.only and a.only not in f"{job} {coll}":
                continue
            j = run(a.sim, job, coll, a.jobs)
            ok = True
            for row in j["rows"]:
                ran = [c for c in row["results"] if c["ran"]]
                best = min(ran, key=lambda c: c["time_us"])
                pick = row.get("tuner", "")
                excess = row.get("tuner_excess", 0)
                if excess > a.max_excess:
                    ok = False
                    misses.append((job, coll, size_name(row["size"]), pick,
                                   f"{best['algorithm']} by {100 * excess:.0f} %"))
                if a.estimates:
                    cells = " ".join(
                        f"{c['algorithm']}={c['estimate_us']:.0f}/{c['time_us']:.0f}"
                        f"({c['estimate_us'] / c['time_us']:.2f})" if c["time_us"] > 0 else
                        f"{c['algorithm']}=0" for c in ran)
                    print(f"{job} {coll} {size_name(row['size'])}: pick {pick} "
                          f"+{100 * excess:.0f}%  est/sim: {cells}", flush=True)
            (right if ok else []).append(f"{job}|{coll}")
    print("\n| job | collective | size | tuner's pick | slower than |\n|---|---|---:|---|---|")
    for m in misses:
        print("| " + " | ".join(m) + " |")
    print(f"\n{len(misses)} misses; cases right at every size:")
    for r in right:
        print(f'  "{r}"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
