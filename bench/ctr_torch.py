#!/usr/bin/python3
"""DLRM trained in one PyTorch process on a log in Criteo's format, read,
split and hashed as pstrain's Criteo reader does (share/doc/ctr.md): the
reference a pstrain run's AUC is held against.

  bench/ctr_torch.py --data_dir DIR [--batch_size 128] [--lr 0.1]
      [--optimizer sgd|adagrad] [--table_rows 100000] [--bottom 13-512-256-64-16] [--top 512-256-1]
      [--threads 0] [--seed 1]

Trains one epoch of the training lines (every line of train.txt[.gz] but
each tenth) with SGD or Adagrad, the embedding tables' gradients sparse
(EmbeddingBag(sparse=True)), then scores the held-out lines. Prints one
JSON object: train_samples, seconds, samples_per_second, test_samples,
auc, log_loss.
"""

import argparse
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from criteo_generate import auc  # noqa: E402
from dlrm_torch import DLRM_Net  # noqa: E402

DENSE, SPARSE = 13, 26
M64 = (1 << 64) - 1


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data_dir", required=True)
    p.add_argument("--batch_size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "adagrad"])
    p.add_argument("--table_rows", type=int, default=100_000,
                   help="rows of every table")
    p.add_argument("--bottom", default="13-512-256-64-16")
    p.add_argument("--top", default="512-256-1")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


def row_of(value, table, rows):
    """data/criteo_line.h's CriteoRow: splitmix64's finalizer, mod rows."""
    z = (value + 0x9E3779B97F4A7C15 * (table + 1)) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    z ^= z >> 31
    return z % rows


def read(data_dir, rows):
    """(train, test) as (dense float [n,13], rows int64 [n,26], labels)."""
    path = os.path.join(data_dir, "train.txt")
    opener = open
    if not os.path.exists(path):
        path += ".gz"
        opener = gzip.open
    parts = {False: ([], [], []), True: ([], [], [])}
    with opener(path, "rt") as f:
        for i, line in enumerate(f):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != 1 + DENSE + SPARSE or fields[0] not in ("0", "1"):
                continue
            dense, cats, labels = parts[i % 10 == 9]
            dense.append([math.log1p(max(int(x), 0)) if x else 0.0
                          for x in fields[1:1 + DENSE]])
            cats.append([row_of(int(x, 16) if x else 0, t, rows)
                         for t, x in enumerate(fields[1 + DENSE:])])
            labels.append(float(fields[0]))
    return tuple((torch.tensor(d, dtype=torch.float32),
                  torch.tensor(c, dtype=torch.int64),
                  torch.tensor(y, dtype=torch.float32))
                 for d, c, y in (parts[False], parts[True]))


def forward(model, dense, rows):
    """Click probabilities [b] of a batch, one row a bag."""
    b = rows.shape[0]
    offsets = [torch.arange(b)] * SPARSE
    indices = [rows[:, t].contiguous() for t in range(SPARSE)]
    return model(dense, offsets, indices).view(-1)


def main():
    a = parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    train, test = read(a.data_dir, a.table_rows)
    widths = lambda t: [int(w) for w in t.split("-")]  # noqa: E731
    model = DLRM_Net(widths(a.bottom), widths(a.top), [a.table_rows] * SPARSE)
    # The reference's sigmoid ends top_l; train on probabilities with BCE.
    make = torch.optim.SGD if a.optimizer == "sgd" else torch.optim.Adagrad
    opt = make(model.parameters(), lr=a.lr)
    dense, rows, labels = train
    n = labels.shape[0]
    start = time.perf_counter()
    model.train()
    for b in range(0, n, a.batch_size):
        p = forward(model, dense[b:b + a.batch_size],
                       rows[b:b + a.batch_size])
        loss = F.binary_cross_entropy(p, labels[b:b + a.batch_size])
        opt.zero_grad()
        loss.backward()
        opt.step()
    seconds = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        p = forward(model, test[0], test[1])
    p = p.clamp(1e-7, 1 - 1e-7).double().numpy()
    y = test[2].double().numpy()
    print(json.dumps({
        "train_samples": int(n), "seconds": seconds,
        "samples_per_second": n / seconds, "test_samples": int(len(y)),
        "auc": auc(p, y.astype(np.int64)),
        "log_loss": float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))),
        "batch_size": a.batch_size, "lr": a.lr, "optimizer": a.optimizer, "table_rows": a.table_rows}))


if __name__ == "__main__":
    main()
