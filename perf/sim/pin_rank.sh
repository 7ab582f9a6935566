#!/usr/bin/env bash
# Runs a command on the (r mod k)-th of the k CPUs this process may use, r being its MPI rank
# (OMPI_COMM_WORLD_RANK): the placement trnccl-sim-calibrate gives its process r, so that a
# benchmark and the calibration it is compared with share the cores the same way
# (host_compare.sh: mpirun --bind-to none ... perf/sim/pin_rank.sh all_reduce_perf ...).
set -euo pipefail
mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
rank=${OMPI_COMM_WORLD_RANK:-0}
exec taskset -c "${cpus[$((rank % ${#cpus[@]}))]}" "$@"
