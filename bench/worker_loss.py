#!/usr/bin/env python3
"""Sync training that loses a worker mid-epoch.

  bench/worker_loss.py [path/to/pstrain] [--dead_after S] [--model M]

Runs one server and three workers (separate processes, sync, one epoch of
Fashion-MNIST) twice: undisturbed, and with rank 3 killed (SIGKILL) once the
server's version passes half the epoch. Prints one JSON document and writes
it to bench/results/worker_loss.json: each run's wall seconds and test
accuracy, and `killed_over_normal_plus_dead_after`, the killed run's time
over the normal run's time plus --dead_after (at most 1.1 is the goal).
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, model, dead_after, checkpoint):
    """Starts the server and the three workers; rank 1's stdout is piped."""
    port = str(free_port())
    world = ["--world_size", "4", "--master_port", port, "--threads", "1", "--json"]
    server = subprocess.Popen(
        [binary, "serve", "--rank", "0", "--model", model, "--dead_after", str(dead_after),
         "--checkpoint", checkpoint] + world,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    workers = {r: subprocess.Popen([binary, "work", "--rank", str(r)] + world,
                                   stdout=subprocess.PIPE if r == 1 else subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, text=True)
               for r in (1, 2, 3)}
    return server, workers


def finish(server, workers):
    """Waits for everyone; the server's summary."""
    for line in workers[1].stdout:
        pass
    summary = None
    for line in server.stdout:
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("event") == "summary":
            summary = event
    server.wait()
    for w in workers.values():
        w.wait()
    return summary


def run(binary, model, dead_after, tmp, kill=False):
    t0 = time.time()
    server, workers = start(binary, model, dead_after, os.path.join(tmp, "m.pt"))
    # Rank 1's step events tell how far the epoch is.
    for line in workers[1].stdout if kill else []:
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("event") == "step" and event["step"] >= event["total_steps"] // 2:
            workers[3].send_signal(signal.SIGKILL)
            break
    summary = finish(server, workers)
    return summary, time.time() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("binary", nargs="?", default=os.path.join(ROOT, "build", "bin", "pstrain"))
    p.add_argument("--dead_after", type=float, default=30)
    p.add_argument("--model", default="net")
    a = p.parse_args()
    if not os.access(a.binary, os.X_OK):
        sys.exit("worker_loss.py: %s is not an executable; build pstrain first" % a.binary)
    with tempfile.TemporaryDirectory() as tmp:
        normal, normal_s = run(a.binary, a.model, a.dead_after, tmp)
        killed, killed_s = run(a.binary, a.model, a.dead_after, tmp, kill=True)
    result = {
        "benchmark": "worker_loss",
        "model": a.model,
        "world_size": 4,
        "cores": os.cpu_count(),
        "dead_after": a.dead_after,
        "normal": {"wall_seconds": normal_s, "test_accuracy": normal["test_accuracy"],
                   "steps": normal["steps"]},
        "killed": {"wall_seconds": killed_s, "test_accuracy": killed["test_accuracy"],
                   "steps": killed["steps"], "workers_lost": killed["workers_lost"]},
        "killed_over_normal_plus_dead_after": killed_s / (normal_s + a.dead_after),
        "limit": 1.1,
    }
    text = json.dumps(result, indent=2)
    print(text)
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "worker_loss.json"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
