#!/bin/bash
# The figures of share/doc/benchmarks.md's "The link's order": where every
# host computes, each layout with --push_first (the default) and then
# without, back to back, and PyTorch's DDP (bench/hosts_ddp.py) on the same
# links and layout; one JSON line per run. Needs root.
#
#   bench/hosts_push_first.sh [STEPS] [PAIRS]   (default 60 steps at 100
#                                               Mbit/s, 5x that at 1 Gbit/s;
#                                               2 pairs)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
steps=${1:-60}
pairs=${2:-2}

both() {  # hosts_train.py's flags, then -- and the job's
  for _ in $(seq "$pairs"); do
    "$here/hosts_train.py" "$@"
    "$here/hosts_train.py" "$@" --push_first=false
  done
}

# A server and a worker on each of two hosts, each worker reaching its own
# host's server over shared memory; two queue lengths of a switch port, and
# a loss-based congestion control beside the machine's.
for queue in 100ms 50ms; do
  both --hosts 2 --layout 0,1,0,1 --num_servers 2 --transport auto \
    --link 100mbit --queue "$queue" --steps "$steps" --modes sync --
  "$here/hosts_ddp.py" --hosts 2 --layout 0,1 --link 100mbit --queue "$queue" \
    --steps "$steps"
done
both --hosts 2 --layout 0,1,0,1 --num_servers 2 --transport auto \
  --link 100mbit --queue 100ms --congestion reno --steps "$steps" --modes sync --
"$here/hosts_ddp.py" --hosts 2 --layout 0,1 --link 100mbit --queue 100ms \
  --congestion reno --steps "$steps"
# The same at 1 Gbit/s, beside what the cores allow.
both --hosts 2 --layout 0,1,0,1 --num_servers 2 --transport auto \
  --link 1gbit --steps $((steps * 5)) --modes sync --compute_limit --
"$here/hosts_ddp.py" --hosts 2 --layout 0,1 --link 1gbit --steps $((steps * 5))
# A server and two workers on each of two hosts.
both --hosts 2 --layout 0,1,0,0,1,1 --num_servers 2 --transport auto \
  --link 100mbit --queue 100ms --steps "$steps" --modes sync --
"$here/hosts_ddp.py" --hosts 2 --layout 0,0,1,1 --link 100mbit --queue 100ms \
  --steps "$steps"
