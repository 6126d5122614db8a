#!/bin/sh
# Plots bench/results/wire.json (from `pstrain bench wire --json`) into
# bench/results/wire.png: GB/s against message size for push, pull and
# push_pull with one worker, beside the loopback TCP limit and memcpy.
#   bench/plot.sh [results directory]     (default: bench/results)
# Needs gnuplot (Debian package gnuplot-nox) and python3; installs nothing.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
results=${1:-"$root/bench/results"}
command -v gnuplot >/dev/null 2>&1 || {
  echo "plot.sh: gnuplot not found; install Debian's package gnuplot-nox" >&2; exit 2; }
command -v python3 >/dev/null 2>&1 || {
  echo "plot.sh: python3 not found; install Debian's package python3" >&2; exit 2; }
[ -f "$results/wire.json" ] || {
  echo "plot.sh: $results/wire.json not found; run bench/run.sh first" >&2; exit 2; }

tmp="$results/tmp"
mkdir -p "$tmp"
# One line per size: bytes, GB/s of push, pull, push_pull (1 worker), TCP
# limit, memcpy, and the size's label; "?" where a figure is missing.
python3 - "$results/wire.json" > "$tmp/wire.dat" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
wire = doc["wire"]
def label(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return ("%.1f" % (n / size)).removesuffix(".0") + unit
    return "%dB" % n
gbps = {(c["op"], c["bytes"]): c["gbps"] for c in wire["cases"] if c["workers"] == 1}
limits = {l["bytes"]: l for l in wire.get("limits", [])}
sizes = sorted({c["bytes"] for c in wire["cases"]} | set(limits))
def cell(v):
    return "?" if v is None else "%.6g" % v
print("# bytes push pull push_pull tcp_limit memcpy label")
for n in sizes:
    l = limits.get(n, {})
    row = [gbps.get((op, n)) for op in ("push", "pull", "push_pull")]
    row += [l.get("tcp_gbps"), l.get("memcpy_gbps")]
    print(n, " ".join(cell(v) for v in row), label(n))
PY

machine=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); m=d["machine"]; b=d["build"]; print("%s, %d cores, pstrain %s, %s" % (m["cpu_model"] or "unknown CPU", m["cores"], b["pstrain_version"], b["build_type"]))' "$results/wire.json")
if gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1; then term=pngcairo; else term=png; fi

gnuplot <<GP
set terminal $term size 1100,560 noenhanced
set output "$results/wire.png"
set title "pstrain bench wire: one worker over loopback TCP\n$machine"
set datafile missing "?"
set logscale x 2
set logscale y 10
set xlabel "message size"
set ylabel "GB/s (1e9 bytes/s)"
set key outside right top Left reverse
set offsets graph 0.04, graph 0.04, 0, 0
set grid
plot "$tmp/wire.dat" using 1:2:xtic(7) with linespoints lw 2 title "push", \
     "" using 1:3 with linespoints lw 2 title "pull", \
     "" using 1:4 with linespoints lw 2 title "push_pull (bytes both ways)", \
     "" using 1:5 with lines dt 2 lw 2 lc rgb "black" title "limit: TCP socket pair, one way", \
     "" using 1:6 with lines dt 3 lw 2 lc rgb "gray40" title "memcpy"
GP
echo "plot.sh: wrote $results/wire.png" >&2
