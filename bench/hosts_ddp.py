#!/usr/bin/python3
"""PyTorch DistributedDataParallel (gloo) over hosts joined by shaped links
(bench/hosts.sh): the all-reduce pstrain is measured against across hosts,
on the same hosts bench/hosts_train.py makes.

  bench/hosts_ddp.py [--hosts 2] [--link 100mbit] [--layout 0,1]
                     [--queue 50ms] [--congestion cubic] [--delay 0.1ms]
                     [--steps 100] [--warmup 5] [--batch_size 32]
                     [--random] [--timeout 900]

--layout gives each worker's host, rank 0 first (0,1: one worker on each of
two hosts; 0,0,1,1: two on each). Every worker is a process of its own,
started in its host's network namespace with MASTER_ADDR the first worker's
host's address, GLOO_SOCKET_IFNAME=eth0 and cores / workers intra-op
threads, as launch gives pstrain's processes (all hosts share this
machine's cores). Each trains the RPC tutorial's Net (the Net of
bench/eval_vs_pytorch.py) with NLL loss and SGD (lr 0.01, no momentum), wrapped in DDP with its
default buckets, on batches of --batch_size: Fashion-MNIST's training
images (eval_vs_pytorch.py's DATA), normalized as pstrain does, each worker
its own 1/workers of them, or, with --random or where they are missing,
random tensors of the same shape and random labels (the figure is
throughput; the data does not change it). --warmup steps run untimed; the
clock runs over --steps steps between two barriers, on each worker. Prints
one JSON line (with the run's flags, `data`: fashion-mnist or random, and
`threads_per_process`):
  samples_per_second            workers * batch_size * steps over the
                                slowest worker's seconds (`seconds`);
  wire_bytes_per_sample         each host's eth0 counters, the larger of
                                sent and received, headers and
                                acknowledgements included, over the whole
                                run (rendezvous, DDP's first broadcast of
                                the parameters, warm-up and timed steps)
                                divided by all its samples, warm-up
                                included; so a short run reads a little
                                high (20 steps, 2 workers: about 4%, the
                                first broadcast's share);
  wire_limit_samples_per_second the link's rate over the busiest host's
                                wire bytes per sample (one direction of a
                                full-duplex link carries RATE bits/s);
  fraction_of_wire_limit        samples/s over that limit;
  tcp_limit_MBps                one TCP stream's payload rate between two
                                hosts (the last worker's to the first's),
                                measured in the same run;
  link_MBps                     the link's rate, 1e6 bytes/s;
  cpu                           the machine's CPU time by kind during the run.
Needs root, and Debian's python3-torch (the Python this runs under).
"""
import argparse
import datetime
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

# hosts_train.py's hosts, counters and limits; no __pycache__ left in bench/.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hosts_train  # noqa: E402

THIS_FILE = os.path.abspath(__file__)
PORT = hosts_train.PORT
LR = 0.01


# ---- one worker, in its host's namespace ----

def train_data(args, rank, world):
    """(images uint8 [N,1,28,28], labels) of this worker's share, or None
    for random batches."""
    import numpy as np
    import torch
    import eval_vs_pytorch as ev
    if args.random or not os.path.isdir(ev.DATA):
        return None
    images = np.frombuffer(ev.idx("train-images-idx3-ubyte")[16:], dtype=np.uint8)
    labels = np.frombuffer(ev.idx("train-labels-idx1-ubyte")[8:], dtype=np.uint8)
    x = torch.from_numpy(images.reshape(-1, 1, 28, 28)[rank::world].copy())
    y = torch.from_numpy(labels[rank::world].astype(np.int64))
    return x, y


def batches(data, b):
    """Endless batches of b: the share in order, again and again."""
    import torch
    import eval_vs_pytorch as ev
    if data is None:
        while True:
            yield torch.randn(b, 1, 28, 28), torch.randint(0, 10, (b,))
    x, y = data
    n = len(y) - len(y) % b
    while True:
        for i in range(0, n, b):
            yield (x[i:i + b].float() / 255 - ev.MEAN) / ev.STD, y[i:i + b]


def train_steps(ddp, opt, stream, count):
    import torch.nn.functional as F
    loss = None
    for _ in range(count):
        x, y = next(stream)
        opt.zero_grad()
        loss = F.nll_loss(ddp(x), y)
        loss.backward()  # gloo averages the gradients here
        opt.step()
    return loss.item() if loss is not None else None


