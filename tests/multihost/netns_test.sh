#!/usr/bin/env bash
# Multi-host test on one machine: HOSTS emulated hosts x RANKS_PER_HOST ranks.
#
# The hosts are network namespaces on a bridge of their own, addressed from TEST-NET-2
# (198.51.100.<host+1>/24), made and removed by netns.sh (shared with tests/netfault). Each
# rank runs inside its host's network namespace and in a UTS namespace of its own whose
# hostname is the host's name: trnccl tells hosts apart by hostname + boot_id
# (src/comm/peer_info.cc), so ranks of one emulated host share /dev/shm and use shm, and ranks
# of different hosts go over the veths (tcp, or libfabric's tcp provider for the ofi
# variant). Ranks rendezvous through
# TRNCCL_COMM_ID=198.51.100.1:<port> (no MPI) and run multihost_rank.cc, which checks every
# result; this script then checks, from each rank's TRNCCL_DEBUG=INFO log, that every peer got
# the transport its placement calls for and that forced algorithms really ran.
#
# Usage: netns_test.sh <multihost_rank binary> [variant ...]   (variants: tcp hier ofi; all)
# Exit: 0 passed, 1 failed, 77 skipped (no namespaces here; the reason is printed).
# Env: MH_HOSTS (2), MH_RANKS_PER_HOST (4), MH_COUNTS (1,4099,1048579), MH_DEADLINE (120 s for
# the whole script), MH_KEEP=1 keeps the logs directory, MH_HAVE_OFI=0 skips the ofi variant.
# Names carry a per-run suffix (pid + random), so concurrent runs never collide; everything
# is torn down on exit, whatever the cause, and the script checks that nothing is left.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/netns.sh"

