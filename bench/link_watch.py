#!/usr/bin/python3
"""What a host's link does during a run: started inside the host's network
namespace (bench/hosts.sh exec I), it samples until its stdin closes.

  bench/link_watch.py OUT.json

Every 2 ms: eth0's sent and received bytes (/sys/class/net/eth0/
statistics), with the wall clock in microseconds, the clock `--timeline`
writes. Every 100 ms: `ss -tin` of each TCP connection (rtt, cwnd,
unacked, the bytes the kernel still holds unsent), and the tbf's backlog
(`tc -s qdisc`). At the start and the end: `nstat`'s counters of
retransmitted segments, timeouts and the like, whose difference it
writes, and the qdisc's drops.

`summarize(watch, rate, t0, t1)` reads one such file: the fraction of
[t0, t1] each direction carried at least half the link's rate, at most a
tenth of it (idle), and the busy bytes' share of the link's limit."""
import json
import re
import subprocess
import sys
import threading
import time

STATS = "/sys/class/net/eth0/statistics/"
NSTAT_KEYS = ("TcpRetransSegs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes",
              "TcpExtTCPSpuriousRTOs", "TcpExtTCPSlowStartRetrans",
              "TcpOutSegs", "TcpExtTCPOrigDataSent")


def now_us():
    return int(time.time() * 1e6)


def counters():
    with open(STATS + "tx_bytes") as tx, open(STATS + "rx_bytes") as rx:
        return int(tx.read()), int(rx.read())


def nstat():
    out = subprocess.run(["nstat", "-az", "--json"], capture_output=True,
                         text=True).stdout
    try:
        table = next(iter(json.loads(out).values()))
    except (ValueError, StopIteration):
        return {}
    return {k: table.get(k, 0) for k in NSTAT_KEYS}


def qdisc():
    """The root tbf's sent bytes, drops and backlog bytes."""
    out = subprocess.run(["tc", "-s", "qdisc", "show", "dev", "eth0"],
                         capture_output=True, text=True).stdout
    tbf = out[out.find("qdisc tbf"):]
    sent = re.search(r"Sent (\d+) bytes \d+ pkt \(dropped (\d+)", tbf)
    backlog = re.search(r"backlog (\d+)b", tbf)
    return {"sent": int(sent.group(1)) if sent else None,
            "dropped": int(sent.group(2)) if sent else None,
            "backlog": int(backlog.group(1)) if backlog else None}


def connections():
    """ss -tin: one record per established TCP connection."""
    out = subprocess.run(["ss", "-tinH", "state", "established"],
                         capture_output=True, text=True).stdout
    conns, head = [], None
    for line in out.splitlines():
        if not line.startswith((" ", "\t")):
            head = line.split()
            continue
        if not head or len(head) < 4:
            continue
        rec = {"local": head[2], "peer": head[3], "send_q": int(head[1])}
        for key, pattern in (("rtt_ms", r"\brtt:([\d.]+)"), ("cwnd", r"\bcwnd:(\d+)"),
                             ("unacked", r"\bunacked:(\d+)"),
                             ("notsent", r"\bnotsent:(\d+)"),
                             ("retrans", r"\bretrans:\d+/(\d+)")):
            m = re.search(pattern, line)
            rec[key] = float(m.group(1)) if m else 0
        conns.append(rec)
    return conns


def watch(path):
    samples, slow = [], []
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    start_nstat = nstat()
    next_slow = 0.0
    while not stop.is_set():
        t = time.time()
        samples.append((now_us(),) + counters())
        if t >= next_slow:
            slow.append({"t": now_us(), "qdisc": qdisc(), "tcp": connections()})
            next_slow = t + 0.1
        time.sleep(max(0.0, 0.002 - (time.time() - t)))
    end = nstat()
    with open(path, "w") as f:
        json.dump({"samples": samples, "slow": slow, "qdisc_end": qdisc(),
                   "nstat": {k: end.get(k, 0) - start_nstat.get(k, 0) for k in NSTAT_KEYS}}, f)


def busy_shares(samples, rate, t0, t1, column):
    """Over [t0, t1] (µs): the fraction of time the direction ran at least
    half of rate bytes/s, at most a tenth (idle), and its mean rate / rate."""
    busy = idle = total = moved = 0.0
    for (ta, *a), (tb, *b) in zip(samples, samples[1:]):
        if tb <= t0 or ta >= t1 or tb == ta:
            continue
        dt = (tb - ta) / 1e6
        r = (b[column] - a[column]) / dt
        total += dt
        moved += b[column] - a[column]
        busy += dt if r >= rate / 2 else 0
        idle += dt if r <= rate / 10 else 0
    total = total or 1.0
    return {"busy": round(busy / total, 3), "idle": round(idle / total, 3),
            "mean_rate": round(moved / total / rate, 3)}


def summarize(watched, rate, t0, t1):
    """One host's watch, summed up over [t0, t1] µs: each direction's
    busy/idle shares, nstat's differences, drops, the largest backlog, and
    the connections' median rtt and cwnd."""
    s = watched["samples"]
    slow = [x for x in watched["slow"] if t0 <= x["t"] <= t1]
    rtts = sorted(c["rtt_ms"] for x in slow for c in x["tcp"] if c["rtt_ms"])
    cwnds = sorted(c["cwnd"] for x in slow for c in x["tcp"] if c["cwnd"])
    backlogs = [x["qdisc"]["backlog"] or 0 for x in slow]
    return {"sent": busy_shares(s, rate, t0, t1, 0),
            "received": busy_shares(s, rate, t0, t1, 1),
            "nstat": watched["nstat"],
            "dropped": watched["qdisc_end"]["dropped"],
            "backlog_max_bytes": max(backlogs, default=0),
            "rtt_ms_median": rtts[len(rtts) // 2] if rtts else None,
            "cwnd_median": cwnds[len(cwnds) // 2] if cwnds else None}


if __name__ == "__main__":
    watch(sys.argv[1])
