#!/usr/bin/python3
"""perf/compare.py: trnccl against OpenMPI and Gloo, same machine, ranks, sizes and data.

Times all-reduce, all-gather and reduce-scatter (float sum) through
  trnccl   - our all_reduce_perf / all_gather_perf / reduce_scatter_perf (their table's
             out-of-place columns), one rank per process under mpirun,
  OpenMPI  - perf/peers/mpi_bench (MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block),
  Gloo     - perf/peers/gloo_bench (allreduce ring and halving-doubling, allgather,
             reduce-scatter halving-doubling) over Gloo's TCP transport on 127.0.0.1,
in transport pairs:
  shm: trnccl TRNCCL_TRANSPORT=shm   vs OpenMPI --mca btl self,vader   vs Gloo tcp
  tcp: trnccl TRNCCL_TRANSPORT=tcp   vs OpenMPI --mca btl tcp,self (lo) vs Gloo tcp
(the tcp pair is skipped, with a message, when trnccl's tcp transport does not run here).
--ranks 2,4,8 runs every rank count in the same rounds; the tcp pair runs only at the counts of
--tcp-ranks (default 2; with the older --np N alone, at N). When a count exceeds the cores (oversubscribed), OpenMPI gets
--mca mpi_yield_when_idle 1 (its busy-polling otherwise starves the other ranks), so the
comparison is fair to it; --yield on/off forces it. --latency is the small-message mode:
-b 8 -e 4K -f 2 -n 2000 (explicit -b/-e/-f/-n still win).
--in-place times every library in place, the way torch.distributed calls all_reduce (on the
tensor itself): trnccl's in-place columns, OpenMPI with MPI_IN_PLACE, Gloo's ring all-reduce
given only an output (as torch's ProcessGroupGloo calls it) and its halving-doubling algorithms
(in place by design); Gloo has no in-place all-gather, so that table has no Gloo column.
--blocking makes trnccl wait for each call before the next (its benchmarks' -z 2: a stream
synchronize after every call, as torch's work.wait() after every all_reduce), the way an
MPI_Allreduce loop and Gloo's calls already run; without it trnccl's calls are issued back to
back and synchronized once per size, as nccl-tests do.
Every program is launched by the same mpirun line and prints nccl-tests rows computed by the
same code (perf/common), so size, count, algbw and busbw (GB/s = 1e9 B/s) mean the same thing.
Placement (--bind): by default mpirun places the processes as it does for a user who types
`mpirun -np N` (issue 14's command): OpenMPI 4.1 binds each rank to a core of its own while
the ranks fit the cores and binds nothing when they outnumber them (--oversubscribe). --bind
none (every run before the eighteenth session) leaves the 2-rank runs to the scheduler too,
where trnccl's two threads per rank can start on one core (docs/PERFORMANCE.md). --probe times a
cache line between the first two CPUs around every run and lists it with the report: this VM
sometimes runs its two vCPUs on cores far apart for seconds, where every hand-off of a small
call costs about five times as much (docs/SIMULATOR.md, eighteenth session).

Rounds alternate between libraries (the order rotates each round) so that a burst of load on
the machine hits all of them alike; each cell is the best (lowest) time over the rounds.
Checks stay on (-c 1, outside the timed loop); a wrong value fails the run.

(Named compare.py, not compare: perf/ is on the include path and a file "compare" there would
shadow C++20's <compare>.)

Prints one table per collective and transport pair, writes it to OUT/compare.txt and plots
busbw against size to OUT/compare.png (gnuplot).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
MPI_SHM = ["--mca", "pml", "ob1", "--mca", "btl", "self,vader"]
MPI_TCP = ["--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo"]
MPI_YIELD = ["--mca", "mpi_yield_when_idle", "1"]
# The sweep of each mode: (-b, -e, -f, -n, -w). --latency: many iterations of small messages.
SWEEPS = {"bandwidth": ("16", "64M", "4", "10", "3"), "latency": ("8", "4K", "2", "2000", "20")}
TRNCCL_TCP_ENV = {"TRNCCL_TRANSPORT": "tcp", "TRNCCL_SOCKET_IFNAME": "lo"}
# A cache line between the two CPUs takes 0.03-0.055 us one way when the VM runs them on nearby
# cores and 0.15-0.19 us on cores far apart, where every hand-off of a small call slows down
# (docs/SIMULATOR.md, eighteenth session); between the two, this bound.
SLOW_HOP_US = 0.08

# collective -> (trnccl binary, mpi_bench name, [(gloo label, gloo_bench name)]); out of place
COLLECTIVES = {
    "all_reduce": ("all_reduce_perf", "all_reduce",
                   [("gloo-ring", "all_reduce_ring"), ("gloo-hd", "all_reduce_hd")]),
    "all_gather": ("all_gather_perf", "all_gather", [("gloo", "all_gather")]),
    "reduce_scatter": ("reduce_scatter_perf", "reduce_scatter", [("gloo-hd", "reduce_scatter_hd")]),
}
# The same, in place (--in-place): the peers' in-place calls; trnccl reads its in-place columns.
IN_PLACE = {
    "all_reduce": ("all_reduce_perf", "all_reduce_in_place",
                   [("gloo-ring", "all_reduce_ring_in_place"), ("gloo-hd", "all_reduce_hd")]),
    "all_gather": ("all_gather_perf", "all_gather_in_place", []),
    "reduce_scatter": ("reduce_scatter_perf", "reduce_scatter_in_place",
                       [("gloo-hd", "reduce_scatter_hd")]),
}


class Run:
    """One library's run of one collective: how to launch it and which table it feeds."""

    def __init__(self, label, transports, argv, env=None, gloo=False):
        self.label, self.transports, self.argv, self.env, self.gloo = (
            label, transports, argv, env or {}, gloo)