BIN=${1:?usage: netns_test.sh <multihost_rank> [variant ...]}
shift
VARIANTS=("$@")
((${#VARIANTS[@]})) || VARIANTS=(tcp hier ofi)
HOSTS=${MH_HOSTS:-2}
RPH=${MH_RANKS_PER_HOST:-4}
NRANKS=$((HOSTS * RPH))
COUNTS=${MH_COUNTS:-1,4099,1048579}
DEADLINE=$((SECONDS + ${MH_DEADLINE:-120}))
PORT=29500  # in host 0's own network namespace: no other process can hold it
netns_clean_env  # the ranks see only what this script sets

netns_init mh "$HOSTS"
LOGS=""
PIDS=()

log() { echo "netns_test: $*"; }

# --- teardown: ranks (by pid), then the hosts and their switch -------------------------------
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  if ! netns_down; then
    log "FAILED: the namespaces of run $NETNS_ID outlived it"
    rc=1
  fi
  if [ "${MH_KEEP:-0}" = 1 ] || [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    log "logs kept in $LOGS"
  else
    rm -rf "$LOGS"
  fi
  exit $rc
}
on_signal() { log "FAILED: interrupted by signal $1"; exit 1; }

# --- preconditions: skip (77) with the reason when namespaces can't be made here -----------
[ -x "$BIN" ] || { log "FAILED: rank binary '$BIN' is missing"; exit 1; }
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/trnccl-multihost.XXXXXX") || exit 1
trap cleanup EXIT
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT
netns_preflight

# --- the emulated hosts ---------------------------------------------------------------------
if ! err=$(netns_up 2>&1); then
  log "FAILED: setting up the emulated hosts: $err"
  exit 1
fi
log "$HOSTS hosts x $RPH ranks: namespaces ${NETNS_HOST[*]} on switch $NETNS_SWITCH"
for ((h = 0; h < HOSTS; h++)); do
  ip -n "${NETNS_HOST[h]}" -br addr show "mh$h" | sed 's/^/netns_test:   /'
done

# --- one job: NRANKS ranks, each in its host's namespaces, until all exit or the deadline ---
# run_job <name> <algos> <transports> [VAR=value ...]: logs in $LOGS/<name>.<rank>.{out,err}
run_job() {
  local name=$1 algos=$2 transports=$3
  shift 3
  local -a extra=("$@")
  PIDS=()
  for ((r = 0; r < NRANKS; r++)); do
    local h=$((r / RPH))
    (
      export TRNCCL_COMM_ID="$(netns_ip 0):$PORT" TRNCCL_SOCKET_IFNAME="=mh$h" \
        TRNCCL_TRANSPORT="$transports" TRNCCL_TIMEOUT_MS=30000 \
        TRNCCL_DEBUG=INFO TRNCCL_DEBUG_SUBSYS=INIT,TUNE,NET FI_TCP_IFACE="mh$h"
      for kv in "${extra[@]}"; do export "${kv?}"; done
      netns_exec "$h" "$BIN" "$r" "$NRANKS" "algos=$algos" "counts=$COUNTS" \
        watchdog=$((DEADLINE - SECONDS))
    ) >"$LOGS/$name.$r.out" 2>"$LOGS/$name.$r.err" </dev/null &
    PIDS+=($!)
  done
  local running=$NRANKS
  while ((running > 0)); do
    running=0
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && running=$((running + 1)); done
    if ((running > 0 && SECONDS >= DEADLINE)); then
      log "FAILED: $name: $running rank(s) still running at the deadline; killing them"
      show_logs "$name"
      exit 1  # the trap ends the ranks and removes the hosts
    fi
    ((running > 0)) && sleep 0.2
  done
  local bad=0
  for ((r = 0; r < NRANKS; r++)); do
    wait "${PIDS[r]}"
    local rc=$?
    if [ $rc -ne 0 ] || ! grep -qx DONE "$LOGS/$name.$r.out"; then
      log "FAILED: $name: rank $r exited with $rc"
      bad=1
    fi
  done
  PIDS=()
  return $bad
}

# check_transports <name> <inter>: every rank reached every peer, over shm on its own host and
# over <inter> across hosts (the INFO line of src/comm/transport_set.cc).
check_transports() {
  local name=$1 inter=$2 bad=0 shm=0 net=0
  for ((r = 0; r < NRANKS; r++)); do
    for ((p = 0; p < NRANKS; p++)); do
      ((p == r)) && continue
      local want=$inter
      ((p / RPH == r / RPH)) && want=shm
      local got
      # Every communicator of the rank (multihost_rank splits one per algorithm setting).
      got=$(grep -o "rank $r -> rank $p via [a-z]*" "$LOGS/$name.$r.err" | awk '{print $NF}' |
        sort -u)
      if [ "$got" != "$want" ]; then
        log "FAILED: $name: rank $r -> rank $p via '${got:-nothing}', expected $want"
        bad=1
      elif [ "$want" = shm ]; then
        shm=$((shm + 1))
      else
        net=$((net + 1))
      fi
    done
  done
  if [ "$inter" = tcp ]; then  # tcp listeners (on the accepting side) sit on the host's veth
    local listeners=0
    for ((r = 0; r < NRANKS; r++)); do
      local h=$((r / RPH)) line
      while read -r line; do
        listeners=$((listeners + 1))
        if [[ "$line" != *" on 198.51.100.$((h + 1)):"*" (mh$h)" ]]; then
          log "FAILED: $name: rank $r's tcp listener is not on mh$h: $line"
          bad=1
        fi
      done < <(grep "tcp: rank $r listening on" "$LOGS/$name.$r.err")
    done
    ((listeners > 0)) || { log "FAILED: $name: no tcp listener in the logs"; bad=1; }
  fi
  ((bad)) || log "$name: transports as placed: $shm pairs over shm, $net over $inter"
  return $bad
}

# check_algos <name> <algo ...>: rank 0 ran all three collectives with each forced algorithm
# (the planner's first-use INFO line) and never fell back to the tuner.
check_algos() {
  local name=$1 bad=0
  shift
  local err="$LOGS/$name.0.err"
  if grep -q "falling back" "$err"; then
    log "FAILED: $name: a forced algorithm was declined: $(grep -m1 'falling back' "$err")"
    bad=1
  fi
  for algo in "$@"; do
    for coll in allreduce allgather reducescatter; do
      if ! grep -Eq "$coll: algorithm $algo[ ,]" "$err"; then
        log "FAILED: $name: no '$coll: algorithm $algo' in rank 0's log"
        bad=1
      fi
    done
  done
  ((bad)) || log "$name: algorithms used: $(grep -o '[a-z]*: algorithm [a-z0-9]*' "$err" | sort -u | tr '\n' ' ')"
  return $bad
}

show_logs() {
  local name=$1
  for ((r = 0; r < NRANKS; r++)); do
    echo "----- $name rank $r stdout"; tail -n 5 "$LOGS/$name.$r.out"
    echo "----- $name rank $r stderr"; grep -v " INFO " "$LOGS/$name.$r.err" | tail -n 20
  done
}

# --- variants ---------------------------------------------------------------------------------
failed=0
for v in "${VARIANTS[@]}"; do
  [ "$v" = all ] && continue
  ok=1
  start=$SECONDS
  case $v in
    tcp)  # hosts told apart only by the namespaces: shm inside, tcp across
      run_job tcp default,ring shm,tcp || ok=0
      ((ok)) && { check_transports tcp tcp || ok=0; }
      ((ok)) && { check_algos tcp ring || ok=0; } ;;
    hier)  # The instances the hierarchical algorithm and the tuner use are the hosts found at
      # init (hostname + boot_id), whatever the description's instance size says.
      run_job hier hierarchical shm,tcp || ok=0
      ((ok)) && { check_transports hier tcp || ok=0; }
      ((ok)) && { check_algos hier hierarchical || ok=0; }
      if ((ok)) && ! grep -q "ranks on $HOSTS hosts: instance grid ${HOSTS}x$RPH from the hosts" \
          "$LOGS/hier.0.err"; then
        log "FAILED: hier: the communicator does not see $HOSTS hosts of $RPH ranks:"
        grep -m1 "ranks on .* instance" "$LOGS/hier.0.err"
        ok=0
      fi ;;
    ofi)  # across hosts over libfabric's tcp provider (under ofi_rxm)
      if [ "${MH_HAVE_OFI:-1}" != 1 ]; then
        log "ofi: SKIPPED: this build has no ofi transport (libfabric not found at configure)"
        continue
      fi
      run_job ofi default,ring shm,ofi FI_PROVIDER=tcp || ok=0
      ((ok)) && { check_transports ofi ofi || ok=0; }
      ((ok)) && { check_algos ofi ring || ok=0; }
      for ((r = 0; ok && r < NRANKS; r++)); do  # libfabric tcp on this host's veth
        if ! grep -q "ofi: rank $r opened tcp;ofi_rxm, domain mh$((r / RPH))," "$LOGS/ofi.$r.err"; then
          log "FAILED: ofi: rank $r did not open tcp;ofi_rxm on mh$((r / RPH)):"
          grep "ofi: rank $r opened" "$LOGS/ofi.$r.err"
          ok=0
        fi
      done
      ((ok)) && log "ofi: every rank opened tcp;ofi_rxm on its host's veth (mh<host>)" ;;
    *) log "unknown variant '$v'"; ok=0 ;;
  esac
  if ((ok)); then
    log "$v: PASSED in $((SECONDS - start)) s ($(grep -c '^OK' "$LOGS/$v.0.out") checked calls on rank 0)"
  else
    show_logs "$v"
    failed=1
  fi
done
((failed)) && exit 1
log "PASSED"
exit 0
