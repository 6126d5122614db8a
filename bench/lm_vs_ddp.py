#!/usr/bin/python3
"""lstm_lm's training throughput: PyTorch DDP (gloo) against pstrain sync.

Both sides train the same model on the same batches on this machine, one
after the other, and report target tokens per second. DDP: --workers
processes of torch.multiprocessing, the gloo backend on 127.0.0.1, each
with cores / workers threads, each training bench/lm_vs_torch.py's
RNNModel (word_language_model's LSTM) with its own Adam (lr 0.001) on its
own columns of the training stream: the stream in workers * batch_size
columns, worker w taking columns [w*b, (w+1)*b), windows of --bptt tokens,
the state carried and detached, as `pstrain launch --model lstm_lm` does
(the corpus, tokenizer and vocabulary are lm_vs_torch.py's). DDP averages
the gradients over the workers in backward, so every replica takes the same
step; `replicas_identical` checks it at the end. --warmup steps run
untimed; the clock runs over --steps steps, between two barriers, on the
slowest rank. pstrain: `pstrain bench train --model lstm_lm --modes sync
--world_size WORKERS+1` with the same steps and flags (one server and the
workers, each process with cores / (workers + 1) threads); its figure is
the sync row's samples_per_second (a sample is a target token), over its
whole run from the first worker joining: it has no warm-up to leave out.
A pstrain with --sparse_embeddings (on by default) sends only the
embedding rows a batch touches, while DDP all-reduces the whole table;
--dense_embeddings passes --sparse_embeddings=false to send whole tables
too. The sync row's bytes on the wire per step are copied where bench
train reports them.
`ratio` is pstrain's tokens/s over DDP's (at least 1 is the goal).
Needs Debian's python3-torch, nothing else.

usage: bench/lm_vs_ddp.py [--workers 2] [--steps 100] [--warmup 5]
                          [--batch_size 32] [--pstrain BIN] [--single]
                          [--dense_embeddings] [--skip_pstrain]
                          [--data_dir DIR]
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

# lm_vs_torch.py's corpus, model and batches; no __pycache__ left in bench/.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lm_vs_torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The sync row's fields worth keeping beside the figure; any field about
# bytes (bytes_per_step, peak_rss_bytes) is kept too.
PSTRAIN_FIELDS = ("threads_per_process", "seconds_per_step",
                  "compute_seconds_per_step", "communication_seconds_per_step",
                  "waiting_seconds_per_step", "process_seconds",
                  "test_perplexity", "sparse_rows")


def free_port():
    """A port nobody held a moment ago; a race we accept in a bench."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def endless_windows(source, bptt):
    """(first of an epoch?, input, target), epoch after epoch."""
    while True:
        for i, (x, y) in enumerate(lm_vs_torch.windows(source, bptt)):
            yield i == 0, x, y


def make_model(args, ntoken):
    # The same seed on every rank; DDP broadcasts rank 0's anyway.
    torch.manual_seed(args.seed)
    return lm_vs_torch.RNNModel(ntoken, args.embed_dim, args.hidden_dim,
                                args.num_layers, args.dropout,
                                args.tie_weights)


def train_steps(ddp, opt, stream, hidden, count, args):
    """`count` steps; returns the state they leave and their target tokens."""
    tokens = 0
    for _ in range(count):
        first, x, y = next(stream)
        if first:  # pstrain starts each epoch from a zero state too
            hidden = ddp.module.init_hidden(args.batch_size)
        hidden = tuple(h.detach() for h in hidden)
        opt.zero_grad()
        out, hidden = ddp(x, hidden)
        F.nll_loss(out, y).backward()  # gloo averages the gradients here
        if args.clip_grad_norm > 0:
            nn.utils.clip_grad_norm_(ddp.parameters(), args.clip_grad_norm)
        opt.step()
        tokens += y.numel()
    return hidden, tokens


def replicas_identical(model):
    """Whether every rank holds the same parameters, by per-tensor sums."""
    sums = torch.stack([p.detach().double().sum() for p in model.parameters()])
    low, high = sums.clone(), sums.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    return bool(torch.equal(low, high))


