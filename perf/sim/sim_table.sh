#!/usr/bin/env bash
# docs/ALGORITHMS.md "Which algorithm wins where, simulated": every all-reduce algorithm on the
# whole of each fabric (trnccl-sim --algo all, float32 sum, 8 B to 256 MiB), a PNG per fabric
# and one Markdown table of the fastest algorithm per size with the tuner's pick where it
# differs (sim_table.py). The simulated times are the model's, not measurements.
# Usage: perf/sim/sim_table.sh [build dir] [PNG dir]   (about 4 minutes on 2 cores; the
#        1,152-rank fabric takes most of it)
set -euo pipefail
build=${1:-build}
pngs=${2:-docs/perf}
here=$(cd "$(dirname "$0")" && pwd)
json=$(mktemp -d)
trap 'rm -rf "$json"' EXIT
fabrics=(trn1.32xlarge trn2.48xlarge trn2-ultraserver trn3-ultraserver-gen1 trn3-ultraserver-gen2)
for f in "${fabrics[@]}"; do
  start=$(date +%s)
  "$build/tools/trnccl-sim/trnccl-sim" "$f" --coll allreduce -b 8 -e 256M -f 8 --algo all \
    -J "$json/$f.json" --plot "$pngs/sim_${f}_allreduce.png" \
    2> >(grep -v 'Skipping data file with no valid points' >&2) >/dev/null  # gnuplot: an
  # algorithm that declines every size has no points
  echo "# $f: $(($(date +%s) - start)) s" >&2
done
python3 "$here/sim_table.py" "$json" "${fabrics[@]}"
