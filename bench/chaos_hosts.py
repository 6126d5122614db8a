#!/usr/bin/python3
"""Faults, one at a time, in a job spread over hosts, etcd its arbiter.

  sudo bench/chaos_hosts.py [--pstrain build/bin/pstrain] [--minutes 10]
                            [--dead_after 3] [--seed N]
                            [--faults kill,stop,link]

The job of bench/chaos.py (3 servers with --replicas 2, 2 workers, sync,
Net on Fashion-MNIST, batch 32), started by hand as on machines of their
own: bench/hosts.sh brings up 5 hosts joined by 1 Gbit/s links; server
rank i runs in host i (0..2), both workers in host 3, and etcd in host 4.
Every rank has --rdzv_backend etcd, so the master holds its key in etcd
and the standby of its shard takes it once its lease lapses. This script
restarts a server rank that exits before the job ends with `serve
--rejoin`, as launch --restart_servers does on one machine.

One fault at a time, at a random server rank and a random moment, the
master included:
  kill   SIGKILL;
  stop   SIGSTOP for three times --dead_after, then SIGCONT: the others
         lose it, and once it runs again it finds itself fenced (a master:
         its lease lapsed) and exits;
  link   its host's link down for three times --dead_after, then up: the
         same, seen from the network (a master cannot renew its lease).
The next fault waits until the job has recovered: the victim's rank,
started again, holds a copy of each of its standbys' shards, and every
worker has logged 10 steps since the fault. A fault whose recovery takes
longer than two minutes fails the run.

Then it runs the same job once more without faults and checks what
bench/chaos.py checks: every rank at the end exits 0 and the master
leaves a checkpoint; no worker logs a version older than one it logged
before; every push was applied once (the summary's steps, samples and
checkpoint version); the final parameters equal the run without faults,
bit for bit. Prints one JSON line per fault, then the summary line;
exits 1 when an invariant fails, naming it. Needs root (network
namespaces) and etcd (Debian's etcd-server).
"""
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

import chaos

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTS_SH = os.path.join(HERE, "hosts.sh")
SERVERS, WORKERS, BATCH = 3, 2, 32
WORKER_HOST, ETCD_HOST = 3, 4
ETCD = "/usr/bin/etcd"


def hosts(*args, check=True):
    return subprocess.run([HOSTS_SH] + [str(x) for x in args], check=check,
                          capture_output=True, text=True).stdout.strip()


def in_host(h, argv):
    return [HOSTS_SH, "exec", str(h)] + argv


