#!/usr/bin/env bash
# Network faults between real namespaces (reliability-anchors.md §4 F8-F11; docs/RELIABILITY.md).
#
# 2 emulated hosts x 2 ranks (tests/multihost/netns.sh: one network namespace per host on a
# bridge of their own, 198.51.100.0/24), shm inside a host and the transport under test
# across: tcp (TRNCCL_TRANSPORT=shm,tcp), libfabric's tcp provider (shm,ofi, FI_PROVIDER=tcp: rxm over
# tcp in libfabric 1.17) or, as ofi-net, libfabric 1.17's native tcp RDM provider (FI_PROVIDER=net).
# The ranks (fault_rank loop check=1) run all-reduces and check every element of every result;
# the script injects one fault while they run and checks what each rank reports, and when:
#
#   reset      iptables REJECT --reject-with tcp-reset on every tcp packet between the hosts
#              (both namespaces; the bootstrap port and resets themselves let through): every
#              rank errors through its own links within 1 s
#   link_down  ip link set mh1 down, no reset: every rank errors within T + 2 s
#              (T = TRNCCL_LIVENESS_TIMEOUT_MS), each host through the transport's liveness;
#              after link up, a new communicator works
#   loss       30 % of the packets from host 0 entering host 1 dropped (iptables statistic): every
#              all-reduce completes and is right, no error; the slowdown is printed
#   partition  host 1 drops everything it sends to host 0 (one-way): every rank errors within
#              T + 2 s, none hangs
#   delay      a user-space proxy (delay_proxy) delays every byte between the hosts by T/4:
#              results right, no timeout; then by 2 T: every rank errors within T/4 + T + 2 s,
#              through the liveness timeout, not before T/2
#
# In reset, link_down and delay a rank holds after its error (hold=1) until a rank of each host
# has seen the fault through its own transport (wait_own): one that aborted and exited at once
# would tell the others (bootstrap, end of file) first. In partition it exits at once, as an
# application would: host 1 may learn of it that way.
#
# Usage: netfault_test.sh <fault> <tcp|ofi|ofi-net> <fault_rank> <delay_proxy>
# Exit: 0 passed, 1 failed, 77 skipped (no namespaces or iptables here, no ofi transport or no net;
# the reason is printed). Env: NF_DEADLINE (s, default 100) bounds the whole run; NF_KEEP=1
# keeps the logs; NF_HAVE_OFI=0 says the build has no ofi transport; NF_LOSS_COUNT and
# NF_LOSS_ITERS (loss only) set the all-reduce's count (default 16384) and iterations (10).
# Everything (ranks, proxies, namespaces and the rules in them) is removed on any exit.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../multihost/netns.sh"

FAULT=${1:?usage: netfault_test.sh <fault> <tcp|ofi|ofi-net> <fault_rank> <delay_proxy>}
TRANSPORT=${2:?}
VIA=${TRANSPORT%%-*}  # the trnccl transport: ofi-net is ofi
RANK_BIN=${3:?}
PROXY_BIN=${4:?}
NRANKS=4
RPH=2
PORT=29500       # the bootstrap root, in host 0's namespace
PROXY_PORT=9999  # delay_proxy, in each host's namespace
DEADLINE=$((SECONDS + ${NF_DEADLINE:-100}))
LIVENESS_MS=2000  # T of the link_down, partition and delay scenarios
netns_clean_env
netns_init nf 2
LOGS=""
PIDS=()
PROXIES=()

log() { echo "netfault_test: $FAULT/$TRANSPORT: $*"; }

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for pid in "${PIDS[@]}" "${PROXIES[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}" "${PROXIES[@]}"; do wait "$pid" 2>/dev/null; done
  if ! netns_down; then
    log "FAILED: the namespaces of run $NETNS_ID outlived it"
    rc=1
  fi
  if [ "${NF_KEEP:-0}" = 1 ] || { [ $rc -ne 0 ] && [ $rc -ne 77 ]; }; then
    [ -n "$LOGS" ] && log "logs kept in $LOGS"
  else
    rm -rf "$LOGS"
  fi
  exit $rc
}

