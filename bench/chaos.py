#!/usr/bin/python3
"""Faults, one at a time, in a running job, and the invariants that hold.

  bench/chaos.py [--pstrain build/bin/pstrain] [--minutes 10]
                 [--dead_after 3] [--seed N] [--faults kill,stop]

Runs `pstrain launch --world_size 5 --num_servers 3 --replicas 2
--restart_servers`, sync, Net on Fashion-MNIST (the default data), 2
workers of batch 32, for about --minutes, and injects one fault at a time,
at a random server rank and a random moment:
  kill   SIGKILL, of any server, the master included (rank 0, or the rank
         launch named master in its place: launch names the next);
  stop   SIGSTOP for three times --dead_after, then SIGCONT, of a server
         other than the master (launch, the arbiter, sees a master die,
         not stop: share/doc/design.md, "Replicas").
Each fault's victim is the process launch runs as that rank now (the
restarted one after a death), found among launch's children. The next
fault waits until the job has recovered: the victim's rank started again
holds a copy of each of its standbys' shards, and every worker has
logged 10 steps since the fault. A fault whose recovery takes longer than
two minutes fails the run.

Then it runs the same job once more without faults and checks:
  - launch exits 0 and leaves a checkpoint;
  - no worker ever logs a version older than one it logged before;
  - every push was applied once: the summary's steps are --max_steps, no
    worker was lost, and the checkpoint's version and samples are what
    the steps make (a push applied twice or dropped changes them);
  - the final parameters equal the run without faults, bit for bit.
Prints one JSON line per fault, then the summary line with the table's
figures; exits 1 when an invariant fails, naming it.
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS, BATCH = 2, 32
RECOVERY_SECONDS = 120


def launch_args(a, checkpoint, steps):
    return [a.pstrain, "launch", "--world_size", "5", "--num_servers", "3",
            "--replicas", "2", "--restart_servers", "--max_restarts", "1000",
            "--mode", "sync",
            "--model", "net", "--batch_size", str(BATCH), "--epochs", "1000",
            "--max_steps", str(steps), "--seed", str(a.seed),
            "--dead_after", str(a.dead_after), "--heartbeat", "0.5",
            "--log_interval", "1", "--master_port", "0", "--json",
            "--checkpoint", checkpoint]


class Job:
    """One launch, its events and lines read on threads of their own."""

    def __init__(self, args):
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.events, self.lines = [], []
        self.lock = threading.Lock()
        threading.Thread(target=self._read_events, daemon=True).start()
        threading.Thread(target=self._read_lines, daemon=True).start()

    def _read_events(self):
        for line in self.p.stdout:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            e["seen"] = time.monotonic()
            with self.lock:
                self.events.append(e)

    def _read_lines(self):
        for line in self.p.stderr:
            with self.lock:
                self.lines.append((time.monotonic(), line.rstrip("\n")))

    def summarized(self):
        with self.lock:
            return any(e.get("event") == "summary" for e in self.events)

    def steps_since(self, since):
        with self.lock:
            return steps_after(self.events, since)

    def master(self):
        """The rank launch last named master, or 0."""
        named = re.compile(r"^pstrain launch: .*; rank (\d+) is the master now")
        with self.lock:
            ranks = [int(m.group(1)) for m in
                     (named.match(l) for _, l in self.lines) if m]
        return ranks[-1] if ranks else 0

    def lines_since(self, since):
        with self.lock:
            return [l for t, l in self.lines if t > since]

    def rank_pid(self, rank):
        """The pid of launch's child that runs `rank` now, or None."""
        for pid in children(self.p.pid):
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if b"--rank" in argv:
                i = argv.index(b"--rank")
                if i + 1 < len(argv) and argv[i + 1] == str(rank).encode():
                    return pid
        return None


def steps_after(events, since):
    """Steps each worker logged after `since` (time.monotonic), by rank."""
    counts = {}
    for e in events:
        if e.get("event") == "step" and e["seen"] > since:
            counts[e["rank"]] = counts.get(e["rank"], 0) + 1
    return counts


def children(pid):
    out = []
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def recovered(job, rank, since):
    """Rank `rank`, started again, copied its standbys' shards, and every
    worker went 10 steps on."""
    rejoined = re.compile(r"^\[rank %d\] standby of rank \d+: holds version"
                          % rank)
    copies = sum(1 for l in job.lines_since(since) if rejoined.match(l))
    steps = job.steps_since(since)
    return copies >= 2 and len(steps) == WORKERS and min(steps.values()) >= 10


def inject(a, job, fault, rank):
    """One fault at `rank`; returns its row once the job has recovered."""
    pid = job.rank_pid(rank)
    if pid is None:
        return None
    master = rank == job.master()
    start = time.monotonic()
    if fault == "kill":
        os.kill(pid, signal.SIGKILL)
    else:
        os.kill(pid, signal.SIGSTOP)
        time.sleep(3 * a.dead_after)
        os.kill(pid, signal.SIGCONT)
    return await_recovery(
        fault, rank, master, start, lambda: recovered(job, rank, start),
        lambda: job.p.poll() is not None or job.summarized())