class Rank:
    """One rank's process, restarted with `serve --rejoin` when a server's
    exits before the job ends; lines and events of every incarnation."""

    def __init__(self, job, rank, argv):
        self.job, self.rank, self.argv = job, rank, argv
        self.incarnation = 0
        self.p = None
        self.start(argv)

    def start(self, argv):
        self.p = subprocess.Popen(in_host(self.host(), argv),
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.incarnation += 1
        p, n = self.p, self.incarnation
        threading.Thread(target=self._read, args=(p.stdout, True, n),
                         daemon=True).start()
        threading.Thread(target=self._read, args=(p.stderr, False, n),
                         daemon=True).start()

    def host(self):
        return self.rank if self.rank < SERVERS else WORKER_HOST

    def _read(self, stream, events, n):
        for line in stream:
            now = time.monotonic()
            with self.job.lock:
                if events:
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    e["seen"] = now
                    self.job.events.append(e)
                else:
                    self.job.lines.append((now, self.rank, n,
                                           line.rstrip("\n")))


class Job:
    """The hand-started job: its ranks, their events and lines."""

    def __init__(self, a, d, name, steps, etcd_addr):
        self.a, self.lock = a, threading.Lock()
        self.events, self.lines = [], []
        self.checkpoint = os.path.join(d, name + ".pt")
        self.rdzv = ["--rdzv_backend", "etcd", "--rdzv_endpoint",
                     etcd_addr + ":2379", "--rdzv_id", name,
                     "--timeout", "60", "--json"]
        job = ["--world_size", str(SERVERS + WORKERS), "--num_servers",
               str(SERVERS), "--replicas", "2", "--mode", "sync", "--model",
               "net", "--batch_size", str(BATCH), "--epochs", "1000",
               "--max_steps", str(steps), "--seed", str(a.seed),
               "--dead_after", str(a.dead_after), "--heartbeat", "0.5",
               "--log_interval", "1", "--checkpoint", self.checkpoint]
        self.ranks = [Rank(self, 0, self.serve(0) + job + [
            "--master_addr", hosts("addr", 0), "--master_port", "0"])]
        self.ranks += [Rank(self, r, self.serve(r) + [
            "--world_size", str(SERVERS + WORKERS), "--num_servers",
            str(SERVERS), "--checkpoint", self.checkpoint])
            for r in range(1, SERVERS)]
        self.ranks += [Rank(self, r, [a.pstrain, "work", "--rank", str(r),
                                      "--world_size",
                                      str(SERVERS + WORKERS)] + self.rdzv)
                       for r in range(SERVERS, SERVERS + WORKERS)]
        self.ended = False
        threading.Thread(target=self._supervise, daemon=True).start()

    def serve(self, rank):
        return [self.a.pstrain, "serve", "--rank", str(rank)] + self.rdzv

    def summaries(self):
        """The master's summaries (a worker's has role worker)."""
        with self.lock:
            return [e for e in self.events if e.get("event") == "summary" and
                    e.get("role") != "worker"]

    def summarized(self):
        return bool(self.summaries())

    def _supervise(self):
        """A server that exits before the job ended starts again, as a
        standby of its own shard and of those it kept."""
        while not self.ended:
            time.sleep(0.2)
            if self.summarized():
                self.ended = True
                return
            for r in self.ranks[:SERVERS]:
                # Exit 0 is the job's end, which a server may reach before
                # the master's summary is read here.
                if r.p.poll() not in (None, 0) and not self.summarized():
                    time.sleep(1)  # its host's link may still be down
                    r.start(self.serve(r.rank) + [
                        "--world_size", str(SERVERS + WORKERS),
                        "--num_servers", str(SERVERS), "--rejoin",
                        "--checkpoint", self.checkpoint])

    def wait(self, timeout):
        """Each rank's last exit status, once the workers ended."""
        deadline = time.monotonic() + timeout
        for r in self.ranks[SERVERS:]:
            r.p.wait(max(1, deadline - time.monotonic()))
        self.ended = True
        codes = {}
        for r in self.ranks:
            try:
                codes[r.rank] = r.p.wait(max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                r.p.kill()
                codes[r.rank] = "hung"
        return codes

    def steps_since(self, since):
        with self.lock:
            return chaos.steps_after(self.events, since)

    def master(self):
        """The rank that last said it is the master, or 0."""
        with self.lock:
            ranks = [r for _, r, _, l in self.lines
                     if "is the master now" in l]
        return ranks[-1] if ranks else 0

    def copies_since(self, rank, since):
        pattern = re.compile(r"standby of rank \d+: holds version")
        with self.lock:
            return sum(1 for t, r, _, l in self.lines
                       if r == rank and t > since and pattern.search(l))

    def last_lines(self, n):
        with self.lock:
            return ["[rank %d] %s" % (r, l) for _, r, _, l in self.lines[-n:]]


def inject(a, job, fault, rank):
    """One fault at `rank`; returns its row once the job has recovered."""
    victim = job.ranks[rank]
    master = rank == job.master()
    start = time.monotonic()
    if fault == "kill":
        victim.p.send_signal(signal.SIGKILL)
    elif fault == "stop":
        victim.p.send_signal(signal.SIGSTOP)
        time.sleep(3 * a.dead_after)
        victim.p.send_signal(signal.SIGCONT)
    else:
        hosts("exec", rank, "ip", "link", "set", "eth0", "down")
        time.sleep(3 * a.dead_after)
        hosts("exec", rank, "ip", "link", "set", "eth0", "up")
    def recovered():
        steps = job.steps_since(start)
        return (job.copies_since(rank, start) >= 2 and
                len(steps) == WORKERS and min(steps.values()) >= 10)

    return chaos.await_recovery(fault, rank, master, start, recovered,
                                job.summarized)


def steps_per_second(a, d, etcd_addr):
    """A short whole run: how fast these hosts step the job."""
    job = Job(a, d, "probe", 60, etcd_addr)
    codes = job.wait(300)
    steps = [e for e in job.events if e.get("event") == "step"]
    steps = [e for e in steps if e["rank"] == steps[0]["rank"]] if steps else []
    if any(c != 0 for c in codes.values()) or len(steps) < 4:
        sys.exit("the probe run failed: %s\n%s" % (
            codes, "\n".join(job.last_lines(20))))
    half = steps[len(steps) // 2:]
    return (len(half) - 1) / (half[-1]["time"] - half[0]["time"])


def run(a, d, etcd_addr):
    faults = a.faults.split(",")
    chance = random.Random(a.seed)
    failures, rows = [], []
    steps = int(steps_per_second(a, d, etcd_addr) * a.minutes * 60)
    job = Job(a, d, "chaos", steps, etcd_addr)
    began = time.monotonic()
    while not job.summarized():
        time.sleep(chance.uniform(1, 3) * a.dead_after)
        if job.summarized() or job.steps_since(0) == {}:
            continue
        row = inject(a, job, chance.choice(faults),
                     chance.choice(range(SERVERS)))
        row["at_seconds"] = round(time.monotonic() - began, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if not row["recovered"] and row["why"] != "the job ended":
            failures.append("%s of rank %d: %s; the job's last lines:\n%s" % (
                row["fault"], row["rank"], row["why"],
                "\n".join(job.last_lines(40))))
            break
    codes = job.wait(600)
    if a.log:
        with open(a.log, "w") as f:
            f.write("\n".join(job.last_lines(len(job.lines))) + "\n")
    if any(c != 0 for c in codes.values()):
        failures.append("exit statuses %s: %s" % (
            codes, "; ".join(job.last_lines(5))))
    elif not os.path.exists(job.checkpoint):
        failures.append("no checkpoint")
    backwards = chaos.versions_go_forward(job.events)
    if backwards:
        failures.append(backwards)
    quiet = Job(a, d, "whole", steps, etcd_addr)
    if any(c != 0 for c in quiet.wait(3600).values()):
        failures.append("the run without faults failed")
    row = {"steps": steps, "faults": len(rows),
           "kills": sum(r["fault"] == "kill" for r in rows),
           "stops": sum(r["fault"] == "stop" for r in rows),
           "links": sum(r["fault"] == "link" for r in rows),
           "master_faults": sum(r.get("master", False) for r in rows),
           "minutes": round((time.monotonic() - began) / 60, 1)}
    summaries = job.summaries()
    if summaries and os.path.exists(job.checkpoint):
        s = summaries[-1]
        row.update(test_accuracy=s["test_accuracy"],
                   workers_lost=s["workers_lost"],
                   checkpoint_version=s["checkpoint_version"],
                   samples=s["samples"])
        if (len(summaries) != 1 or s["steps"] != steps or
                s["workers_lost"] != 0 or s["checkpoint_version"] != steps or
                s["samples"] != steps * WORKERS * BATCH):
            failures.append("pushes not applied once each: " +
                            json.dumps(row))
        if os.path.exists(quiet.checkpoint):
            row["bit_for_bit"] = chaos.same_parameters(job.checkpoint,
                                                       quiet.checkpoint)
            if not row["bit_for_bit"]:
                failures.append("the parameters differ from the run "
                                "without faults")
    for kind in ("kill", "stop", "link"):
        times = sorted(r["recovery_seconds"] for r in rows
                       if r["fault"] == kind and r["recovered"])
        if times:
            row[kind + "_median_recovery_seconds"] = times[len(times) // 2]
    row["invariants_held"] = not failures
    print(json.dumps(row), flush=True)
    return failures


def main():
    a = chaos.parse_args("kill,stop,link")
    a.pstrain = os.path.abspath(a.pstrain)
    os.environ["PSTRAIN_HOSTS_PREFIX"] = "pstchaos%d" % os.getpid()
    hosts("up", SERVERS + 2, "1gbit")
    etcd = None
    try:
        with tempfile.TemporaryDirectory() as d:
            # Its host is a namespace of this run's: etcd's own port is free.
            addr = hosts("addr", ETCD_HOST)
            client, peer = "http://%s:2379" % addr, "http://127.0.0.1:2380"
            etcd = subprocess.Popen(
                in_host(ETCD_HOST, [
                    ETCD, "--data-dir", os.path.join(d, "etcd"),
                    "--listen-client-urls", client, "--advertise-client-urls",
                    client, "--listen-peer-urls", peer,
                    "--initial-advertise-peer-urls", peer,
                    "--initial-cluster", "default=" + peer]),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for line in etcd.stderr:
                if "ready to serve client requests" in line:
                    break
            threading.Thread(target=lambda: etcd.stderr.read(),
                             daemon=True).start()
            failures = run(a, d, addr)
    finally:
        if etcd is not None:
            etcd.terminate()
            etcd.wait()
        hosts("down", check=False)
    for f in failures:
        print("chaos: " + f, file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
