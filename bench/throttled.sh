#!/bin/sh
# Runs a command over a throttled loopback, as if its processes were on
# machines joined by a link of RATE:
#   bench/throttled.sh RATE CMD [ARG...]
#   bench/throttled.sh 100mbit build/bin/pstrain launch --world_size 3 --json
# The command runs in a new network namespace (unshare --net: root, or
# unprivileged user namespaces) whose loopback, the only interface there,
# has a token-bucket filter (tc tbf) of RATE (tc's units: 100mbit, 1gbit).
# Only 127.0.0.1 exists inside, so only the command's own traffic is
# shaped. Both directions share the one qdisc: a worker's push and its
# pull together get RATE, where a full-duplex link gives each direction
# RATE. The MTU is Ethernet's 1500 rather than loopback's 64 KiB, so that
# the filter shapes packets of a real link's size. The burst is the
# larger of 256 KiB and 4 ms at RATE (tbf needs at least a timer tick's
# worth). Exit status: the command's; 2 for bad usage.
set -eu
if [ $# -lt 2 ]; then
  echo "usage: bench/throttled.sh RATE CMD [ARG...]  (RATE e.g. 100mbit, 1gbit)" >&2
  exit 2
fi
rate=$1
shift
case "$rate" in
  *[0-9]kbit) bits=$(( ${rate%kbit} * 1000 )) ;;
  *[0-9]mbit) bits=$(( ${rate%mbit} * 1000000 )) ;;
  *[0-9]gbit) bits=$(( ${rate%gbit} * 1000000000 )) ;;
  *) echo "bench/throttled.sh: RATE '$rate': expected a number with kbit, mbit or gbit, e.g. 100mbit" >&2
     exit 2 ;;
esac
burst=$(( bits / 8 / 250 ))
[ "$burst" -ge 262144 ] || burst=262144
exec unshare --net sh -c '
  ip link set lo mtu 1500 up &&
  tc qdisc add dev lo root tbf rate "$1" burst "$2" latency 100ms &&
  shift 2 && exec "$@"' throttled "$rate" "$burst" "$@"
