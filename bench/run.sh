#!/bin/sh
# Runs pstrain's standard benchmarks and plots them:
#   bench/run.sh [path/to/pstrain]        (default: build/bin/pstrain of this tree)
# writes bench/results/wire.json, train.json, train_resnet18.json,
# lm_vs_ddp.json and wire.png. Takes about half an hour; run it on an otherwise idle machine.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-"$root/build/bin/pstrain"}
[ -x "$bin" ] || { echo "run.sh: $bin is not an executable; build pstrain first or pass its path" >&2; exit 2; }
results="$root/bench/results"
mkdir -p "$results"

echo "run.sh: bench wire (about 2 minutes)" >&2
"$bin" bench wire --sizes 4KiB,64KiB,1MiB,4.8MiB,16MiB,64MiB --workers 1,2,4 \
  --op push,pull,push_pull --seconds 1 --json > "$results/wire.json.tmp"
mv "$results/wire.json.tmp" "$results/wire.json"

echo "run.sh: bench train (a few minutes)" >&2
"$bin" bench train --model net --modes single,sync,async --world_size 3 --steps 300 \
  --json > "$results/train.json.tmp"
mv "$results/train.json.tmp" "$results/train.json"

# The ResNet-50 study's table (single, sync, async) with resnet18 on
# Fashion-MNIST: sync's two workers of 32 see the samples single's 64 see.
echo "run.sh: bench train resnet18 (about 20 minutes)" >&2
"$bin" bench train --model resnet18 --modes single,sync,async --world_size 3 --steps 300 \
  --single_batch_size 64 \
  --json > "$results/train_resnet18.json.tmp"
mv "$results/train_resnet18.json.tmp" "$results/train_resnet18.json"

# lstm_lm in sync against PyTorch DDP (gloo) on the same batches: tokens/s,
# bytes per step sparse and dense (Debian's python3-torch).
echo "run.sh: lstm_lm against DDP (about 5 minutes)" >&2
/usr/bin/python3 "$root/bench/lm_vs_ddp.py" --pstrain "$bin" --steps 100 \
  > "$results/lm_vs_ddp.json.tmp"
mv "$results/lm_vs_ddp.json.tmp" "$results/lm_vs_ddp.json"

"$root/bench/plot.sh"
python3 "$root/bench/table.py" "$results"