def bus_factor(coll, n):
    """nccl-tests' bus factor, as perf/common/report.cc."""
    return 2.0 * (n - 1) / n if coll == "all_reduce" else (n - 1) / n


def parse_rows(text, coll, n, in_place=False):
    """{size: (time_us, busbw, wrong)} from nccl-tests rows: 13 columns (trnccl: the out-of-place
    half, or the in-place half with in_place) or 9 (peers, one half). N/A cells give None. busbw
    is recomputed from size and time with the programs' own formula, for more digits than their
    2-decimal column."""
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if not f or line.startswith("#") or len(f) not in (9, 13):
            continue
        try:
            size = int(f[0])
        except ValueError:
            continue
        if in_place and len(f) == 13:
            f = f[:5] + f[9:]
        if f[5] == "N/A":
            rows[size] = None
            continue
        wrong = 0 if f[8] == "N/A" else int(float(f[8]))
        t = float(f[5])
        rows[size] = (t, size / (t * 1e3) * bus_factor(coll, n) if t > 0 else 0.0, wrong)
    return rows


def launch(args, np, run, flags, timeout):
    env = dict(os.environ)
    env.update(run.env)
    cmd = MPIRUN + (["--bind-to", args.bind] if args.bind != "default" else []) + ["-np", str(np)]
    for k in run.env:
        cmd += ["-x", k]
    store = None
    if run.gloo:
        store = tempfile.mkdtemp(prefix="trnccl-gloo-")
        env["TRNCCL_GLOO_STORE"] = store
        cmd += ["-x", "TRNCCL_GLOO_STORE"]
    cmd += run.argv + flags
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, cmd
    except subprocess.TimeoutExpired as e:
        return 124, e.stdout or "", "timed out after %ds" % timeout, cmd
    finally:
        if store:
            shutil.rmtree(store, ignore_errors=True)


