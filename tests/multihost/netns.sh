# Emulated hosts on one machine (DESIGN.md "Test hosts"), for test scripts to source:
# tests/multihost/netns_test.sh and tests/netfault/netfault_test.sh.
#
# Each host is a network namespace trnccl-<tag>-<id>-h<k> with one interface, mh<k>, addressed
# 198.51.100.<k+1>/24 (TEST-NET-2: it exists only in these namespaces). The hosts' veths meet
# at a bridge inside a namespace of its own, trnccl-<tag>-<id>-sw (the "switch"), so nothing of
# a run touches the root namespace, its routes or its firewall, and concurrent runs (another
# <id>) cannot see each other. A rank runs in its host's network namespace and in a UTS
# namespace whose hostname is the host's (trnccl groups ranks by hostname + boot id), started
# by netns_exec, which execs so that the caller's pid is the rank's.
#
#   netns_clean_env            unsets TRNCCL_* and FI_* (make test sets TRNCCL_SOCKET_IFNAME=lo):
#                              the ranks see only what the test sets
#   netns_init <tag> <hosts>   names for this run (NETNS_ID, NETNS_HOST[], NETNS_SWITCH)
#   netns_preflight            exits 77 with the reason when namespaces cannot be made here
#   netns_up                   makes the switch and the hosts; fails with what went wrong
#   netns_down                 removes everything of this run; 1 if something is left
#   netns_exec <k> cmd...      runs cmd as a rank of host k (never returns)
#   netns_ip <k>               prints host k's address
# Callers trap EXIT (and TERM, INT) and call netns_down there, so that a failing or killed
# test leaves nothing behind; iptables rules live in the hosts' namespaces and go with them.

NETNS_ID=""
NETNS_SWITCH=""
NETNS_HOST=()

netns_clean_env() {
  local var
  while read -r var; do unset "$var"; done < <(compgen -e | grep -E '^(TRNCCL_|FI_)')
}

netns_init() {
  local tag=$1 hosts=$2
  NETNS_ID=$(printf '%x%02x' $$ $((RANDOM % 256)))
  NETNS_SWITCH="trnccl-$tag-$NETNS_ID-sw"
  NETNS_HOST=()
  for ((k = 0; k < hosts; k++)); do NETNS_HOST+=("trnccl-$tag-$NETNS_ID-h$k"); done
}

netns_ip() { echo "198.51.100.$(($1 + 1))"; }

netns_skip() {
  echo "SKIPPED: $*"
  exit 77
}

netns_preflight() {
  command -v ip >/dev/null || netns_skip "'ip' (iproute2) is not installed"
  command -v unshare >/dev/null || netns_skip "'unshare' (util-linux) is not installed"
  local err
  if ! err=$(ip netns add "$NETNS_SWITCH" 2>&1); then
    netns_skip "cannot create a network namespace (needs root or CAP_SYS_ADMIN+CAP_NET_ADMIN): $err"
  fi
  if ! err=$(ip -n "$NETNS_SWITCH" link add br0 type bridge 2>&1); then
    netns_skip "cannot create a bridge (needs CAP_NET_ADMIN and the bridge module): $err"
  fi
  if ! err=$(ip netns exec "$NETNS_SWITCH" unshare --uts sh -c 'echo probe > /proc/sys/kernel/hostname' 2>&1); then
    netns_skip "cannot enter a namespace with a UTS namespace of its own: $err"
  fi
}

# After netns_preflight (which made the switch namespace and its bridge).
netns_up() {
  (
    set -e
    ip -n "$NETNS_SWITCH" link set br0 up
    for ((k = 0; k < ${#NETNS_HOST[@]}; k++)); do
      local ns=${NETNS_HOST[k]}
      ip netns add "$ns"
      ip -n "$NETNS_SWITCH" link add "p$k" type veth peer name "mh$k" netns "$ns"
      ip -n "$NETNS_SWITCH" link set "p$k" master br0 up
      ip -n "$ns" link set lo up
      ip -n "$ns" addr add "$(netns_ip "$k")/24" dev "mh$k"
      ip -n "$ns" link set "mh$k" up
    done
  )
}

netns_down() {
  local ns left=""
  for ns in "${NETNS_HOST[@]}" "$NETNS_SWITCH"; do
    [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
  done
  [ -n "$NETNS_ID" ] || return 0
  for _ in 1 2 3 4 5 6 7 8 9 10; do  # a namespace may take a moment to release its devices
    left=$(ip netns list 2>/dev/null | grep -F -- "-$NETNS_ID-" || true)
    [ -z "$left" ] && return 0
    sleep 0.2
  done
  echo "left behind after teardown: $left"
  return 1
}

netns_exec() {
  local k=$1
  shift
  exec ip netns exec "${NETNS_HOST[k]}" unshare --uts \
    sh -c 'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' "$NETNS_ID-host$k" "$@"
}
