#!/usr/bin/env bash
# trnccl-sim's prediction of this machine against a measurement (docs/SIMULATOR.md, "This
# machine"): calibrates a `host` description for N ranks (trnccl-sim-calibrate --chips N, the
# median of --repeat runs, with its rates per working set: the bands), predicts `mpirun -np N
# all_reduce_perf` over shm at N = 2 and 4 ranks with it, runs the benchmark REPEAT times per
# size (enough iterations for about a second each), and prints one table of predicted against
# the median measured time (out of place), with the lowest and highest measurement. Two
# predictions: the description's (local copy and sum rates) and, for comparison, session 10's
# with the rates of copying and summing a neighbour's fresh data (trnccl-sim-calibrate
# --neighbour-out), which predicted no better; and, since session 11, the description without
# its measured costs per message, per call and per fresh message read in place (device
# message_us, call_us and in_place_fresh_us: the library's own ring steps, timed by the
# calibration; without them a message costs the model's default kMessageUs and a call nothing),
# the model before session 11 (with the engine's rules of today). KEEP=PREFIX keeps each
# calibrated description (PREFIX.hostN.yaml) and every measured time (PREFIX.measuredN.BYTES.txt,
# appended), so that a later model can predict them again (docs/SIMULATOR.md, fifteenth
# session; an older description is converted with trnccl-sim-calibrate --refit). SAVED=PREFIX
# measures nothing: it predicts with PREFIX.hostN.yaml against the times in
# PREFIX.measuredN.BYTES.txt (a KEEP run's; the neighbour's column is then 0, not kept).
# KEEP also keeps the calibration's output (PREFIX.calibrateN.txt: since session 18 each run
# of its step program, with what machine_probe.h saw, and which run the description took).
# Since session 18 every benchmark run is bracketed by a probe of the machine's slow mode (the
# one-way time of a cache line between the two CPUs, trnccl-sim-calibrate-step --probe; KEEP keeps
# them as PREFIX.hopN.BYTES.txt, "BEFORE AFTER" per run), and the last three columns are the
# median of the runs whose probes were both within twice the median of that rank count (the
# machine's usual mode, which the calibration's step program is held to), their count, and the
# prediction's error against it. The error column against the median of every run stays the
# figure of record.
# Both sides use the same algorithm (ring:
# TRNCCL_ALGO for the library, --algo for the simulator), the same pipeline slice (the shm
# connection's, 64 KiB: --slice for the simulator) and the same placement (rank r on the
# (r mod k)-th CPU, pin_rank.sh, as the calibration places its process r).
# The benchmark's runs are interleaved (every size once, then again, REPEAT times: default 7
# since the sixteenth session, 5 before, each size's five runs back to back).
# Usage: [REPEAT=7] perf/sim/host_compare.sh [build dir] [algorithm]
#        (a benchmark: run it on a quiet machine; about three minutes)
set -euo pipefail
build=${1:-build}
algo=${2:-ring}
repeat=${REPEAT:-7}
here=$(cd "$(dirname "$0")" && pwd)
keep=${KEEP:-}
saved=${SAVED:-}
yaml=$(mktemp --suffix=.yaml)
neighbour_yaml=$(mktemp --suffix=.yaml)
plain_yaml=$(mktemp --suffix=.yaml)
runs=$(mktemp -d)  # each cell's measured times, one per line
trap 'rm -rf "$yaml" "$neighbour_yaml" "$plain_yaml" "$runs"' EXIT
# size, iterations (about 0.2-1 s of benchmark per run at 4 ranks)
sizes=("65536 2000" "524288 500" "4194304 100" "33554432 20")
report() {
  awk -v n="$n" -v b="$bytes" -v p="$predicted" -v m="$med" -v lo="$low" -v hi="$high" \
    -v q="$other" -v z="$plain" -v u="$usual_us" -v k="$usual_runs" 'BEGIN {
      printf "%6d %10d %12.1f %12.1f %11.1f-%-11.1f %+7.0f%% %12.1f %+7.0f%% %12.1f %+7.0f%%",
      n, b, p, m, lo, hi, (p - m) / m * 100, z, (z - m) / m * 100, q, (q - m) / m * 100
      if (u > 0) printf " %10.1f %4d %+7.0f%%\n", u, k, (p - u) / u * 100
      else printf " %10s %4d %8s\n", "-", k, "-"}'
}
# The one-way time of a cache line between the two CPUs, us (trnccl-sim-calibrate-step --probe):
# the machine's slow mode (docs/SIMULATOR.md, eighteenth session) is 4-5x the usual time.
probe() { "$build/tools/trnccl-sim/trnccl-sim-calibrate-step" --probe | awk '{print $2}'; }
# The median of the times (file $1) whose runs' probes before and after (file $2, "BEFORE AFTER"
# a line, in the same order) are both within twice the median probe of this rank count's runs
# (file $3), and how many they are: the benchmark in the machine's usual mode ("0 0": none). The
# median, not the least: a third, faster mode (0.014 us against the usual 0.03) is rare.
usual() {
  local typical vals
  typical=$(awk '{print $1; print $2}' "$3" | median | cut -d' ' -f1)
  vals=$(paste "$1" "$2" | awk -v l="$typical" 'NF == 3 && $2 <= 2 * l && $3 <= 2 * l {print $1}')
  if [[ -z $vals ]]; then
    echo "0 0"
    return
  fi
  echo "$(median <<<"$vals" | cut -d' ' -f1) $(wc -l <<<"$vals")"
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR]}'; }
printf '%6s %10s %12s %12s %23s %8s %12s %8s %12s %8s %10s %4s %8s\n' ranks bytes predicted_us \
  measured_us 'lowest-highest' error no_msg_cost error neighbour_model error usual_us runs error