show_logs() {
  for ((r = 0; r < NRANKS; r++)); do
    echo "----- rank $r stdout"; tail -n 6 "$LOGS/$r.out"
    echo "----- rank $r stderr"; grep -v " INFO " "$LOGS/$r.err" | tail -n 12
  done
}

fail() {
  log "FAILED: $*"
  show_logs
  exit 1
}

now_ms() { "$RANK_BIN" now; }
ipt() {  # ipt <host> <iptables arguments...>
  local k=$1
  shift
  ip netns exec "${NETNS_HOST[k]}" iptables -w "$@" || fail "iptables $* in host $k"
}

# start_ranks [key=value ...]: the job, with the fault_rank options given. Environment as a
# user on two hosts would set it; NF_ENV (space-separated VAR=value) adds to it.
start_ranks() {
  local transports=shm,tcp
  local -a extra=()
  [ "$TRANSPORT" = ofi ] && transports=shm,ofi && extra=(FI_PROVIDER=tcp)
  [ "$TRANSPORT" = ofi-net ] && transports=shm,ofi && extra=(FI_PROVIDER=net)
  for ((r = 0; r < NRANKS; r++)); do
    local h=$((r / RPH))
    (
      export TRNCCL_COMM_ID="$(netns_ip 0):$PORT" TRNCCL_SOCKET_IFNAME="=mh$h" \
        FI_TCP_IFACE="mh$h" FI_NET_IFACE="mh$h" TRNCCL_TRANSPORT="$transports" TRNCCL_ALGO=ring \
        TRNCCL_TIMEOUT_MS=30000 TRNCCL_DEBUG=INFO TRNCCL_DEBUG_SUBSYS=INIT,NET,BOOT
      for kv in "${extra[@]}" ${NF_ENV:-}; do export "${kv?}"; done
      netns_exec "$h" "$RANK_BIN" loop "$r" "$NRANKS" check=1 hold=0 \
        watchdog=$((DEADLINE - SECONDS)) "$@"
    ) >"$LOGS/$r.out" 2>"$LOGS/$r.err" </dev/null &
    PIDS+=($!)
  done
}