def ddp_rank(rank, args, source, ntoken, port, results):
    """One DDP process: warm up, time --steps steps, rank 0 reports."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(max(1, os.cpu_count() // args.workers))
    dist.init_process_group("gloo", rank=rank, world_size=args.workers)
    ddp = DistributedDataParallel(make_model(args, ntoken))
    opt = torch.optim.Adam(ddp.parameters(), lr=args.lr)
    b = args.batch_size
    stream = endless_windows(source[:, rank * b:(rank + 1) * b].contiguous(),
                             args.bptt)
    # None: the first window starts an epoch, which makes the zero state.
    hidden, _ = train_steps(ddp, opt, stream, None, args.warmup, args)
    dist.barrier()
    start = time.monotonic()
    hidden, tokens = train_steps(ddp, opt, stream, hidden, args.steps, args)
    dist.barrier()
    seconds = time.monotonic() - start
    seconds = torch.tensor([seconds], dtype=torch.float64)
    tokens = torch.tensor([tokens], dtype=torch.int64)
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
    dist.all_reduce(tokens, op=dist.ReduceOp.SUM)
    same = replicas_identical(ddp.module)
    if rank == 0:
        seconds, tokens = seconds.item(), tokens.item()
        results.put({"tokens_per_second": tokens / seconds,
                     "seconds": seconds, "tokens": tokens,
                     "threads_per_process": torch.get_num_threads(),
                     "replicas_identical": same})
    dist.destroy_process_group()


def run_ddp(args, train, ntoken):
    # Laid out once here; each rank takes its own columns of it.
    source = lm_vs_torch.batchify(train, args.workers * args.batch_size)
    if source.size(0) < 2:
        sys.exit("lm_vs_ddp: the training split is too short for %d columns"
                 % (args.workers * args.batch_size))
    results = mp.get_context("spawn").SimpleQueue()
    mp.spawn(ddp_rank, args=(args, source, ntoken, free_port(), results),
             nprocs=args.workers, join=True)
    return results.get()


def pstrain_command(args, modes):
    cmd = [args.pstrain, "bench", "train", "--model", "lstm_lm",
           "--modes", ",".join(modes), "--world_size", str(args.workers + 1),
           "--steps", str(args.steps), "--batch_size", str(args.batch_size),
           "--bptt", str(args.bptt), "--vocab_size", str(args.vocab_size),
           "--embed_dim", str(args.embed_dim),
           "--hidden_dim", str(args.hidden_dim),
           "--num_layers", str(args.num_layers),
           "--dropout", repr(args.dropout), "--optimizer", "adam",
           "--lr", repr(args.lr),
           "--clip_grad_norm", repr(args.clip_grad_norm),
           "--seed", str(args.seed), "--json"]
    if "single" in modes:
        # One process seeing, step by step, the tokens the workers see.
        cmd += ["--single_batch_size", str(args.workers * args.batch_size)]
    if args.tie_weights:
        cmd.append("--tie_weights")
    if args.dense_embeddings:
        # Only when asked: a pstrain without the flag would refuse it.
        cmd.append("--sparse_embeddings=false")
    if args.data_dir:
        cmd += ["--data_dir", args.data_dir]
    return cmd


def bench_document(stdout):
    """The document bench train prints; error events are JSON lines too."""
    lines = stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if line == "{"]
    if not starts:
        return None
    return json.loads("\n".join(lines[starts[-1]:]))


def pstrain_row(row):
    out = {"tokens_per_second": row["samples_per_second"],
           "seconds": row["wall_seconds"], "tokens": row["samples"]}
    out.update({k: v for k, v in row.items()
                if k in PSTRAIN_FIELDS or "bytes" in k})
    return out


def run_pstrain(args):
    modes = ["sync", "single"] if args.single else ["sync"]
    cmd = pstrain_command(args, modes)
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    doc = bench_document(done.stdout) if done.returncode == 0 else None
    if doc is None:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        sys.exit("lm_vs_ddp: %s exited with status %d: %s"
                 % (" ".join(cmd), done.returncode, why))
    rows = {r["mode"]: pstrain_row(r) for r in doc["train"]}
    rows["sync"]["command"] = " ".join(cmd[1:])
    return rows, doc.get("build")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=2)
    # pstrain's job defaults (lib/ps/job/job_fields.inc).
    p.add_argument("--batch_size", type=int, default=32,
                   help="columns per worker")
    p.add_argument("--bptt", type=int, default=35)
    p.add_argument("--steps", type=int, default=100, help="timed steps")
    p.add_argument("--warmup", type=int, default=5,
                   help="DDP's untimed steps before them")
    p.add_argument("--data_dir", default="")
    p.add_argument("--vocab_size", type=int, default=10000)
    p.add_argument("--embed_dim", type=int, default=256)
    p.add_argument("--hidden_dim", type=int, default=512)
    p.add_argument("--num_layers", type=int, default=1)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--tie_weights", action="store_true")
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--clip_grad_norm", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--pstrain",
                   default=os.path.join(ROOT, "build", "bin", "pstrain"))
    p.add_argument("--single", action="store_true",
                   help="also pstrain's single row (one process, "
                        "workers * batch_size columns, all cores)")
    p.add_argument("--dense_embeddings", action="store_true",
                   help="pstrain moves whole embedding tables, as DDP's "
                        "all-reduce does (--sparse_embeddings=false)")
    p.add_argument("--skip_pstrain", action="store_true",
                   help="DDP only")
    args = p.parse_args()
    if args.workers < 1 or args.batch_size < 1 or args.steps < 1 or \
            args.warmup < 0 or args.bptt < 1:
        p.error("--workers, --batch_size, --steps and --bptt must be >= 1, "
                "--warmup >= 0")
    return args


def main():
    args = parse_args()
    corpus, vocab, _, _ = lm_vs_torch.load_corpus(args.data_dir,
                                                  args.vocab_size)
    out = {"machine": {"cores": os.cpu_count(), "torch": torch.__version__},
           "workers": args.workers, "batch_size": args.batch_size,
           "bptt": args.bptt, "steps": args.steps, "warmup": args.warmup,
           "vocabulary": len(vocab),
           "ddp_gloo": run_ddp(args, corpus["train"], len(vocab))}
    if not args.skip_pstrain:
        rows, build = run_pstrain(args)
        out["pstrain_sync"] = rows["sync"]
        if "single" in rows:
            out["pstrain_single"] = rows["single"]
        out["pstrain_build"] = build
        out["ratio"] = (out["pstrain_sync"]["tokens_per_second"] /
                        out["ddp_gloo"]["tokens_per_second"])
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