def probe_trnccl_tcp(args):
    """Runs a tiny trnccl all-reduce with TRNCCL_TRANSPORT=tcp; returns None or why not."""
    run = Run("probe", [], [os.path.join(args.build, "perf", "all_reduce_perf")], TRNCCL_TCP_ENV)
    rc, out, err, _ = launch(args, 2, run, ["-b", "8", "-e", "4K", "-f", "8", "-n", "1", "-w", "0",
                                         "-c", "1"], 120)
    if rc == 0 and "Out of bounds values : 0 OK" in out:
        return None
    said = [l for l in err.splitlines() if l.strip() and l[0] not in "[-" and "mpirun" not in l]
    return "exit %d: %s" % (rc, said[0] if said else "no message")


def oversubscribed(args, np):
    """Whether OpenMPI gets mpi_yield_when_idle at `np` ranks (--yield auto: more ranks than
    cores)."""
    if args.yield_idle != "auto":
        return args.yield_idle == "on"
    return np > (os.cpu_count() or 1)


def plan(args, np, transports):
    """The runs of each collective at `np` ranks: {collective: [Run]}."""
    b = args.build
    runs = {}
    for coll in args.collectives:
        perf, mpi_name, gloos = (IN_PLACE if args.in_place else COLLECTIVES)[coll]
        perf_bin = os.path.join(b, "perf", perf)
        mpi_bin = os.path.join(b, "perf", "peers", "mpi_bench")
        gloo_bin = os.path.join(b, "perf", "peers", "gloo_bench")
        mpi_yield = MPI_YIELD if oversubscribed(args, np) else []
        mine = ["-z", "2"] if args.blocking else []  # trnccl's own flags
        r = []
        if "shm" in transports:
            r.append(Run("trnccl-shm", ["shm"], [perf_bin] + mine, {"TRNCCL_TRANSPORT": "shm"}))
            if os.path.exists(mpi_bin):
                r.append(Run("ompi-vader", ["shm"], MPI_SHM + mpi_yield + [mpi_bin, mpi_name]))
        if "tcp" in transports:
            r.append(Run("trnccl-tcp", ["tcp"], [perf_bin] + mine, TRNCCL_TCP_ENV))
            if os.path.exists(mpi_bin):
                r.append(Run("ompi-tcp", ["tcp"], MPI_TCP + mpi_yield + [mpi_bin, mpi_name]))
        gloo_ok = args.gloo_max_ranks is None or np <= args.gloo_max_ranks
        if gloo_ok and os.path.exists(gloo_bin):  # Gloo has only TCP: one run feeds both tables
            for label, name in gloos:
                r.append(Run(label, transports, [gloo_bin, name], gloo=True))
        runs[coll] = r
    return runs


def fmt_cell(cell):
    if cell is None:
        return "%10s %8s" % ("-", "-")
    return "%10.1f %8.3f" % (cell[0], cell[1])


def table(args, np, coll, transport, runs, best):
    """The table of one collective and transport pair at `np` ranks; best = {label: {size:
    cell}} of that collective and rank count."""
    libs = [r.label for r in runs if transport in r.transports]
    mine = "trnccl-" + transport
    peers = [l for l in libs if l != mine]
    sizes = sorted({s for l in libs for s in best.get(l, {}) if s > 0})
    lines = ["## %s%s%s, %s pair: %d ranks%s, float sum, time = best of %d rounds (us), "
             "busbw GB/s (1e9 B/s)" % (coll, " in place" if args.in_place else "",
                                       " (trnccl waits after each call, -z 2)" if args.blocking
                                       else "", transport, np,
                                       " (OpenMPI with mpi_yield_when_idle 1)"
                                       if oversubscribed(args, np) else "", args.rounds)]
    head = "%12s" % "size (B)" + "".join(" %19s" % l for l in libs) + "  trnccl/best-peer"
    sub = "%12s" % "" + " %10s %8s" % ("time", "busbw") * len(libs) + "  (busbw; >1 faster)"
    lines += [head, sub]
    for s in sizes:
        cells = [best.get(l, {}).get(s) for l in libs]
        row = "%12d" % s + "".join(" " + fmt_cell(c) for c in cells)
        m = best.get(mine, {}).get(s)
        peer_times = [best[l][s][0] for l in peers if best.get(l, {}).get(s)]
        if m and peer_times and m[0] > 0:
            row += "  %8.2fx" % (min(peer_times) / m[0])
        else:
            row += "  %9s" % "-"
        lines.append(row)
    return lines


