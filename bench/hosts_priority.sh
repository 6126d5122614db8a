#!/bin/bash
# The figures of share/doc/benchmarks.md's "Across hosts": every layout
# with --priority (the default) and then without, back to back, so that its
# effect is measured in one run of this machine; one JSON line per run
# (bench/hosts_train.py), each with its flags. Needs root.
#
#   bench/hosts_priority.sh [STEPS]   (default 200; 100 Mbit/s runs a
#                                     fifth, ResNet-18 a tenth)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
steps=${1:-200}
off=(--priority=false)

both() {  # hosts_train.py's flags, then -- and the job's
  "$here/hosts_train.py" "$@"
  "$here/hosts_train.py" "$@" "${off[@]}"
}

# Net, the server on host 0 and two workers on host 1.
both --link 1gbit --steps "$steps" --modes sync,async --compute_limit --
both --link 100mbit --steps $((steps / 5)) --modes sync,async --
both --link 10gbit --steps "$steps" --modes sync --
# The send window at each rate: the default (256 KiB) above, then 32 KiB
# and 4 MiB (about none: the kernel's own buffer).
for link in 100mbit 1gbit 10gbit; do
  s=$steps
  [[ $link == 100mbit ]] && s=$((steps / 5))
  for w in 32768 4194304; do
    "$here/hosts_train.py" --link "$link" --steps "$s" --modes sync -- --send_window "$w"
  done
done
# ResNet-18 (the CIFAR stem at Fashion-MNIST's 28 px).
both --link 1gbit --steps $((steps / 10)) --modes sync --compute_limit -- --model resnet18
# Four hosts: two servers on hosts 0 and 1, then one on host 0, for the
# same two workers on each of hosts 2 and 3.
both --hosts 4 --layout 0,1,2,2,3,3 --num_servers 2 --steps "$steps" --modes sync --
both --hosts 4 --layout 0,2,2,3,3 --num_servers 1 --steps "$steps" --modes sync --
# A server and a worker on each of two hosts (BytePS's layout), each worker
# reaching its own host's server over shared memory.
for link in 1gbit 100mbit; do
  s=$steps
  [[ $link == 100mbit ]] && s=$((steps / 5))
  both --hosts 2 --layout 0,1,0,1 --num_servers 2 --transport auto \
    --link "$link" --steps "$s" --modes sync --
done
