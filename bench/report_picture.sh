#!/bin/sh
# bench/report_picture.sh [pstrain] [steps] [test_images]: two short real
# runs of 3 ranks on Fashion-MNIST, sync and async, `pstrain report` of
# both, and a picture of the page taken by headless Chromium:
# share/doc/report.png. The runs score the first `test_images` (default
# 2000) of the 10,000 test images, so that their evaluations, which run on
# idle cores only, stay short.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
pstrain=${1:-$root/build/bin/pstrain}
steps=${2:-300}
test_images=${3:-2000}
src=/usr/share/datasets/fashion-mnist
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
mkdir "$work/data"
ln -s "$src/train-images-idx3-ubyte.gz" "$src/train-labels-idx1-ubyte.gz" "$work/data/"
python3 - "$src" "$work/data" "$test_images" <<'PY'
import gzip, struct, sys
src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for name, item in (("t10k-images-idx3-ubyte.gz", 784), ("t10k-labels-idx1-ubyte.gz", 1)):
    data = gzip.open(f"{src}/{name}").read()
    ndim = data[3]
    header = bytearray(data[:4 + 4 * ndim])
    struct.pack_into(">I", header, 4, n)
    body = data[4 + 4 * ndim:][:n * item]
    with gzip.open(f"{out}/{name}", "wb") as f:
        f.write(bytes(header) + body)
PY
for mode in sync async; do
  "$pstrain" launch --world_size 3 --master_port 0 --mode "$mode" \
      --max_steps "$steps" --log_interval 5 --eval_interval 100 --json \
      --data_dir "$work/data" --checkpoint "$work/$mode.pt" \
      > "$work/$mode.jsonl"
done
"$pstrain" report "$work/sync.jsonl" "$work/async.jsonl" -o "$work/report.html"
# Its own profile folder; --virtual-time-budget lets the page's script draw
# before the picture is taken.
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$work/profile" --virtual-time-budget=5000 \
    --window-size=1280,1400 --screenshot="$root/share/doc/report.png" \
    "file://$work/report.html" 2>/dev/null
echo "wrote $root/share/doc/report.png"
