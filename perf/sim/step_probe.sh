#!/usr/bin/env bash
# Runs the calibration's step program (trnccl-sim-calibrate-step) again and again for BUDGET
# (default 240: one exclusive hold), alternating RANKS (default "2 4"), REPEAT repetitions each
# (default 3), and prints every repetition's figures with the time of day and the load average:
# the step program's "rep" lines (library_step.cc: each size's step time and copy alone, us; the one-way time of
# a cache line between the two CPUs before and after the repetition, us; the CPUs' busy, idle,
# iowait and steal jiffies during it; the step processes' voluntary and involuntary context
# switches and minor faults), to find what differs in a slow mode (docs/SIMULATOR.md, eighteenth
# session). A benchmark: run it under the exclusive lock on a quiet machine.
# Usage: [BUDGET=240] [RANKS="2 4"] [REPEAT=3] perf/sim/step_probe.sh [build dir]
set -euo pipefail
build=${1:-build}
budget=${BUDGET:-240}
ranks=${RANKS:-2 4}
repeat=${REPEAT:-3}
step="$build/tools/trnccl-sim/trnccl-sim-calibrate-step"
start=$(date +%s)
echo "# $(date -u +%H:%M:%S) $(uptime)"
echo "# utc ranks loadavg1 rep t8 t1k t4k t16k t32k t64k t128k copy c8 c1k c4k c16k c32k c64k c128k hop before after seconds busy idle iowait steal nvcsw nivcsw minflt"
while (($(date +%s) - start < budget)); do
  for n in $ranks; do
    now=$(date -u +%H:%M:%S)
    load=$(cut -d' ' -f1 /proc/loadavg)
    "$step" --ranks "$n" --repeat "$repeat" | awk -v t="$now" -v n="$n" -v l="$load" \
      '/^rep / {sub(/^rep /, ""); print t, n, l, $0}'
  done
done
echo "# $(date -u +%H:%M:%S) $(uptime)"
