#!/usr/bin/env python3
"""The tuner checked against the simulator on the full grid (docs/SIMULATOR.md, "The tuner
checked against the simulator"): for each job below and all-reduce, all-gather and
reduce-scatter at 8 B to 1 GiB (factor 64), the tuner's pick against the fastest algorithm
trnccl-sim finds. Prints the misses (pick more than --max-excess slower) as the doc's markdown
table, and with --estimates every algorithm's estimate against its simulated time (where the
cost model is off, by how much).

Usage: perf/sim/tuner_grid.py [--sim build/tools/trnccl-sim/trnccl-sim] [--estimates]
       [--only SUBSTRING] [--jobs 2] [--sweep [--log FILE] [--min-ranks N] [--max-ranks N]
       [--rank-counts 512,1024]]
The grid below takes about 25 s of CPU on the 2-core machine; the CTest
tools.trnccl_sim.tuner_grid runs the cases of it that are right.

--sweep runs the broader check instead: every built-in topology (trnccl-topo --list) at
2, 4, 8, ..., 256 and 2,048 ranks where the description has them (--ranks N within one copy
of the description, else --instances K of it), the same three collectives, at 8 B, 4 KiB,
256 KiB, 16 MiB and 1 GiB. Up to an hour of CPU (the 2,048-rank jobs take most of it): a
benchmark, not a test. --log appends each job's misses as it finishes.
"""
import argparse
import json
import os
import re
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
SWEEP_RANKS = [2, 4, 8, 16, 32, 64, 128, 256, 2048]
# 8 B, then 4 KiB to 1 GiB by 64: (-b, -e, -f) of each trnccl-sim call
SWEEP_SIZES = [("8", "8", "2"), ("4K", "1G", "64")]
GRID_SIZES = [("8", "1G", "64")]


def topo_ranks(topo_tool, name):
    """(ranks per instance, ranks of one copy of the description)"""
    out = subprocess.run([topo_tool, name], check=True, capture_output=True, text=True).stdout
    m = re.search(r"(\d+) per instance, (\d+) in all", out)
    if m:
        return int(m.group(1)), int(m.group(2))
    raise RuntimeError(f"no rank counts in trnccl-topo {name}")


def sweep_jobs(topo_tool, min_ranks, max_ranks, rank_counts=None):
    names = subprocess.run([topo_tool, "--list"], check=True, capture_output=True,
                           text=True).stdout.split()
    jobs = []
    for n in rank_counts or SWEEP_RANKS:
        if n < min_ranks or n > max_ranks:
            continue
        for name in names:
            per, total = topo_ranks(topo_tool, name)
            if n <= total:
                jobs.append(f"{name} --ranks {n}")
            elif n % per == 0:
                jobs.append(f"{name} --instances {n // per}")
    return jobs


def size_name(b):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div} {unit}"
    return f"{b} B"


def run(sim, job, coll, threads, sizes):
    rows = []
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "grid.json")
        for b, e, f in sizes:
            cmd = [sim, *job.split(), "--coll", coll, "-b", b, "-e", e, "-f", f, "--algo",
                   "all", "-j", str(threads), "-J", out]
            done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
            if "no path from rank" in done.stderr:  # e.g. instances without a network
                return None
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)}: {done.stderr}")
            with open(out) as fh:
                rows += json.load(fh)["rows"]
    return {"rows": rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", default="build/tools/trnccl-sim/trnccl-sim")
    ap.add_argument("--max-excess", type=float, default=0.10)
    ap.add_argument("--estimates", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--log", default="")
    ap.add_argument("--save", default="",
                    help="append every job's rows as one JSON line per job and collective")
    ap.add_argument("--factor", default="",
                    help="--sweep: sizes 8 B to 1 GiB by this factor instead of the five")
    ap.add_argument("--min-ranks", type=int, default=0, help="--sweep: rank counts from")
    ap.add_argument("--max-ranks", type=int, default=1 << 30, help="--sweep: rank counts up to")
    ap.add_argument("--rank-counts", default="",
                    help="--sweep: these rank counts (e.g. 512,1024) instead of 2, 4, ..., 256, 2048")
    a = ap.parse_args()
    topo_tool = os.path.join(os.path.dirname(os.path.dirname(a.sim)), "trnccl-topo", "trnccl-topo")
    if a.sweep:
        counts = [int(c) for c in a.rank_counts.split(",")] if a.rank_counts else None
        jobs = sweep_jobs(topo_tool, a.min_ranks, a.max_ranks, counts)
        sizes = [("8", "1G", a.factor)] if a.factor else SWEEP_SIZES
    else:
        jobs, sizes = JOBS, GRID_SIZES
    misses, right = [], []
    for job in jobs:
        for coll in COLLS:
            if a.only and a.only not in f"{job} {coll}":
                continue
            before = len(misses)
            j = run(a.sim, job, coll, a.jobs, sizes)
            if j is None:
                print(f"{job}: no path between its ranks in the description, skipped",
                      file=sys.stderr)
                break
            if a.save:
                with open(a.save, "a") as fh:
                    fh.write(json.dumps({"job": job, "coll": coll, "rows": j["rows"]}) + "\n")
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
            if a.log:
                with open(a.log, "a") as log:
                    log.write(f"done {job} {coll}: {len(misses) - before} misses\n")
                    for m in misses[before:]:
                        log.write("| " + " | ".join(m) + " |\n")
    print("\n| job | collective | size | tuner's pick | slower than |\n|---|---|---:|---|---|")
    for m in misses:
        print("| " + " | ".join(m) + " |")
    print(f"\n{len(misses)} misses; cases right at every size:")
    for r in right:
        print(f'  "{r}"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
