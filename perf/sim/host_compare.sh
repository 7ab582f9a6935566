#!/usr/bin/env bash
# trnccl-sim's prediction of this machine against a measurement (docs/SIMULATOR.md, "This
# machine"): calibrates a `host` description for N ranks (trnccl-sim-calibrate --chips N), predicts
# `mpirun -np N all_reduce_perf` over shm at N = 2 and 4 ranks with it, runs the benchmark, and
# prints one table of predicted against measured time (out-of-place), both with the same
# algorithm (ring: TRNCCL_ALGO for the library, --algo for the simulator).
# Usage: perf/sim/host_compare.sh [build dir] [algorithm]   (a benchmark: run it on a quiet machine)
set -euo pipefail
build=${1:-build}
algo=${2:-ring}
yaml=$(mktemp --suffix=.yaml)
trap 'rm -f "$yaml"' EXIT
sizes=(-b 64K -e 64M -f 8)
printf '%6s %12s %12s %12s %8s\n' ranks bytes predicted_us measured_us error
for n in 2 4; do
  "$build/tools/trnccl-sim/trnccl-sim-calibrate" --chips "$n" --out "$yaml" >&2
  predicted=$("$build/tools/trnccl-sim/trnccl-sim" "$yaml" --ranks "$n" --coll allreduce \
    "${sizes[@]}" --algo "$algo" | awk '!/^#/ && NF {print $1, $6}')
  measured=$(timeout 600 mpirun --allow-run-as-root --oversubscribe -np "$n" \
    -x TRNCCL_ALGO="$algo" "$build/perf/all_reduce_perf" "${sizes[@]}" |
    awk '!/^#/ && NF >= 6 && $1 ~ /^[0-9]+$/ {print $1, $6}')
  join <(sort <<<"$predicted") <(sort <<<"$measured") | sort -n |
    awk -v n="$n" '{printf "%6d %12d %12.1f %12.1f %+7.0f%%\n", n, $1, $2, $3, ($2 - $3) / $3 * 100}'
done
