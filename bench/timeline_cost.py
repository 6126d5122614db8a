#!/usr/bin/env python3
"""The cost of --timeline (share/doc/timeline.md): the same launch run
(Net on Fashion-MNIST, two workers, --max_steps STEPS) with the timeline
off and on, alternating off/on ROUNDS times back to back, and rank 0's
samples_per_second of each. Prints one JSON document with each run's
figure, their medians and on/off ratio.

    bench/timeline_cost.py [--bin build/bin/pstrain] [--mode sync]
                           [--steps 300] [--rounds 3] [--keep DIR]

--keep DIR keeps the last run's timeline in DIR (DIR/timeline.json)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(args, timeline_dir):
    cmd = [args.bin, "launch", "--world_size", "3", "--master_port", "0",
           "--model", "net", "--mode", args.mode, "--batch_size", "64",
           "--max_steps", str(args.steps), "--eval_interval", "0",
           "--json", "--quiet"]
    with tempfile.TemporaryDirectory() as tmp:
        cmd += ["--checkpoint", os.path.join(tmp, "m.pt")]
        if timeline_dir:
            cmd += ["--timeline", timeline_dir]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    summary = [json.loads(l) for l in out.stdout.splitlines()
               if l.startswith("{") and '"summary"' in l]
    server = [s for s in summary if s.get("rank") == 0][-1]
    return server["samples_per_second"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "build/bin/pstrain"))
    p.add_argument("--mode", default="sync")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--keep", default="")
    args = p.parse_args()
    off, on = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            off.append(run(args, ""))
            last = i == args.rounds - 1
            on.append(run(args, args.keep if (last and args.keep) else
                          os.path.join(tmp, "t%d" % i)))
    result = {
        "schema": "pstrain.bench/1",
        "timeline_cost": {
            "mode": args.mode, "steps": args.steps, "rounds": args.rounds,
            "samples_per_second_off": off, "samples_per_second_on": on,
            "median_off": statistics.median(off),
            "median_on": statistics.median(on),
            "ratio": statistics.median(on) / statistics.median(off),
        },
    }
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