def await_recovery(fault, rank, master, start, recovered, ended):
    """The row of a fault done at `start`, once `recovered()`, or once
    `ended()` (the master has its summary: no step is left to recover
    for; how the job ended is checked at the end), or RECOVERY_SECONDS."""
    while not recovered():
        if ended():
            return {"fault": fault, "rank": rank, "recovered": False,
                    "why": "the job ended"}
        if time.monotonic() - start > RECOVERY_SECONDS:
            return {"fault": fault, "rank": rank, "recovered": False,
                    "why": "no recovery within %d s" % RECOVERY_SECONDS}
        time.sleep(0.1)
    return {"fault": fault, "rank": rank, "master": master, "recovered": True,
            "recovery_seconds": round(time.monotonic() - start, 2)}


def summary_of(events):
    return [e for e in events if e.get("event") == "summary"][-1]


def steps_per_second(a, d):
    """A short whole run: how fast this machine steps the job."""
    job = Job(launch_args(a, os.path.join(d, "probe.pt"), 60))
    job.p.wait()
    steps = [e for e in job.events if e.get("event") == "step"]
    steps = [e for e in steps if e["rank"] == steps[0]["rank"]] if steps else []
    if job.p.returncode != 0 or len(steps) < 4:
        sys.exit("the probe run failed: " + "\n".join(
            l for _, l in job.lines[-20:]))
    # The second half: the first steps pay for the start.
    half = steps[len(steps) // 2:]
    return (len(half) - 1) / (half[-1]["time"] - half[0]["time"])


def versions_go_forward(events):
    last = {}
    for e in events:
        if e.get("event") != "step":
            continue
        r, v = e["rank"], e["version"]
        if v < last.get(r, -1):
            return "rank %d logged version %d after %d" % (r, v, last[r])
        last[r] = v
    return None


def same_parameters(a, b):
    za, zb = zipfile.ZipFile(a), zipfile.ZipFile(b)
    names = sorted(n for n in za.namelist() if "/data/" in n)
    if names != sorted(n for n in zb.namelist() if "/data/" in n):
        return False
    return all(za.read(n) == zb.read(n) for n in names)


def parse_args(faults):
    """The flags of a chaos run; `faults`: the default of --faults."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--pstrain", default=os.path.join(
        HERE, "..", "build", "bin", "pstrain"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--dead_after", type=float, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--faults", default=faults)
    ap.add_argument("--log", help="write the faulted job's output here")
    return ap.parse_args()


def main():
    a = parse_args("kill,stop")
    faults = a.faults.split(",")
    chance = random.Random(a.seed)
    failures, rows = [], []
    with tempfile.TemporaryDirectory() as d:
        steps = int(steps_per_second(a, d) * a.minutes * 60)
        chaos = os.path.join(d, "chaos.pt")
        job = Job(launch_args(a, chaos, steps))
        began = time.monotonic()
        while job.p.poll() is None and not job.summarized():
            time.sleep(chance.uniform(1, 3) * a.dead_after)
            if (job.p.poll() is not None or job.summarized() or
                    job.steps_since(0) == {}):
                continue
            fault = chance.choice(faults)
            ranks = [0, 1, 2]
            if fault == "stop":
                ranks.remove(job.master())
            row = inject(a, job, fault, chance.choice(ranks))
            if row is None:
                continue
            row["at_seconds"] = round(time.monotonic() - began, 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
            if not row["recovered"] and row["why"] != "the job ended":
                failures.append("%s of rank %d: %s; the job's last lines:\n%s"
                                % (row["fault"], row["rank"], row["why"],
                                   "\n".join(l for _, l in job.lines[-40:])))
                break
        code = job.p.wait()
        if a.log:
            with open(a.log, "w") as f:
                f.write("\n".join(l for _, l in job.lines) + "\n")
        if code != 0:
            failures.append("launch exited %d: %s" % (code, "; ".join(
                l for _, l in job.lines[-5:])))
        elif not os.path.exists(chaos):
            failures.append("no checkpoint")
        backwards = versions_go_forward(job.events)
        if backwards:
            failures.append(backwards)
        whole = os.path.join(d, "whole.pt")
        quiet = Job(launch_args(a, whole, steps))
        if quiet.p.wait() != 0:
            failures.append("the run without faults failed")
        row = {"steps": steps, "faults": len(rows),
               "kills": sum(r["fault"] == "kill" for r in rows),
               "master_kills": sum(r.get("master", False) for r in rows),
               "stops": sum(r["fault"] == "stop" for r in rows),
               "minutes": round((time.monotonic() - began) / 60, 1)}
        if code == 0 and os.path.exists(chaos):
            s = summary_of(job.events)
            row.update(test_accuracy=s["test_accuracy"],
                       workers_lost=s["workers_lost"],
                       checkpoint_version=s["checkpoint_version"],
                       samples=s["samples"])
            if (s["steps"] != steps or s["workers_lost"] != 0 or
                    s["checkpoint_version"] != steps or
                    s["samples"] != steps * WORKERS * BATCH):
                failures.append("pushes not applied once each: " +
                                json.dumps(row))
            if os.path.exists(whole):
                row["bit_for_bit"] = same_parameters(chaos, whole)
                if not row["bit_for_bit"]:
                    failures.append("the parameters differ from the run "
                                    "without faults")
        if rows:
            row["longest_recovery_seconds"] = max(
                r.get("recovery_seconds", 0) for r in rows)
        row["invariants_held"] = not failures
        print(json.dumps(row), flush=True)
    for f in failures:
        print("chaos: " + f, file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
