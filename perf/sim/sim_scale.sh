#!/usr/bin/env bash
# trnccl-sim's cost against the job's size (docs/SIMULATOR.md, "Scale"): one 1 GiB all-reduce
# (the tuner's algorithm) on trn1.32xlarge from 16 ranks to 64 instances (2,048 ranks), and on
# the Trn2 UltraServer at 256 and 512 ranks; per run the simulated steps, wall and CPU (user +
# system) seconds and peak memory. On a shared machine the CPU seconds are the figure to compare.
# Usage: perf/sim/sim_scale.sh [path/to/trnccl-sim] [size]   (a benchmark: run it on a quiet
# machine; it is no test).
set -euo pipefail
sim=${1:-build/tools/trnccl-sim/trnccl-sim}
size=${2:-1G}
run() {
  local label=$1
  shift
  local out
  out=$( { /usr/bin/time -f "TIME %e %M %U %S" "$sim" "$@" --coll allreduce -b "$size" -e "$size" -j 1 \
    >/tmp/sim_scale.$$ ; } 2>&1)
  local steps
  steps=$(sed -n 's/^# Simulated \([0-9]*\) steps of \([0-9]*\) ranks.*/\1 \2/p' /tmp/sim_scale.$$)
  local algo
  algo=$(awk '!/^#/ && NF {print $NF}' /tmp/sim_scale.$$ | tail -1)
  read -r _ secs kb user sys <<<"$(grep '^TIME' <<<"$out")"
  printf '%-28s %6s %12s %-14s %8.2f %8.2f %8.0f\n' "$label" "${steps#* }" "${steps% *}" "$algo" \
    "$secs" "$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')" "$((kb / 1024))"
}
printf '%-28s %6s %12s %-14s %8s %8s %8s\n' "# job" ranks steps algorithm wall_s cpu_s MiB
for r in 16 32; do run "trn1.32xlarge --ranks $r" trn1.32xlarge --ranks "$r"; done
for k in 2 4 8 16 32 64; do run "trn1.32xlarge x $k" trn1.32xlarge --instances "$k"; done
run "trn2-ultraserver --ranks 256" trn2-ultraserver --ranks 256
run "trn2-ultraserver" trn2-ultraserver
rm -f /tmp/sim_scale.$$
