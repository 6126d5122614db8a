#!/usr/bin/python3
"""A server killed mid-run with --replicas: what the run loses.

  bench/replicas_failover.py [--pstrain build/bin/pstrain] [--mode sync]
                             [--victims 1,2] [--seeds 1] [-- JOB FLAGS]

Runs `pstrain launch --num_servers 3 --replicas 2` of Net on
Fashion-MNIST, 2 workers, one epoch: once whole, then once per victim
with that server SIGKILLed at a random step (its pid from its `listen`
event), each with the same seed. Then, for --seeds N > 1, N - 1 more
whole runs with seeds 2..N, for the seed-to-seed noise of the accuracy.
Prints one JSON line per run:
  victim, killed_at_step    the server killed and the step seen then;
  stall_seconds             the longest time between two step events of
                            one worker (the whole run's beside it);
  max_abs_diff              the largest difference of any parameter from
                            the whole run of the same seed (the
                            checkpoints' raw float32 storage);
  test_accuracy, steps, samples_per_second   rank 0's summary.
"""
import argparse
import array
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def launch_args(a, checkpoint, seed, extra):
    return [a.pstrain, "launch", "--world_size", "5", "--num_servers", "3",
            "--replicas", "2", "--mode", a.mode, "--epochs", "1",
            "--seed", str(seed), "--dead_after", str(a.dead_after),
            "--log_interval", "1", "--master_port", "0", "--json",
            "--checkpoint", checkpoint] + extra


def run(a, checkpoint, seed, victim, extra):
    """Runs one job; kills server `victim` (None: none) at a random step."""
    p = subprocess.Popen(launch_args(a, checkpoint, seed, extra),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    err = []
    threading.Thread(target=lambda: err.extend(p.stderr), daemon=True).start()
    kill_at = random.randint(20, 700) if victim is not None else None
    pid, killed_at, events = None, None, []
    for line in p.stdout:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        events.append(e)
        if e.get("event") == "listen" and e.get("rank") == victim:
            pid = e.get("pid")
        if (kill_at is not None and killed_at is None and pid and
                e.get("event") == "step" and e.get("step", 0) >= kill_at):
            os.kill(pid, signal.SIGKILL)
            killed_at = e["step"]
    code = p.wait()
    if code != 0:
        sys.exit("run failed (%d): %s" % (code, "".join(err[-20:])))
    last, stall = {}, 0.0
    for e in events:
        if e.get("event") != "step":
            continue
        r = e["rank"]
        if r in last:
            stall = max(stall, e["time"] - last[r])
        last[r] = e["time"]
    summary = [e for e in events if e.get("event") == "summary"][-1]
    return {"victim": victim, "killed_at_step": killed_at,
            "stall_seconds": round(stall, 3),
            "test_accuracy": summary["test_accuracy"],
            "steps": summary["steps"],
            "samples_per_second": round(summary["samples_per_second"], 1),
            "takeover": any("took its shard over" in l for l in err)}


def max_abs_diff(a, b):
    za, zb = zipfile.ZipFile(a), zipfile.ZipFile(b)
    worst = 0.0
    for name in za.namelist():
        if "/data/" not in name:
            continue
        x, y = array.array("f"), array.array("f")
        x.frombytes(za.read(name))
        y.frombytes(zb.read(name))
        worst = max(worst, max((abs(u - v) for u, v in zip(x, y)),
                               default=0.0))
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pstrain", default=os.path.join(
        HERE, "..", "build", "bin", "pstrain"))
    ap.add_argument("--mode", default="sync")
    ap.add_argument("--victims", default="1,2")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--dead_after", type=float, default=10)
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        whole = os.path.join(d, "whole.pt")
        row = run(a, whole, 1, None, a.extra)
        row.update(mode=a.mode, seed=1)
        print(json.dumps(row), flush=True)
        for v in [int(x) for x in a.victims.split(",") if x]:
            killed = os.path.join(d, "killed-%d.pt" % v)
            row = run(a, killed, 1, v, a.extra)
            row.update(mode=a.mode, seed=1,
                       max_abs_diff=max_abs_diff(whole, killed))
            print(json.dumps(row), flush=True)
        for seed in range(2, a.seeds + 1):
            row = run(a, os.path.join(d, "seed.pt"), seed, None, a.extra)
            row.update(mode=a.mode, seed=seed)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
