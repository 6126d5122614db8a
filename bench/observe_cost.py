#!/usr/bin/python3
"""What watching a run costs it: samples/s of the same launch with a 10 Hz
Prometheus-style scrape of every rank's /metrics, the live dashboard's
requests (rank 0's /api/events every second, as the open page polls) and
--timeline on, against the same run with none of them, back to back in
A B B A order so that a drift of the machine's speed cancels.

  bench/observe_cost.py [--pairs 3] [--steps 400] [--pstrain build/bin/pstrain] [-- LAUNCH ARGS]

Prints one JSON object: each pair's samples/s (rank 0's summary) and the
ratio observed / plain, and their median (share/doc/metrics.md)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def scrape(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return len(r.read())
    except OSError:
        return 0


class Watcher:
    """Scrapes the ranks whose listen events name a metrics port."""

    def __init__(self):
        self.ports = {}
        self.stop = threading.Event()
        self.scrapes = 0
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        last_page = 0.0
        while not self.stop.is_set():
            for rank, port in list(self.ports.items()):
                if scrape(port, "/metrics"):
                    self.scrapes += 1
            now = time.monotonic()
            if 0 in self.ports and now - last_page >= 1.0:
                scrape(self.ports[0], "/api/events")
                last_page = now
            self.stop.wait(0.1)

    def close(self):
        self.stop.set()
        self.thread.join()


def run(pstrain, steps, extra, observed):
    args = [pstrain, "launch", "--world_size", "3", "--master_port", "0",
            "--max_steps", str(steps), "--json", "--quiet"] + extra
    tmp = tempfile.mkdtemp(prefix="pstrain-observe-")
    args += ["--checkpoint", os.path.join(tmp, "m.pt")]
    if observed:
        args += ["--metrics_port", "0", "--metrics_addr", "127.0.0.1",
                 "--timeline", os.path.join(tmp, "timeline")]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    watcher = Watcher() if observed else None
    summary = None
    for line in proc.stdout:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if watcher and e.get("event") == "listen" and "metrics_port" in e:
            watcher.ports[e["rank"]] = e["metrics_port"]
        if e.get("event") == "summary" and e.get("rank") == 0:
            summary = e
    proc.wait()
    scrapes = 0
    if watcher:
        watcher.close()
        scrapes = watcher.scrapes
    subprocess.run(["rm", "-rf", tmp])
    if proc.returncode != 0 or summary is None:
        sys.exit(f"observe_cost: {' '.join(args)} failed ({proc.returncode})")
    return summary["samples_per_second"], scrapes


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--pstrain", default="build/bin/pstrain")
    p.add_argument("extra", nargs="*")
    a = p.parse_args()
    pairs = []
    for i in range(a.pairs):
        order = [True, False] if i % 2 == 0 else [False, True]
        got = {}
        for observed in order:
            got[observed] = run(a.pstrain, a.steps, a.extra, observed)
        pairs.append({"observed_samples_per_second": got[True][0],
                      "plain_samples_per_second": got[False][0],
                      "scrapes": got[True][1],
                      "ratio": got[True][0] / got[False][0]})
    print(json.dumps({"steps": a.steps, "pairs": pairs,
                      "median_ratio": statistics.median(x["ratio"] for x in pairs)}))


if __name__ == "__main__":
    main()