def plot(args, panels, out_png, metric):
    """One panel per (ranks, transport, collective) of `panels` [(np, t, coll, libs, best)]:
    busbw (metric 1, log-log) or time (metric 0, latency, log-log) against size."""
    if not shutil.which("gnuplot"):
        print("# gnuplot not found (apt-get install gnuplot-nox): no plot", file=sys.stderr)
        return
    tmp = tempfile.mkdtemp(prefix="trnccl-compare-")
    cols = len(args.collectives)
    rows = (len(panels) + cols - 1) // cols
    what = ("busbw (GB/s)", "higher is better") if metric else ("time (us)", "lower is better")
    script = ["set terminal pngcairo size %d,%d font ',9'" % (520 * cols, 400 * rows),
              "set output '%s'" % out_png,
              "set multiplot layout %d,%d title '%s vs message size, float sum (%s)'" % (
                  rows, cols, what[0], what[1]),
              "set logscale x 2", "set logscale y 10", "set format x '%.0b%BB'",
              "set format y '%g'", "set termoption noenhanced",
              "set xlabel 'size (bytes)'", "set ylabel '%s'" % what[0], "set key top left",
              "set grid", "set datafile missing 'NaN'"]
    for i, (np, t, coll, libs, best) in enumerate(panels):
        path = os.path.join(tmp, "%d.dat" % i)
        sizes = sorted({s for l in libs for s in best.get(l, {}) if s > 0})
        with open(path, "w") as f:
            for s in sizes:
                vals = []
                for l in libs:
                    c = best.get(l, {}).get(s)
                    vals.append("%g" % c[metric] if c and c[metric] > 0 else "NaN")
                f.write("%d %s\n" % (s, " ".join(vals)))
        plots = ["'%s' using 1:%d with linespoints title '%s'" % (path, j + 2, l)
                 for j, l in enumerate(libs)]
        title = "%s%s, %s pair, %d ranks" % (coll, " in place" if args.in_place else "", t, np)
        script += ["set title '%s'" % title, "plot " + ", ".join(plots)]
    script.append("unset multiplot")
    p = subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True,
                       capture_output=True)
    shutil.rmtree(tmp, ignore_errors=True)
    if p.returncode != 0:
        print("# gnuplot failed: " + p.stderr, file=sys.stderr)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("TRNCCL_BUILD",
                                                     os.path.join(HERE, "..", "build")))
    ap.add_argument("--ranks", default=None, help="rank counts, e.g. 2,4,8 (default: --np)")
    ap.add_argument("--np", type=int, default=4, help="one rank count (when --ranks is not given)")
    ap.add_argument("--tcp-ranks", default=None,
                    help="rank counts that also run the tcp pair (default: 2 with --ranks, "
                    "--np without)")
    ap.add_argument("--yield", dest="yield_idle", choices=("auto", "on", "off"), default="auto",
                    help="OpenMPI mpi_yield_when_idle 1: auto = when ranks > cores")
    ap.add_argument("--bind", choices=("default", "none", "core"), default="default",
                    help="process placement: default = mpirun's own (bound to a core each up to "
                    "the cores, unbound when oversubscribed), or mpirun --bind-to none|core")
    ap.add_argument("--probe", action="store_true",
                    help="time a cache line between the first two CPUs before and after every "
                    "run (trnccl-sim-calibrate-step --probe) and list it: above %.2f us the VM "
                    "runs them on cores far apart (docs/SIMULATOR.md)" % SLOW_HOP_US)
    ap.add_argument("--latency", action="store_true",
                    help="small-message mode: -b 8 -e 4K -f 2 -n 2000 -w 20")
    ap.add_argument("--in-place", action="store_true",
                    help="time every library in place (torch.distributed's all_reduce)")
    ap.add_argument("--blocking", action="store_true",
                    help="trnccl waits for each call before the next (-z 2), as MPI and Gloo do")
    ap.add_argument("-b", "--minbytes", default=None)
    ap.add_argument("-e", "--maxbytes", default=None)
    ap.add_argument("-f", "--stepfactor", default=None)
    ap.add_argument("-n", "--iters", default=None)
    ap.add_argument("-w", "--warmup", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--collectives", default=",".join(COLLECTIVES))
    ap.add_argument("--transports", default="shm,tcp")
    ap.add_argument("--gloo-max-ranks", type=int, default=None,
                    help="run Gloo only up to this rank count (oversubscribed, Gloo's "
                         "2000-iteration latency runs take minutes per collective)")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "docs", "perf"))
    ap.add_argument("--timeout", type=int, default=900, help="seconds per program run")
    args = ap.parse_args()
    sweep = SWEEPS["latency" if args.latency else "bandwidth"]
    for name, value in zip(("minbytes", "maxbytes", "stepfactor", "iters", "warmup"), sweep):
        if getattr(args, name) is None:
            setattr(args, name, value)
    try:
        tcp = args.tcp_ranks or ("2" if args.ranks else str(args.np))
        args.ranks = [int(n) for n in (args.ranks or str(args.np)).split(",") if n]
        args.tcp_ranks = [int(n) for n in tcp.split(",") if n]
    except ValueError:
        ap.error("--ranks and --tcp-ranks take comma-separated integers")
    if not args.ranks or min(args.ranks) < 2:
        ap.error("--ranks: at least one rank count, each >= 2")
    args.collectives = [c for c in args.collectives.split(",") if c]
    for c in args.collectives:
        if c not in COLLECTIVES:
            ap.error("unknown collective %s (have %s)" % (c, ", ".join(COLLECTIVES)))
    return args


