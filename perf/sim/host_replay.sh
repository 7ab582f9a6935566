#!/usr/bin/env bash
# Predicts a kept host_compare.sh run again with today's model, measuring nothing
# (docs/SIMULATOR.md, "This machine", fifteenth session): each description the run calibrated
# (RUN.hostN.yaml) is converted to today's calibration rules (trnccl-sim-calibrate --refit, from
# the step times it recorded) and predicts against the run's own measured times
# (RUN.measuredN.BYTES.txt), one host_compare.sh table per run. A description from before the
# sixteenth session has its bands' bytes converted for its ranks on CPUS CPUs (refit.h,
# bandBytes): every kept run so far is this 2-CPU machine's.
# Usage: [CPUS=2] perf/sim/host_replay.sh [build dir] [directory of a kept run]   (default: the
#        lead's two quiet runs of 2026-11-29, host_runs/2026-11-29)
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
dir=${2:-$here/host_runs/2026-11-29}
cpus=${CPUS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for first in "$dir"/*.host2.yaml; do
  run=$(basename "$first" .host2.yaml)
  for yaml in "$dir/$run".host*.yaml; do
    "$build/tools/trnccl-sim/trnccl-sim-calibrate" --refit "$yaml" --cpus "$cpus" --out "$out/$(basename "$yaml")" \
      >/dev/null
  done
  cp "$dir/$run".measured*.txt "$out/"
  # the benchmark runs' probes, kept since session 18 (host_compare.sh's usual-mode columns)
  if compgen -G "$dir/$run.hop*.txt" >/dev/null; then cp "$dir/$run".hop*.txt "$out/"; fi
  echo "# $run"
  SAVED="$out/$run" "$here/host_compare.sh" "$build"
done
