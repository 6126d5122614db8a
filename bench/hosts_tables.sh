#!/bin/bash
# The figures of share/doc/benchmarks.md's "Across hosts": Net, sync and
# async (and sync with compressed pushes and pulls) on two hosts at 100
# Mbit/s, 1 Gbit/s and 10 Gbit/s, and two servers against one on four hosts
# at 1 Gbit/s; one JSON line per run (bench/hosts_train.py). Needs root.
#
#   bench/hosts_tables.sh [STEPS]   (default 200; 100 Mbit/s runs a third)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
steps=${1:-200}
compressed=(--compression topk:0.01 --pull_compression fp16)

for link in 1gbit 10gbit 100mbit; do
  s=$steps
  [[ $link == 100mbit ]] && s=$((steps / 3))
  limit=()
  [[ $link == 1gbit ]] && limit=(--compute_limit)
  "$here/hosts_train.py" --link "$link" --steps "$s" --modes sync,async "${limit[@]}"
  "$here/hosts_train.py" --link "$link" --steps "$s" --modes sync -- "${compressed[@]}"
done
# Four hosts: the same four workers (two on each of hosts 2 and 3) with two
# servers on hosts 0 and 1, then with one server on host 0.
"$here/hosts_train.py" --hosts 4 --layout 0,1,2,2,3,3 --num_servers 2 \
  --steps "$steps" --modes sync --compute_limit
"$here/hosts_train.py" --hosts 4 --layout 0,2,2,3,3 --num_servers 1 \
  --steps "$steps" --modes sync
