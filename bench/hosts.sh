#!/bin/bash
# Hosts joined by real links on one machine: N network namespaces, each with
# one interface on a bridge, each interface shaped to RATE in both
# directions by tbf. Processes in host i reach host j at `addr j`, never
# through loopback, so every byte between hosts crosses the shaped links
# (share/doc/benchmarks.md, "Across hosts").
#
#   bench/hosts.sh up N RATE [DELAY]   N hosts, links of RATE (tc's units:
#                                      1gbit, 100mbit); DELAY (e.g. 0.1ms)
#                                      adds netem's one-way delay
#   bench/hosts.sh rate RATE           every link shaped to RATE from now on
#   bench/hosts.sh exec I CMD...       CMD in host I (0-based)
#   bench/hosts.sh addr I              host I's address
#   bench/hosts.sh down                removes every namespace and link
#
# Each tbf queues at most $PSTRAIN_HOSTS_QUEUE of the rate (tc's latency,
# default 50ms): what a switch port buffers, which varies between switches.
# Needs root (CAP_NET_ADMIN), iproute2's `ip` and `tc`. Names start with
# $PSTRAIN_HOSTS_PREFIX (default "pst"), so several sets can coexist; the
# bridge lives in a namespace of its own, so the machine's own network is
# never touched.
set -euo pipefail

prefix=${PSTRAIN_HOSTS_PREFIX:-pst}
queue=${PSTRAIN_HOSTS_QUEUE:-50ms}
bridge_ns="${prefix}br"

usage() {
  echo "usage: $0 up N RATE [DELAY] | rate RATE | exec I CMD... | addr I | down" >&2
  exit 2
}

host_ns() { echo "${prefix}h$1"; }
addr() { echo "10.77.0.$(($1 + 1))"; }

# tbf's bucket: 2 ms of the rate, at least 64 KiB so that one GSO segment
# passes whole.
burst_of() {
  local bits
  bits=$(tc_rate_bits "$1")
  local bytes=$((bits / 8 / 500))
  ((bytes < 65536)) && bytes=65536
  echo "$bytes"
}

tc_rate_bits() {
  local r=${1,,}
  case "$r" in
    *gbit) echo $((${r%gbit} * 1000000000)) ;;
    *mbit) echo $((${r%mbit} * 1000000)) ;;
    *kbit) echo $((${r%kbit} * 1000)) ;;
    *) echo "hosts.sh: rate '$1': expected e.g. 1gbit, 100mbit" >&2; exit 2 ;;
  esac
}

reshape() {  # namespace device rate: the tbf's rate, whatever is above it
  local ns=$1 dev=$2 rate=$3 parent="root"
  ip netns exec "$ns" tc qdisc show dev "$dev" | grep -q netem && parent="parent 1:1 handle 10:"
  # shellcheck disable=SC2086
  ip netns exec "$ns" tc qdisc change dev "$dev" $parent tbf rate "$rate" \
    burst "$(burst_of "$rate")" latency "$queue"
}

rate() {
  local rate=$1 ns i
  tc_rate_bits "$rate" >/dev/null
  for ns in $(ip netns list | awk '{print $1}'); do
    if [[ "$ns" =~ ^${prefix}h([0-9]+)$ ]]; then
      i=${BASH_REMATCH[1]}
      reshape "$ns" eth0 "$rate"
      reshape "$bridge_ns" "port$i" "$rate"
    fi
  done
}

shape() {  # namespace device rate delay
  local ns=$1 dev=$2 rate=$3 delay=$4 burst
  burst=$(burst_of "$rate")
  if [[ -n "$delay" ]]; then
    ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: netem delay "$delay"
    ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:1 handle 10: \
      tbf rate "$rate" burst "$burst" latency "$queue"
  else
    ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$rate" \
      burst "$burst" latency "$queue"
  fi
}

up() {
  local n=$1 rate=$2 delay=${3:-}
  [[ "$n" =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 200)) ||
    { echo "hosts.sh: N '$n': expected 1..200" >&2; exit 2; }
  tc_rate_bits "$rate" >/dev/null
  ip netns add "$bridge_ns"
  ip netns exec "$bridge_ns" ip link set lo up
  ip netns exec "$bridge_ns" ip link add br0 type bridge
  ip netns exec "$bridge_ns" ip link set br0 up
  for ((i = 0; i < n; i++)); do
    local ns
    ns=$(host_ns "$i")
    ip netns add "$ns"
    ip netns exec "$ns" ip link set lo up
    # Made inside the bridge's namespace, the peer moved to the host's: the
    # machine's own namespace never holds either end.
    ip netns exec "$bridge_ns" ip link add "port$i" type veth peer name eth0 \
      netns "$ns"
    ip netns exec "$bridge_ns" ip link set "port$i" master br0 up
    ip netns exec "$ns" ip addr add "$(addr "$i")/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    shape "$ns" eth0 "$rate" "$delay"               # host -> bridge
    shape "$bridge_ns" "port$i" "$rate" "$delay"    # bridge -> host
  done
}

down() {
  local ns
  for ns in $(ip netns list | awk '{print $1}'); do
    if [[ "$ns" == "$bridge_ns" || "$ns" =~ ^${prefix}h[0-9]+$ ]]; then
      ip netns del "$ns"
    fi
  done
}

[[ $# -ge 1 ]] || usage
cmd=$1
shift
case "$cmd" in
  up) [[ $# -ge 2 ]] || usage; up "$@" ;;
  rate) [[ $# -eq 1 ]] || usage; rate "$1" ;;
  exec) [[ $# -ge 2 ]] || usage; i=$1; shift; exec ip netns exec "$(host_ns "$i")" "$@" ;;
  addr) [[ $# -eq 1 ]] || usage; addr "$1" ;;
  down) down ;;
  *) usage ;;
esac