def rank_main(args):
    """One DDP worker: warm up, time --steps steps, print its seconds."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    import eval_vs_pytorch as ev
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(max(1, os.cpu_count() // world))
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    torch.manual_seed(1)  # the same on every worker; DDP broadcasts rank 0's anyway
    ddp = DistributedDataParallel(ev.Net())
    opt = torch.optim.SGD(ddp.parameters(), lr=LR, momentum=0)
    data = train_data(args, rank, world)
    stream = batches(data, args.batch_size)
    train_steps(ddp, opt, stream, args.warmup)
    dist.barrier()
    start = time.monotonic()
    loss = train_steps(ddp, opt, stream, args.steps)
    dist.barrier()
    seconds = time.monotonic() - start
    dist.destroy_process_group()
    print(json.dumps({"rank": rank, "seconds": seconds, "loss": loss,
                      "threads": torch.get_num_threads(),
                      "data": "random" if data is None else "fashion-mnist"}), flush=True)


# ---- the run, outside the namespaces ----

def start_ranks(hosts, args, ranks):
    """Every worker's process in its host, each appended to ranks as
    (Popen, stdout file, stderr file)."""
    world = len(args.layout)
    argv = [sys.executable or "/usr/bin/python3", THIS_FILE, "--rank_main",
            "--steps", str(args.steps), "--warmup", str(args.warmup),
            "--batch_size", str(args.batch_size), "--timeout", str(args.timeout)]
    if args.random:
        argv.append("--random")
    for rank, host in enumerate(args.layout):
        env = dict(hosts.env, MASTER_ADDR=hosts.addr(args.layout[0]),
                   MASTER_PORT=str(PORT), RANK=str(rank), WORLD_SIZE=str(world),
                   GLOO_SOCKET_IFNAME="eth0")
        out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
        ranks.append((subprocess.Popen(hosts.cmd(host, argv), stdout=out, stderr=err,
                                       text=True, env=env), out, err))


def stop_ranks(ranks):
    """Kills those of our workers still running."""
    for p, _, _ in ranks:
        if p.poll() is None:
            p.kill()
            p.wait()


def wait_ranks(ranks, timeout):
    """Waits for every worker; the first failure (or the deadline) stops
    the rest, which would otherwise wait on it. Returns each one's JSON."""
    deadline = time.monotonic() + timeout
    killed = {}
    while any(p.poll() is None for p, _, _ in ranks):
        failed = [r for r, (p, _, _) in enumerate(ranks) if p.poll() not in (None, 0)]
        if failed or time.monotonic() > deadline:
            why = f"after rank {failed[0]} failed" if failed else f"after --timeout {timeout:g} s"
            killed = {r: why for r, (p, _, _) in enumerate(ranks) if p.poll() is None}
            stop_ranks(ranks)
            break
        time.sleep(0.2)
    results, errors = [], []
    for rank, (p, out, err) in enumerate(ranks):
        out.seek(0)
        err.seek(0)
        lines = [line for line in out.read().splitlines() if line.startswith("{")]
        if rank in killed:
            errors.append(f"rank {rank} killed {killed[rank]}")
        elif p.returncode != 0 or not lines:
            errors.append(f"rank {rank} exited {p.returncode}: {err.read().strip()[-1500:]}")
        else:
            results.append(json.loads(lines[-1]))
    if errors:
        sys.exit("\n".join(errors))
    return results


def run_ddp(hosts, args):
    """(worker results, wire bytes per host, cpu shares) of one run."""
    before, cpu = hosts_train.wire_bytes(hosts), hosts_train.cpu_times()
    ranks = []
    try:
        start_ranks(hosts, args, ranks)
        results = wait_ranks(ranks, args.timeout)
    finally:
        stop_ranks(ranks)
    after = hosts_train.wire_bytes(hosts)
    cpu = hosts_train.cpu_shares(cpu, hosts_train.cpu_times())
    wire = [(a[0] - b[0], a[1] - b[1]) for a, b in zip(after, before)]
    return results, wire, cpu


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    hosts_train.add_host_args(p, "100mbit")
    p.add_argument("--layout", default="0,1", help="each worker's host, rank 0 first")
    p.add_argument("--steps", type=int, default=100, help="timed steps")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps before them")
    p.add_argument("--batch_size", type=int, default=32, help="per worker")
    p.add_argument("--random", action="store_true",
                   help="random batches even where Fashion-MNIST is there")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--rank_main", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.steps < 1 or args.warmup < 0 or args.batch_size < 1:
        p.error("--steps and --batch_size must be >= 1, --warmup >= 0")
    args.layout = [int(h) for h in args.layout.split(",")]
    if min(args.layout) < 0 or max(args.layout) >= args.hosts:
        p.error("--layout names a host beyond --hosts")
    return args


def main():
    args = parse_args()
    if args.rank_main:
        rank_main(args)
        return
    if os.geteuid() != 0:
        sys.exit("hosts_ddp.py: needs root (network namespaces)")
    if importlib.util.find_spec("torch") is None:
        sys.exit(f"hosts_ddp.py: {sys.executable} has no torch; run bench/hosts_ddp.py "
                 "itself, with Debian's python3-torch")
    link = hosts_train.rate_bytes(args.link)
    # Made inside the try, so that a `hosts.sh up` failing half way is
    # taken down too (Hosts sets its env before it runs `up`).
    hosts = hosts_train.Hosts.__new__(hosts_train.Hosts)
    try:
        hosts.__init__(args.hosts, args.link, args.delay, args.queue)
        hosts_train.set_congestion(hosts, args)
        tcp = hosts_train.tcp_rate(hosts, args.layout[-1], args.layout[0])
        results, wire, cpu = run_ddp(hosts, args)
    finally:
        if hasattr(hosts, "env"):
            hosts.down()
    world = len(args.layout)
    seconds = max(r["seconds"] for r in results)
    sps = world * args.batch_size * args.steps / seconds
    samples = world * args.batch_size * (args.steps + args.warmup)
    per_sample = [max(sent, received) / samples for sent, received in wire]
    wire_limit = link / max(per_sample)
    print(json.dumps({
        "mode": "ddp_gloo", "link": args.link, "queue": args.queue,
        "congestion": args.congestion, "hosts": args.hosts, "layout": args.layout,
        "steps": args.steps, "warmup": args.warmup, "batch_size": args.batch_size,
        "data": results[0]["data"], "threads_per_process": results[0]["threads"],
        "samples_per_second": round(sps, 1),
        "seconds": round(seconds, 3),
        "wire_bytes_per_sample": [round(x) for x in per_sample],
        "wire_limit_samples_per_second": round(wire_limit, 1),
        "fraction_of_wire_limit": round(sps / wire_limit, 3),
        "tcp_limit_MBps": round(tcp / 1e6, 1),
        "link_MBps": link / 1e6,
        "cpu": cpu,
    }), flush=True)


if __name__ == "__main__":
    main()