for n in 2 4; do
  if [[ -n $saved ]]; then
    cp "$saved.host$n.yaml" "$yaml"
  else
    log=/dev/null
    if [[ -n $keep ]]; then log="$keep.calibrate$n.txt"; fi
    "$build/tools/trnccl-sim/trnccl-sim-calibrate" --chips "$n" --repeat "$repeat" --out "$yaml" \
      --neighbour-out "$neighbour_yaml" | tee "$log" >&2
  fi
  if [[ -n $keep ]]; then cp "$yaml" "$keep.host$n.yaml"; fi
  sed 's/message_us: [0-9.]*, //; s/in_place_fresh_us: [0-9.]*, //; s/call_us: [0-9.]*, //' \
    "$yaml" >"$plain_yaml"
  # The runs interleaved: repetition r of every size, then r + 1 (sixteenth session), so that a
  # slow spell of the machine lands on one run of each size, not on every run of one size.
  if [[ -z $saved ]]; then
    for ((r = 0; r < repeat; ++r)); do
      for entry in "${sizes[@]}"; do
        read -r bytes iters <<<"$entry"
        before=$(probe)
        timeout 600 mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n" \
          -x TRNCCL_ALGO="$algo" "$here/pin_rank.sh" "$build/perf/all_reduce_perf" \
          -b "$bytes" -e "$bytes" -n "$iters" -w $((iters / 10 + 1)) |
          awk '!/^#/ && NF >= 6 && $1 ~ /^[0-9]+$/ {print $6}' >>"$runs/$n.$bytes"
        echo "$before $(probe)" >>"$runs/$n.$bytes.hop"
      done
    done
  fi
  for entry in "${sizes[@]}"; do
    read -r bytes iters <<<"$entry"
    predict() {
      "$build/tools/trnccl-sim/trnccl-sim" "$1" --ranks "$n" --coll allreduce \
        -b "$bytes" -e "$bytes" --slice 64K --algo "$algo" | awk '!/^#/ && NF {print $6}'
    }
    predicted=$(predict "$yaml")
    plain=$(predict "$plain_yaml")
    if [[ -n $saved ]]; then
      other=0
      read -r med low high < <(median <"$saved.measured$n.$bytes.txt")
      usual_us=0 usual_runs=0
      if [[ -f $saved.hop$n.$bytes.txt ]]; then
        read -r usual_us usual_runs < <(usual "$saved.measured$n.$bytes.txt" \
          "$saved.hop$n.$bytes.txt" <(cat "$saved.hop$n".*.txt))
      fi
      report
      continue
    fi
    other=$(predict "$neighbour_yaml")
    if [[ -n $keep ]]; then
      cat "$runs/$n.$bytes" >>"$keep.measured$n.$bytes.txt"
      cat "$runs/$n.$bytes.hop" >>"$keep.hop$n.$bytes.txt"
    fi
    read -r med low high < <(median <"$runs/$n.$bytes")
    read -r usual_us usual_runs < <(usual "$runs/$n.$bytes" "$runs/$n.$bytes.hop" \
      <(cat "$runs/$n".*.hop))
    report
  done
done
