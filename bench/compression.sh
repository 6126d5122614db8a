#!/bin/sh
# The measurements of --compression in share/doc/compression.md, Net on
# Fashion-MNIST, sync, two workers (launch --world_size 3), each run's
# summary a line of JSON:
#   bench/compression.sh accuracy [path/to/pstrain]
#       one epoch per codec: test accuracy and bytes pushed
#       -> bench/results/compression_accuracy.jsonl
#   bench/compression.sh target RATE [path/to/pstrain] [CODEC...]
#       time to 0.85 test accuracy (--target_accuracy, evaluated every 50
#       versions) per codec over bench/throttled.sh RATE (100mbit, 1gbit);
#       the compressed codecs pull fp16 (--pull_compression fp16)
#       -> bench/results/compression_{RATE}.jsonl
# Each line adds "codec", "pull" and "rate" to the summary. Run it on an
# otherwise idle machine: the 100mbit table takes about an hour.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-}
case "$what" in
  accuracy) rate=none; shift ;;
  target) [ $# -ge 2 ] || { echo "usage: bench/compression.sh target RATE [pstrain] [CODEC...]" >&2; exit 2; }
          rate=$2; shift 2 ;;
  *) echo "usage: bench/compression.sh accuracy|target ..." >&2; exit 2 ;;
esac
bin=${1:-"$root/build/bin/pstrain"}
[ $# -gt 0 ] && shift
[ -x "$bin" ] || { echo "compression.sh: $bin is not an executable" >&2; exit 2; }
codecs=${*:-"none fp16 bf16 int8 topk:0.01 onebit"}
results="$root/bench/results"
mkdir -p "$results"
if [ "$what" = accuracy ]; then
  out="$results/compression_accuracy.jsonl"
else
  out="$results/compression_$rate.jsonl"
fi
: > "$out.tmp"
for codec in $codecs; do
  pull=none
  if [ "$what" = target ] && [ "$codec" != none ]; then pull=fp16; fi
  set -- "$bin" launch --world_size 3 --master_port 0 --model net \
    --compression "$codec" --pull_compression "$pull" --json --quiet
  if [ "$what" = accuracy ]; then
    line=$("$@" --epochs 1 | tail -n 1)
  else
    line=$("$root/bench/throttled.sh" "$rate" "$@" --target_accuracy 0.85 \
      --eval_interval 50 | tail -n 1)
  fi
  echo "compression.sh: $codec ($pull pulls, $rate): $line" >&2
  printf '%s\n' "$line" | /usr/bin/python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
j.update(codec=sys.argv[1], pull=sys.argv[2], rate=sys.argv[3])
print(json.dumps(j))' "$codec" "$pull" "$rate" >> "$out.tmp"
done
mv "$out.tmp" "$out"