# first_line <rank> <prefix>: the rest of rank's first stdout line starting with prefix.
first_line() { grep -m1 "^$2" "$LOGS/$1.out" | cut -c$((${#2} + 1))-; }

# wait_all <prefix> <seconds> [ranks]: until every rank (of ranks, default all) printed a line
# starting with prefix; fails at the limit, or when a rank printed WRONG or exited without it.
wait_all() {
  local prefix=$1 until=$((SECONDS + $2)) ranks=${3:-$(seq -s ' ' 0 $((NRANKS - 1)))} r have
  while true; do
    have=0
    for r in $ranks; do
      grep -q "^WRONG" "$LOGS/$r.out" && fail "rank $r returned a wrong sum: $(first_line $r WRONG)"
      if grep -q "^$prefix" "$LOGS/$r.out"; then
        have=$((have + 1))
      elif ! kill -0 "${PIDS[r]}" 2>/dev/null && ! grep -q "^$prefix" "$LOGS/$r.out"; then
        fail "rank $r exited before printing '$prefix'"  # (it may print, then exit, meanwhile)
      fi
    done
    ((have == $(wc -w <<<"$ranks"))) && return 0
    ((SECONDS >= until || SECONDS >= DEADLINE)) && fail "not every rank printed '$prefix' within $2 s"
    sleep 0.05
  done
}

# wait_exits: every rank exits, with 0.
wait_exits() {
  local r rc
  for ((r = 0; r < NRANKS; r++)); do
    while kill -0 "${PIDS[r]}" 2>/dev/null; do
      ((SECONDS >= DEADLINE)) && fail "rank $r still runs at the deadline"
      sleep 0.05
    done
    wait "${PIDS[r]}"
    rc=$?
    ((rc == 0)) || fail "rank $r exited with $rc"
  done
}

# check_placement: the cross-host pairs took the transport under test (INIT line of
# src/comm/transport_set.cc), so the fault hits it.
check_placement() {
  local r p want got
  for ((r = 0; r < NRANKS; r++)); do
    for ((p = 0; p < NRANKS; p++)); do
      ((p == r)) && continue
      want=$VIA
      ((p / RPH == r / RPH)) && want=shm
      got=$(grep -o "rank $r -> rank $p via [a-z]*" "$LOGS/$r.err" | awk '{print $NF}')
      [ "$got" = "$want" ] || fail "rank $r -> rank $p via '${got:-nothing}', expected $want"
    done
  done
}

# check_errors <t0> <max ms> <min ms> <pattern> [hosts] [ranks]: every rank (of ranks, default
# all) printed ERROR at most max ms (and at least min ms) after t0, and on each of the hosts
# (default: both) at least one rank's error matches pattern (its own transport saw the fault,
# not just the bootstrap relaying another rank's failure).
check_errors() {
  local t0=$1 max=$2 min=$3 pattern=$4 hosts=${5:-0 1} r line t h own=(0 0)
  for r in ${6:-$(seq -s ' ' 0 $((NRANKS - 1)))}; do
    line=$(first_line $r "ERROR ")
    t=$(($(echo "$line" | awk '{print $1}') - t0))
    log "rank $r: error after $t ms: $(echo "$line" | cut -d' ' -f5-)"
    ((t <= max)) || fail "rank $r reported its error $t ms after the fault (limit $max ms)"
    ((t >= min)) || fail "rank $r reported its error $t ms after the fault, before $min ms"
    echo "$line" | grep -Eq "$pattern" && own[r / RPH]=1
  done
  for h in $hosts; do
    ((own[h])) || fail "no rank of host $h saw the fault through $TRANSPORT ('$pattern')"
  done
}

# wait_own <pattern> <seconds>: until on each host some rank printed an ERROR matching pattern
# (its own transport saw the fault). Then `touch go` releases the held ranks: they abort, and
# a rank that waits only on a held local peer (shm) learns of it that way, as it would from an
# application that aborts on the error.
wait_own() {
  local until=$((SECONDS + $2)) r own
  while true; do
    own=(0 0)
    for ((r = 0; r < NRANKS; r++)); do
      grep -q "^WRONG" "$LOGS/$r.out" && fail "rank $r returned a wrong sum: $(first_line $r WRONG)"
      first_line $r "ERROR " | grep -Eq "$1" && own[r / RPH]=1
    done
    ((own[0] && own[1])) && return 0
    ((SECONDS >= until || SECONDS >= DEADLINE)) && fail "no rank of some host saw '$1' within $2 s"
    sleep 0.05
  done
}

# wait_each <pattern> <seconds>: until every rank printed an ERROR matching pattern: each saw
# the fault through its own links, also one whose executor waits only on a held shm peer (it
# checks every link of the communicator while it waits, src/schedule/executor.cc).
wait_each() {
  local until=$((SECONDS + $2)) r n
  while true; do
    n=0
    for ((r = 0; r < NRANKS; r++)); do
      grep -q "^WRONG" "$LOGS/$r.out" && fail "rank $r returned a wrong sum: $(first_line $r WRONG)"
      first_line $r "ERROR " | grep -Eq "$1" && n=$((n + 1))
    done
    ((n == NRANKS)) && return 0
    ((SECONDS >= until || SECONDS >= DEADLINE)) &&
      fail "only $n of $NRANKS ranks saw '$1' through their own links within $2 s"
    sleep 0.05
  done
}

# slowdown <first lossy iteration>: rank 0's mean iteration time before and after.
slowdown() {
  awk -v k="$1" '/^ITER / { t[$2] = $3; n = $2 }
    END { before = (t[k - 1] - t[0]) / (k - 1); after = (t[n] - t[k - 1]) / (n - k + 1);
          printf "%d iterations at %.0f ms without loss, %d at %.0f ms with 30 %% loss: %.1fx\n",
                 k - 1, before, n - k + 1, after, after / before }' "$LOGS/0.out"
}

start_proxies() {  # start_proxies <delay ms> <delay ms after SIGUSR1>
  for k in 0 1; do
    (netns_exec "$k" "$PROXY_BIN" "$PROXY_PORT" "$1" "$2" $((DEADLINE - SECONDS))) \
      >"$LOGS/proxy$k.out" 2>&1 </dev/null &
    PROXIES+=($!)
    # Connections from the other host, but to the bootstrap root, go through this host's proxy.
    ipt "$k" -t nat -A PREROUTING -p tcp --dport "$PORT" -j RETURN
    ipt "$k" -t nat -A PREROUTING -p tcp -s "$(netns_ip $((1 - k)))" \
      -j REDIRECT --to-ports "$PROXY_PORT"
  done
  for k in 0 1; do
    until grep -q LISTENING "$LOGS/proxy$k.out"; do
      ((SECONDS < DEADLINE)) || fail "delay_proxy $k did not start"
      sleep 0.05
    done
  done
}

# --- preconditions: skip (77) with the reason when this cannot run here -------------------------
for bin in "$RANK_BIN" "$PROXY_BIN"; do [ -x "$bin" ] || { log "FAILED: '$bin' is missing"; exit 1; }; done
if [ "$VIA" = ofi ] && [ "${NF_HAVE_OFI:-1}" != 1 ]; then
  echo "SKIPPED: this build has no ofi transport (libfabric not found at configure)"
  exit 77
fi
if [ "$TRANSPORT" = ofi-net ] && ! fi_info -p net -t FI_EP_RDM >/dev/null 2>&1; then
  echo "SKIPPED: libfabric lists no net provider (1.17's name; 'tcp' from 1.18 on), or no fi_info"
  exit 77
fi
command -v iptables >/dev/null || netns_skip "'iptables' is not installed (scripts/deps.sh installs it)"
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/trnccl-netfault.XXXXXX") || exit 1
trap cleanup EXIT
trap 'log "FAILED: interrupted"; exit 1' TERM INT
netns_preflight
err=$(netns_up 2>&1) || { log "FAILED: setting up the emulated hosts: $err"; exit 1; }
err=$(ip netns exec "${NETNS_HOST[0]}" iptables -w -L -n 2>&1) ||
  netns_skip "iptables does not work in a network namespace here: $err"

# --- the scenarios -----------------------------------------------------------------------------
case $FAULT in
  reset)
    # T as in the others: over ofi a reset is seen at the heartbeats' pace (T/8).
    NF_ENV="TRNCCL_LIVENESS_TIMEOUT_MS=$LIVENESS_MS" start_ranks count=1048576 hold=1 go="$LOGS/go"
    wait_all "ITER 2 " 60
    check_placement
    t0=$(now_ms)
    for k in 0 1; do  # the other host's segments but the bootstrap's, and but resets
      # (Two rules: iptables-nft 1.8.9 matches '! --sport P ! --dport P' wrongly.)
      ipt "$k" -A INPUT -p tcp -m multiport --ports "$PORT" -j ACCEPT
      ipt "$k" -A INPUT -p tcp -s "$(netns_ip $((1 - k)))" --tcp-flags RST NONE \
        -j REJECT --reject-with tcp-reset
    done
    reset="(tcp|ofi): .*(reset|Broken pipe|closed|failed)"
    # Every rank through its own links within 1 s, while the others hold (also a rank whose
    # executor waits only on a held shm peer: it checks all its links while it waits). Over
    # ofi a reset shows on the heartbeats' own connection: an error, or a heartbeat rxm keeps
    # queued once the other host refuses to reconnect (transports/ofi/heartbeat.h).
    wait_each "$reset" 10
    touch "$LOGS/go"
    check_errors "$t0" 1000 0 "$reset"
    wait_exits
    ;;
  link_down)
    NF_ENV="TRNCCL_LIVENESS_TIMEOUT_MS=$LIVENESS_MS" start_ranks count=262144 hold=1 \
      again=$((PORT + 1)) go="$LOGS/go" again_go="$LOGS/again" end="$LOGS/end"
    wait_all "ITER 2 " 60
    check_placement
    t0=$(now_ms)
    ip -n "${NETNS_HOST[1]}" link set mh1 down || fail "cannot take mh1 down"
    wait_own "heard nothing from rank" 15
    touch "$LOGS/go"
    wait_all "ERROR " 15
    check_errors "$t0" $((LIVENESS_MS + 2000)) $((LIVENESS_MS / 2)) "heard nothing from rank"
    ip -n "${NETNS_HOST[1]}" link set mh1 up || fail "cannot bring mh1 up"
    touch "$LOGS/again"
    wait_all "LOOPED" 40
    touch "$LOGS/end"
    wait_all "DONE" 20
    log "after link up, a new communicator ran 3 checked all-reduces on every rank"
    wait_exits
    ;;
  loss)
    # NF_LOSS_COUNT / NF_LOSS_ITERS make it heavier by hand (65536: 256 KiB all-reduces).
    iters=${NF_LOSS_ITERS:-10}
    lossy=6  # the first iteration run with loss
    # At 30 % loss the kernel's retransmission backoff now and then stalls a connection for
    # 10-25 s (one segment lost 6-7 times in a row: 0.2 + 0.4 + ... s); that is the network,
    # not a failure, so the collective deadline is above it here. Heartbeats (default T) pass.
    NF_ENV="TRNCCL_TIMEOUT_MS=120000" start_ranks count=${NF_LOSS_COUNT:-16384} iters=$iters per_sync=1 \
      pause_at=$lossy go="$LOGS/go" end="$LOGS/end"
    wait_all "PAUSED " 60
    check_placement
    ipt 1 -A INPUT -i mh1 -s "$(netns_ip 0)" -m statistic --mode random --probability 0.3 -j DROP
    touch "$LOGS/go"
    wait_all "LOOPED" $((DEADLINE - SECONDS))
    touch "$LOGS/end"
    wait_all "DONE" 20
    for ((r = 0; r < NRANKS; r++)); do
      ! grep -q "^ERROR" "$LOGS/$r.out" || fail "rank $r failed under loss: $(first_line $r ERROR)"
    done
    dropped=$(ip netns exec "${NETNS_HOST[1]}" iptables -w -L INPUT -v -n -x | awk '/statistic/ {print $1}')
    ((dropped > 0)) || fail "the loss rule dropped nothing"
    log "no error, every sum right; $(slowdown $lossy); $dropped packets dropped"
    wait_exits
    ;;
  partition)
    NF_ENV="TRNCCL_LIVENESS_TIMEOUT_MS=$LIVENESS_MS" start_ranks count=262144
    wait_all "ITER 2 " 60
    check_placement
    t0=$(now_ms)
    ipt 1 -A OUTPUT -d "$(netns_ip 0)" -j DROP
    wait_all "ERROR " 15
    # Host 0 hears nothing: its liveness fails the links. Host 1 still receives, and may
    # learn it from host 0's ranks (their abort reaches it) before its own check fires.
    check_errors "$t0" $((LIVENESS_MS + 2000)) $((LIVENESS_MS / 2)) "heard nothing from rank" 0
    wait_exits
    ;;
  delay)
    low=$((LIVENESS_MS / 4))
    start_proxies "$low" $((2 * LIVENESS_MS))
    NF_ENV="TRNCCL_LIVENESS_TIMEOUT_MS=$LIVENESS_MS" start_ranks count=16384 hold=1 go="$LOGS/go"
    wait_all "ITER 0 " 60
    check_placement
    for ((r = 0; r < NRANKS; r++)); do
      ! grep -q "^ERROR" "$LOGS/$r.out" || fail "rank $r failed with $low ms of delay: $(first_line $r ERROR)"
    done
    pairs=$(cat "$LOGS"/proxy*.out | grep -c "^PAIR")
    ((pairs > 0)) || fail "no connection went through the delay proxies"
    log "with $low ms added each way ($pairs connections delayed): init and 2 all-reduces" \
      "right, no timeout"
    t0=$(now_ms)
    kill -USR1 "${PROXIES[@]}"
    wait_own "heard nothing from rank" 15
    touch "$LOGS/go"
    wait_all "ERROR " 15
    check_errors "$t0" $((low + LIVENESS_MS + 2000)) $((LIVENESS_MS / 2)) "heard nothing from rank"
    wait_exits
    ;;
  *) log "FAILED: unknown fault '$FAULT'"; exit 1 ;;
esac
log "PASSED"
exit 0
