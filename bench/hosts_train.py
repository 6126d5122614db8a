#!/usr/bin/python3
"""A job over hosts joined by shaped links (bench/hosts.sh): servers and
workers in network namespaces, addressing each other by the namespaces'
addresses, and the run's speed beside the links' limit.

  bench/hosts_train.py [--hosts 2] [--link 1gbit] [--layout 0,1,1]
                       [--num_servers 1] [--transport tcp] [--steps 200]
                       [--modes sync,async]
                       [--pstrain build/bin/pstrain] [-- JOB FLAGS]

--layout gives each rank's host, rank 0 first (ranks 0..S-1 serve); every
process gets cores / processes intra-op threads, as launch gives them, since
all hosts share this machine's cores. For each mode it prints one JSON line:
  samples_per_second            rank 0's summary;
  bytes_per_sample_up/down      the payload each host's link carried per
                                sample, each direction (the summaries);
  link_limit_samples_per_second the rate over the busiest direction's
                                payload per sample (one direction of a
                                full-duplex link carries RATE bits/s);
  fraction_of_link              samples/s over that limit;
  wire_*                        the same from each host's eth0 counters,
                                headers and acknowledgements included;
  tcp_limit_MBps                one TCP stream's payload rate between two
                                hosts, measured in the same run;
  compute_limit_samples_per_second (--compute_limit) the same job with every
                                link at 100 Gbit/s: what this machine's
                                cores allow the layout;
  cpu                           the machine's CPU time by kind during the run.
Needs root."""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTS = os.path.join(HERE, "hosts.sh")
PORT = 29500


def rate_bytes(rate):
    r = rate.lower()
    for unit, scale in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if r.endswith(unit):
            return float(r[:-len(unit)]) * scale / 8
    sys.exit(f"hosts_train.py: --link '{rate}': expected e.g. 1gbit, 100mbit")


class Hosts:
    def __init__(self, n, link, delay, queue):
        self.env = dict(os.environ, PSTRAIN_HOSTS_PREFIX=f"ph{os.getpid() % 100000}",
                        PSTRAIN_HOSTS_QUEUE=queue)
        self.n = n
        subprocess.run([HOSTS, "up", str(n), link] + ([delay] if delay else []),
                       env=self.env, check=True)

    def addr(self, i):
        return f"10.77.0.{i + 1}"

    def cmd(self, i, argv):
        return [HOSTS, "exec", str(i)] + argv

    def down(self):
        subprocess.run([HOSTS, "down"], env=self.env, check=False)


def tcp_rate(hosts, src, dst, seconds=2.0):
    """One TCP stream from host src to host dst: payload bytes/s."""
    server = ("import socket,time\n"
              f"s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
              f"s.bind(('{hosts.addr(dst)}',{PORT + 99}));s.listen()\n"
              "c,_=s.accept();n=0;t=None\n"
              "while True:\n"
              "  b=c.recv(1<<20)\n"
              "  if not b: break\n"
              "  t=t or time.time();n+=len(b)\n"
              "print(n/(time.time()-t))\n")
    srv = subprocess.Popen(hosts.cmd(dst, ["python3", "-c", server]),
                           stdout=subprocess.PIPE, text=True, env=hosts.env)
    client = ("import socket,time\n"
              "for _ in range(50):\n"
              "  try:\n"
              f"    s=socket.create_connection(('{hosts.addr(dst)}',{PORT + 99}));break\n"
              "  except OSError: time.sleep(0.1)\n"
              f"b=b'x'*(1<<20);end=time.time()+{seconds}\n"
              "while time.time()<end: s.sendall(b)\n"
              "s.close()\n")
    subprocess.run(hosts.cmd(src, ["python3", "-c", client]), check=True, env=hosts.env)
    out, _ = srv.communicate(timeout=30)
    return float(out.strip())


def set_congestion(hosts, args):
    """Each host's TCP congestion control: --congestion, or the machine's
    (a namespace starts with it); args.congestion says which ran."""
    cc = "/proc/sys/net/ipv4/tcp_congestion_control"
    for i in range(hosts.n):
        if args.congestion:
            subprocess.run(hosts.cmd(i, ["sh", "-c", f"echo {args.congestion} > {cc}"]),
                           env=hosts.env, check=True)
    args.congestion = subprocess.run(hosts.cmd(0, ["cat", cc]), env=hosts.env,
                                     capture_output=True, text=True,
                                     check=True).stdout.strip()


