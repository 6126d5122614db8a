#!/usr/bin/env python3
"""Sync training with one straggler, with and without backup workers.

  bench/stragglers.py [path/to/pstrain_testing] [--steps N] [--model M]

Runs `pstrain_testing launch --world_size 4` (one server, three workers)
four times: with and without --backup_workers 1, each with no straggler and
with rank 3 slowed 5x (it sleeps 4 times the workers' mean step time of the
first run in every step). pstrain_testing is the test-only build of pstrain
(the test build makes it beside pstrain); its hidden --delay_rank and
--delay_ms slow a worker. Prints one JSON document and writes it to
bench/results/stragglers.json. The figure that matters is
`backup_slowed_over_backup_unslowed`: sync steps per second with one worker
slowed 5x over the same job with none slowed (Chen et al., "Revisiting
Distributed Synchronous SGD", 2016: backup workers make sync steps as fast
as the N-b fastest workers).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def launch(binary, model, steps, extra):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [binary, "launch", "--world_size", "4", "--model", model,
               "--max_steps", str(steps), "--master_port", "0", "--json",
               "--checkpoint", os.path.join(tmp, "m.pt")] + extra
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit("stragglers.py: %s failed: %s" % (" ".join(cmd), out.stderr[-2000:]))
    summaries = [json.loads(l) for l in out.stdout.splitlines()
                 if l.startswith("{") and '"summary"' in l]
    server = next(s for s in reversed(summaries) if "test_accuracy" in s)
    return {
        "flags": " ".join(extra),
        "steps": server["steps"],
        "wall_seconds": server["wall_seconds"],
        "steps_per_second": server["steps"] / server["wall_seconds"],
        "dropped_pushes": server["dropped_pushes"],
        "test_accuracy": server["test_accuracy"],
        "compute_seconds": server["compute_seconds"],
        "communication_seconds": server["communication_seconds"],
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("binary", nargs="?",
                   default=os.path.join(ROOT, "build", "bin", "pstrain_testing"))
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--model", default="net")
    a = p.parse_args()
    if not os.access(a.binary, os.X_OK):
        sys.exit("stragglers.py: %s is not an executable; build pstrain_testing "
                 "first (cmake --build build --target pstrain_testing)" % a.binary)

    backup = ["--backup_workers", "1"]
    base = launch(a.binary, a.model, a.steps, backup)
    # A worker's mean step: its compute plus its round trips.
    step_ms = 1000 * (base["compute_seconds"] + base["communication_seconds"]) / base["steps"]
    delay_ms = max(1, round(4 * step_ms))
    slow = ["--delay_rank", "3", "--delay_ms", str(delay_ms)]
    runs = {
        "backup_unslowed": base,
        "backup_slowed": launch(a.binary, a.model, a.steps, backup + slow),
        "no_backup_unslowed": launch(a.binary, a.model, a.steps, []),
        "no_backup_slowed": launch(a.binary, a.model, a.steps, slow),
    }
    ratio = runs["backup_slowed"]["steps_per_second"] / base["steps_per_second"]
    result = {
        "benchmark": "stragglers",
        "model": a.model,
        "world_size": 4,
        "cores": os.cpu_count(),
        "worker_step_ms": step_ms,
        "straggler_delay_ms": delay_ms,
        "runs": runs,
        "backup_slowed_over_backup_unslowed": ratio,
        "limit": 0.75,
        "no_backup_slowed_over_no_backup_unslowed":
            runs["no_backup_slowed"]["steps_per_second"]
            / runs["no_backup_unslowed"]["steps_per_second"],
    }
    text = json.dumps(result, indent=2)
    print(text)
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "stragglers.json"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
