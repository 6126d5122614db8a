#!/usr/bin/python3
"""A click log in Criteo's format from a planted model, and the AUC that the
planted model itself scores on the held-out lines: the ceiling a model
trained on the log can reach.

  bench/criteo_generate.py --out DIR [--lines 2000000] [--seed 1] [--gz]
      [--vocab 100000] [--zipf 1.15] [--missing 0.05] [--decay 0.5]

Writes DIR/train.txt (DIR/train.txt.gz with --gz): per line a label, 13
integer features and 26 categorical ones as 8 hex digits, tab-separated, a
feature empty with probability --missing (share/doc/ctr.md). Categorical
feature t has a vocabulary of its own, from 4 values up to --vocab, whose
IDs are drawn from a Zipf law (exponent --zipf), as in real click logs a few
IDs are most of the traffic. The planted model's logit is a bias, a weight
per ID of each feature, a weight per log(1 + integer), and the dot products
of 4-dimensional vectors of the IDs of features 0..7 (the pairwise
interactions DLRM models); the label is drawn with that probability. An
ID's weight and vector shrink with its rank in frequency, as (1 +
rank)^-decay, so that the signal sits in the IDs a log shows often.

Prints one JSON object: lines, positives, held_out (the lines pstrain's
--dataset criteo holds out of train.txt: i % 10 == 9), auc_ceiling and
log_loss_ceiling (the planted probabilities scored on those lines).
"""

import argparse
import gzip
import json
import math
import os

import numpy as np

DENSE, SPARSE, INTERACT, DIM = 13, 26, 8, 4
CHUNK = 100_000


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder to write train.txt in")
    p.add_argument("--lines", type=int, default=2_000_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--gz", action="store_true", help="write train.txt.gz")
    p.add_argument("--vocab", type=int, default=100_000,
                   help="the largest feature's vocabulary")
    p.add_argument("--zipf", type=float, default=1.15)
    p.add_argument("--missing", type=float, default=0.05)
    p.add_argument("--decay", type=float, default=0.5,
                   help="an ID's effect scales as (1 + its rank)^-decay")
    a = p.parse_args()
    if a.lines < 1 or a.vocab < 4 or a.zipf <= 1 or not 0 <= a.missing < 1:
        p.error("expected --lines >= 1, --vocab >= 4, --zipf > 1 and "
                "0 <= --missing < 1")
    return a


class Planted:
    """The model the labels come from, and the strings its inputs print as."""

    def __init__(self, rng, vocab, decay):
        # Vocabularies from 4 to `vocab`, spread on a log scale.
        self.vocabs = np.unique(np.geomspace(4, vocab, SPARSE).astype(np.int64))
        self.vocabs = np.resize(self.vocabs, SPARSE)
        # An ID's effect shrinks with its rank (rank 0 the most frequent),
        # as (1 + rank)^-decay: the signal sits where data is, as in real
        # logs, where an ID seen twice tells little.
        scale = [(1.0 + np.arange(v)) ** -decay for v in self.vocabs]
        self.id_weights = [rng.normal(0, 0.5, v) * scale[t]
                           for t, v in enumerate(self.vocabs)]
        self.vectors = [rng.normal(0, 0.45, (v, DIM)) * scale[t][:, None]
                        for t, v in enumerate(self.vocabs[:INTERACT])]
        self.dense_weights = rng.normal(0, 0.15, DENSE)
        self.dense_means = rng.uniform(0, 4, DENSE)
        self.bias = -2.3
        # Each feature's IDs print as distinct 8-digit hex values; the last
        # string of each table is the empty (missing) one.
        self.hex = []
        for t, v in enumerate(self.vocabs):
            values = (np.arange(v, dtype=np.uint64) * np.uint64(2654435761)
                      + np.uint64(97 * t + 1)) & np.uint64(0xFFFFFFFF)
            self.hex.append(np.array([f"{x:08x}" for x in values] + [""],
                                     dtype=object))

    def draw(self, rng, n, zipf, missing):
        """n lines: (labels, probabilities, dense ints, IDs, missing masks)."""
        ints = np.floor(np.exp(rng.normal(self.dense_means, 1.0,
                                          (n, DENSE)))).astype(np.int64) - 1
        ids = np.stack([(rng.zipf(zipf, n) - 1) % v for v in self.vocabs],
                       axis=1)
        logit = self.bias + np.log1p(np.maximum(ints, 0)) @ self.dense_weights
        for t in range(SPARSE):
            logit += self.id_weights[t][ids[:, t]]
        vecs = [self.vectors[t][ids[:, t]] for t in range(INTERACT)]
        for a in range(INTERACT):
            for b in range(a + 1, INTERACT):
                logit += np.sum(vecs[a] * vecs[b], axis=1)
        p = 1.0 / (1.0 + np.exp(-logit))
        labels = (rng.random(n) < p).astype(np.int64)
        gone = rng.random((n, DENSE + SPARSE)) < missing
        return labels, p, ints, ids, gone

    def lines(self, labels, ints, ids, gone):
        cols = [labels.astype(str).astype(object)]
        for j in range(DENSE):
            c = ints[:, j].astype(str).astype(object)
            c[gone[:, j]] = ""
            cols.append(c)
        for t in range(SPARSE):
            rows = np.where(gone[:, DENSE + t], self.vocabs[t], ids[:, t])
            cols.append(self.hex[t][rows])
        return "".join(line + "\n" for line in map("\t".join, zip(*cols)))


def auc(p, y):
    """Area under the ROC curve (the Mann-Whitney U statistic; ties share
    ranks)."""
    order = np.argsort(p, kind="mergesort")
    ranks = np.empty(len(p))
    sorted_p = p[order]
    ranks[order] = np.arange(1, len(p) + 1)
    # Average the ranks of tied scores.
    _, first, counts = np.unique(sorted_p, return_index=True,
                                 return_counts=True)
    for f, c in zip(first[counts > 1], counts[counts > 1]):
        ranks[order[f:f + c]] = f + (c + 1) / 2
    pos = y.sum()
    neg = len(y) - pos
    if pos == 0 or neg == 0:
        return float("nan")
    return float((ranks[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg))


def main():
    a = parse_args()
    rng = np.random.default_rng(a.seed)
    model = Planted(rng, a.vocab, a.decay)
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "train.txt.gz" if a.gz else "train.txt")
    opener = (lambda: gzip.open(path, "wt", compresslevel=3)) if a.gz else (
        lambda: open(path, "w"))
    held_p, held_y, positives = [], [], 0
    with opener() as out:
        for start in range(0, a.lines, CHUNK):
            n = min(CHUNK, a.lines - start)
            labels, p, ints, ids, gone = model.draw(rng, n, a.zipf, a.missing)
            out.write(model.lines(labels, ints, ids, gone))
            positives += int(labels.sum())
            held = (np.arange(start, start + n) % 10) == 9
            held_p.append(p[held])
            held_y.append(labels[held])
    p = np.concatenate(held_p)
    y = np.concatenate(held_y)
    eps = 1e-12
    log_loss = float(-np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))
    print(json.dumps({"file": os.path.basename(path), "lines": a.lines,
                      "positives": positives, "held_out": int(len(y)),
                      "seed": a.seed, "vocab": a.vocab, "zipf": a.zipf,
                      "decay": a.decay,
                      "table_vocabs": [int(v) for v in model.vocabs],
                      "auc_ceiling": auc(p, y),
                      "log_loss_ceiling": log_loss}))


if __name__ == "__main__":
    main()