def cpu_times():
    """/proc/stat's first line: user, nice, system, idle, iowait, irq,
    softirq, steal, ... jiffies of the whole machine."""
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:9]]


def cpu_shares(before, after):
    d = [b - a for a, b in zip(before, after)]
    total = max(1, sum(d))
    return {"user": round((d[0] + d[1]) / total, 3),
            "system": round(d[2] / total, 3),
            "softirq": round((d[5] + d[6]) / total, 3),
            "steal": round(d[7] / total, 3),
            "idle": round((d[3] + d[4]) / total, 3)}


def run_job(hosts, args, mode, extra):
    world = len(args.layout)
    common = ["--world_size", str(world), "--master_addr", hosts.addr(args.layout[0]),
              "--master_port", str(PORT), "--json",
              # All hosts share this machine's cores: as launch does, each
              # process gets cores / processes intra-op threads.
              "--threads", str(max(1, os.cpu_count() // world))]
    watchers = start_watchers(hosts, args, mode)
    start = time.time()
    procs = []
    for rank, host in enumerate(args.layout):
        if rank < args.num_servers:
            argv = [args.pstrain, "serve", "--rank", str(rank), "--mode", mode,
                    "--max_steps", str(args.steps), "--epochs", "100",
                    "--num_servers", str(args.num_servers),
                    "--bind_addr", hosts.addr(host), "--checkpoint", os.path.join(args.tmp, f"model-{rank}.pt"),
                    "--transport", args.transport] + extra
        else:
            argv = [args.pstrain, "work", "--rank", str(rank)]
        if args.timeline:
            argv += ["--timeline", os.path.join(args.timeline, f"{mode}-rank{rank}.json")]
        p = subprocess.Popen(hosts.cmd(host, argv + common), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=hosts.env)
        procs.append(p)
        if rank == 0:
            time.sleep(0.3)  # rank 0 first, so the others find it at once
    if args.egress != "tbf":
        shape_egress(hosts, args)
    before = cpu_times()
    outs = [p.communicate(timeout=args.timeout) for p in procs]
    args.cpu = cpu_shares(before, cpu_times())
    args.links = stop_watchers(watchers, args, start, time.time())
    failed = [f"rank {r} exited {p.returncode}: {outs[r][1].strip()[-1500:]}"
              for r, p in enumerate(procs) if p.returncode != 0]
    if failed:
        sys.exit("\n".join(failed))
    summaries = {}
    for rank, (out, err) in enumerate(outs):
        for line in out.splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("event") == "summary":
                summaries[rank] = e
    return summaries


def listening_ports(hosts, want, timeout=60):
    """The TCP ports the servers listen on, once `want` of them do."""
    end = time.time() + timeout
    while time.time() < end:
        ports = set()
        for i in range(hosts.n):
            out = subprocess.run(hosts.cmd(i, ["ss", "-tlnH"]), env=hosts.env,
                                 capture_output=True, text=True).stdout
            ports |= {line.split()[3].rsplit(":", 1)[1] for line in out.splitlines()
                      if len(line.split()) > 3}
        if len(ports) >= want:
            return sorted(ports)
        time.sleep(0.05)
    sys.exit(f"hosts_train.py: fewer than {want} servers listened within {timeout} s")


def shape_egress(hosts, args):
    """--egress htb / push_first: each host's own egress (eth0) becomes an
    htb at the link's rate with two classes, each with a queue of --queue;
    with push_first, packets to a server's port (pushes) go in the first
    class, which htb serves before the other (replies). Put in place once
    the servers listen, so the job's first steps ran under the tbf."""
    rate = args.link
    ports = listening_ports(hosts, args.num_servers)
    limit = str(int(rate_bytes(rate) * float(args.queue.rstrip("ms")) / 1000))
    for i in range(hosts.n):
        def tc(*argv):
            subprocess.run(hosts.cmd(i, ["tc"] + list(argv)), env=hosts.env, check=True,
                           stderr=subprocess.DEVNULL)
        tc("qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "htb", "default", "20")
        tc("class", "add", "dev", "eth0", "parent", "1:", "classid", "1:1", "htb",
           "rate", rate, "ceil", rate, "burst", "64k", "cburst", "64k")
        for cls, prio in (("1:10", "0"), ("1:20", "1")):
            tc("class", "add", "dev", "eth0", "parent", "1:1", "classid", cls, "htb",
               "rate", f"{int(rate_bytes(rate) * 8 / 50)}bit", "ceil", rate, "prio", prio,
               "burst", "64k", "cburst", "64k")
            tc("qdisc", "add", "dev", "eth0", "parent", cls, "bfifo", "limit", limit)
        for port in ports if args.egress == "push_first" else []:
            tc("filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "1",
               "u32", "match", "ip", "dport", port, "0xffff", "flowid", "1:10")


def start_watchers(hosts, args, mode):
    """With --observe, bench/link_watch.py in each host until the job ends."""
    if not args.observe:
        return []
    os.makedirs(args.observe, exist_ok=True)
    return [(os.path.join(args.observe, f"{mode}-host{i}.json"),
             subprocess.Popen(hosts.cmd(i, ["python3", os.path.join(HERE, "link_watch.py"),
                                            os.path.join(args.observe, f"{mode}-host{i}.json")]),
                              stdin=subprocess.PIPE, env=hosts.env))
            for i in range(hosts.n)]


def stop_watchers(watchers, args, start, end):
    """Each host's link over the middle 60% of the job's wall time, where
    every rank trains (link_watch.summarize)."""
    sys.dont_write_bytecode = True
    sys.path.insert(0, HERE)
    import link_watch
    out = []
    for path, proc in watchers:
        proc.stdin.close()
        proc.wait(timeout=60)
        with open(path) as f:
            watched = json.load(f)
        span = (end - start) * 1e6
        out.append(link_watch.summarize(watched, rate_bytes(args.link),
                                        start * 1e6 + 0.2 * span, end * 1e6 - 0.2 * span))
    return out or None


def link_loads(args, summaries, samples):
    """Payload bytes per sample on each host's link, each direction: a
    worker's from its own summary; a server's from rank 0's summary, which
    counts every server's, times the busiest server's share of the keys
    (shard_imbalance / num_servers). Only what crosses the link counts: a
    worker's bytes to and from a server on its own host do not (each
    server is taken to hold 1 / num_servers of a worker's bytes)."""
    up = [0.0] * args.hosts    # host -> bridge
    down = [0.0] * args.hosts  # bridge -> host
    s0 = summaries[0]
    share = s0.get("shard_imbalance", 1.0) / args.num_servers
    servers = args.layout[:args.num_servers]
    workers = args.layout[args.num_servers:]
    for rank, host in enumerate(args.layout):
        if rank < args.num_servers:
            remote = sum(h != host for h in workers) / len(workers)
            up[host] += s0["bytes_pulled"] * share * remote    # workers pulled
            down[host] += s0["bytes_pushed"] * share * remote  # workers pushed
        else:
            remote = sum(h != host for h in servers) / len(servers)
            up[host] += summaries[rank]["bytes_pushed"] * remote
            down[host] += summaries[rank]["bytes_pulled"] * remote
    return [u / samples for u in up], [d / samples for d in down]


def wire_bytes(hosts):
    """(sent, received) bytes of each host's eth0, from its /proc/net/dev:
    what crossed its link, headers included."""
    out = []
    for i in range(hosts.n):
        text = subprocess.run(hosts.cmd(i, ["cat", "/proc/net/dev"]), env=hosts.env,
                              capture_output=True, text=True, check=True).stdout
        for line in text.splitlines():
            name, _, rest = line.partition(":")
            if name.strip() == "eth0":
                f = rest.split()
                out.append((int(f[8]), int(f[0])))
    return out


def add_host_args(p, link):
    """The hosts' flags, shared with hosts_ddp.py: links of `link` by default."""
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--link", default=link)
    p.add_argument("--delay", default="", help="netem one-way delay, e.g. 0.1ms")
    p.add_argument("--queue", default="50ms",
                   help="each link's queue, as tbf's latency: 50ms, 100ms")
    p.add_argument("--congestion", default="",
                   help="the hosts' TCP congestion control (reno, bbr, cubic: "
                   "those the machine allows); default: the machine's")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_host_args(p, "1gbit")
    p.add_argument("--layout", default="0,1,1")
    p.add_argument("--num_servers", type=int, default=1)
    p.add_argument("--transport", default="tcp",
                   help="the job's --transport: tcp, or auto, so that a worker "
                   "reaches a server on its own host over shared memory")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--modes", default="sync,async")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--timeline", default="", help="a folder: each rank's --timeline")
    p.add_argument("--egress", default="tbf", choices=("tbf", "htb", "push_first"),
                   help="each host's own egress once the servers listen: the tbf; "
                   "an htb at the same rate; an htb that sends pushes first")
    p.add_argument("--observe", default="",
                   help="a folder: each host's link sampled (bench/link_watch.py)")
    p.add_argument("--compute_limit", action="store_true",
                   help="also run each mode with the links at 100gbit")
    p.add_argument("--pstrain", default=os.path.join(HERE, "..", "build", "bin", "pstrain"))
    p.add_argument("extra", nargs="*", help="job flags for rank 0, after --")
    args = p.parse_args()
    args.layout = [int(h) for h in args.layout.split(",")]
    args.pstrain = os.path.abspath(args.pstrain)
    if max(args.layout) >= args.hosts:
        sys.exit("hosts_train.py: --layout names a host beyond --hosts")
    hosts = Hosts(args.hosts, args.link, args.delay, args.queue)
    tmp = tempfile.TemporaryDirectory(prefix="pstrain-hosts-")
    args.tmp = tmp.name
    try:
        set_congestion(hosts, args)
        tcp = tcp_rate(hosts, args.layout[-1], args.layout[0])
        for mode in args.modes.split(","):
            before = wire_bytes(hosts)
            summaries = run_job(hosts, args, mode, args.extra)
            after = wire_bytes(hosts)
            cpu, links = args.cpu, args.links
            s0 = summaries[0]
            samples = sum(s["samples"] for r, s in summaries.items()
                          if r >= args.num_servers)
            up, down = link_loads(args, summaries, samples)
            limit = rate_bytes(args.link) / max(up + down)
            wire = [max(a[0] - b[0], a[1] - b[1]) / samples
                    for a, b in zip(after, before)]
            wire_limit = rate_bytes(args.link) / max(wire)
            compute = None
            if args.compute_limit:
                subprocess.run([HOSTS, "rate", "100gbit"], env=hosts.env, check=True)
                compute = run_job(hosts, args, mode, args.extra)[0]["samples_per_second"]
                subprocess.run([HOSTS, "rate", args.link], env=hosts.env, check=True)
            print(json.dumps({
                "mode": mode, "link": args.link, "queue": args.queue, "congestion": args.congestion,
                "egress": args.egress, "hosts": args.hosts,
                "layout": args.layout, "num_servers": args.num_servers,
                "flags": args.extra, "transport": args.transport,
                "steps": args.steps,
                "samples_per_second": round(s0["samples_per_second"], 1),
                "link_limit_samples_per_second": round(limit, 1),
                "fraction_of_link": round(s0["samples_per_second"] / limit, 3),
                "bytes_per_sample_up": [round(x) for x in up],
                "bytes_per_sample_down": [round(x) for x in down],
                "wire_bytes_per_sample": [round(x) for x in wire],
                "wire_limit_samples_per_second": round(wire_limit, 1),
                "fraction_of_wire_limit": round(s0["samples_per_second"] / wire_limit, 3),
                "tcp_limit_MBps": round(tcp / 1e6, 1),
                "link_MBps": rate_bytes(args.link) / 1e6,
                "test_accuracy": s0.get("test_accuracy"),
                "cpu": cpu,
                "links": links,
                "compute_limit_samples_per_second": compute and round(compute, 1),
            }), flush=True)
    finally:
        hosts.down()
        tmp.cleanup()


if __name__ == "__main__":
    main()