def hop(args):
    """The one-way time of a cache line between the first two CPUs (us), or None."""
    tool = os.path.join(args.build, "tools", "trnccl-sim", "trnccl-sim-calibrate-step")
    try:
        out = subprocess.run([tool, "--probe"], capture_output=True, text=True, timeout=60).stdout
        return float(out.split()[1]) if out.startswith("hop ") else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None


def check_tools(args, transports):
    """Drops the tcp pair when trnccl's tcp does not run; notes missing peers."""
    notes = []
    if "tcp" in transports:
        why = probe_trnccl_tcp(args)
        if why:
            msg = ("# SKIPPED the tcp pair: trnccl's tcp transport (TRNCCL_TRANSPORT=tcp) did not "
                   "run here (%s)" % why)
            print(msg, flush=True)
            notes.append(msg)
            transports.remove("tcp")
    for tool, what in (("mpi_bench", "OpenMPI"), ("gloo_bench", "Gloo")):
        if not os.path.exists(os.path.join(args.build, "perf", "peers", tool)):
            msg = "# no %s in %s: %s left out (install its -dev package, rebuild)" % (
                tool, args.build, what)
            print(msg, flush=True)
            notes.append(msg)
    if args.probe and hop(args) is None:
        msg = "# no CPU-to-CPU probe (tools/trnccl-sim/trnccl-sim-calibrate-step --probe): --probe off"
        print(msg, flush=True)
        notes.append(msg)
        args.probe = False
    return notes


def main():
    args = parse_args()
    transports = [t for t in args.transports.split(",") if t]
    if not shutil.which("mpirun"):
        sys.exit("compare: mpirun not found (scripts/deps.sh installs openmpi-bin)")
    notes = check_tools(args, transports)
    if not transports:
        sys.exit("compare: no transport pair to run")

    flags = ["-b", args.minbytes, "-e", args.maxbytes, "-f", args.stepfactor, "-n", args.iters,
             "-w", args.warmup, "-c", "1"]
    pairs = {np: [t for t in transports if t != "tcp" or np in args.tcp_ranks]
             for np in args.ranks}
    runs = {np: plan(args, np, pairs[np]) for np in args.ranks}
    best = {np: {c: {} for c in args.collectives} for np in args.ranks}
    failures = []
    probes = []  # with --probe: each run's line, the cache line's time before and after
    started = time.time()
    # Every rank count and library in each round, the order rotating, so that a burst of load
    # hits them alike.
    for rnd in range(args.rounds):
        for np in args.ranks:
            for coll in args.collectives:
                rs = runs[np][coll]
                for run in rs[rnd % len(rs):] + rs[:rnd % len(rs)]:
                    before = hop(args) if args.probe else None
                    rc, out, err, cmd = launch(args, np, run, flags, args.timeout)
                    after = hop(args) if args.probe else None
                    rows = parse_rows(out, coll, np, args.in_place)
                    line = "# round %d np %d %-14s %-11s exit %d, %d rows, %.0f s elapsed" % (
                        rnd + 1, np, coll, run.label, rc, len(rows), time.time() - started)
                    if args.probe:
                        line += ", CPU-to-CPU line %s/%s us" % (
                            "%.3f" % before if before is not None else "-",
                            "%.3f" % after if after is not None else "-")
                        probes.append(line[2:])
                    print(line, flush=True)
                    if rc != 0 or not rows:
                        failures.append("%s np %d %s: exit %d\n  %s\n%s" % (
                            coll, np, run.label, rc, " ".join(cmd),
                            "\n".join((err + out).splitlines()[-8:])))
                        continue
                    mine = best[np][coll].setdefault(run.label, {})
                    for size, cell in rows.items():
                        if cell and cell[2]:
                            failures.append("%s np %d %s: %d wrong values at %d B" % (
                                coll, np, run.label, cell[2], size))
                        if cell is None:
                            mine.setdefault(size, None)
                        elif mine.get(size) is None or cell[0] < mine[size][0]:
                            mine[size] = cell

    load = open("/proc/loadavg").read().split()[:3]
    report = ["# perf/compare%s: ranks %s (tcp pair at %s), sizes %s..%s x%s, -n %s -w %s, %d "
              "rounds, %d cores, placement %s; load average after the run %s" % (
                  " --in-place" if args.in_place else "",
                  ",".join(map(str, args.ranks)), ",".join(map(str, args.tcp_ranks)),
                  args.minbytes, args.maxbytes, args.stepfactor, args.iters, args.warmup,
                  args.rounds, os.cpu_count() or 1,
                  "mpirun's default" if args.bind == "default" else "--bind-to " + args.bind,
                  " ".join(load))]
    report += notes
    panels = []
    for np in args.ranks:
        for t in pairs[np]:
            for coll in args.collectives:
                report += [""] + table(args, np, coll, t, runs[np][coll], best[np][coll])
                libs = [r.label for r in runs[np][coll] if t in r.transports]
                panels.append((np, t, coll, libs, best[np][coll]))
    if probes:
        slow = [p for p in probes if any(
            float(v) > SLOW_HOP_US for v in p.rsplit(" ", 2)[-2].split("/") if v != "-")]
        report += ["", "## CPU-to-CPU cache line around each run (us, before/after; above %.2f: "
                   "the two CPUs on cores far apart): %d of %d runs" % (
                       SLOW_HOP_US, len(slow), len(probes))] + ["  " + p for p in probes]
    if failures:
        report += ["", "# FAILURES:"] + failures
    text = "\n".join(report) + "\n"
    print(text)
    os.makedirs(args.out, exist_ok=True)
    stem = "compare_latency" if args.latency else "compare"
    stem += "_inplace" if args.in_place else ""
    with open(os.path.join(args.out, stem + ".txt"), "w") as f:
        f.write(text)
    plot(args, panels, os.path.join(args.out, stem + ".png"), 1)
    plot(args, panels, os.path.join(args.out, stem + "_time.png"), 0)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
