#!/usr/bin/python3
"""lstm_lm in one PyTorch process, the reference for pstrain's figure.

Trains pytorch/examples' word_language_model RNNModel (LSTM) with exactly
what `pstrain launch --model lstm_lm` uses: the same corpus and split (the
fortunes by FNV-1a hash of each fortune, or DIR/train.txt, valid.txt,
test.txt), the same tokenizer and vocabulary, the same batches (the training
stream in WORKERS * BATCH columns, windows of BPTT, the state carried and
detached) and the same optimizer (Adam, lr 0.001; with --sparse_embeddings
on, pstrain's default, the embedding table by LazyAdam row by row, as
pstrain's server updates a row-sparse table), then scores the test split as
the example does (10 columns) and prints one JSON document.

With --pstrain BIN it also runs `BIN launch --world_size WORKERS+1 --model
lstm_lm` with the same flags and adds its summary's perplexity and the ratio.
Needs Debian's python3-torch, nothing else.

usage: bench/lm_vs_torch.py [--data_dir DIR] [--epochs 1] [--pstrain BIN]
"""

import argparse
import collections
import json
import math
import os
import string
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

FORTUNES = "/usr/share/games/fortunes"
PUNCT = frozenset(string.punctuation.encode())


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for c in data:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def lines_of(data):
    """Lines as lib/data splits them: '\\n' ends a line; no empty last one."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def tokenize(line, split_punctuation, out):
    """lib/data/tokenizer.cc: ASCII whitespace, punctuation apart, <eos>."""
    for word in line.split():
        if not split_punctuation:
            out.append(word)
            continue
        start = 0
        for i, c in enumerate(word):
            if c in PUNCT:
                if i > start:
                    out.append(word[start:i])
                out.append(word[i:i + 1])
                start = i + 1
        if start < len(word):
            out.append(word[start:])
    out.append(b"<eos>")


def fortune_splits(directory):
    """lib/data/fortunes.cc: {train, valid, test} lines, and the count."""
    names = sorted(n for n in os.listdir(directory)
                   if not n.startswith(".") and not n.endswith(".dat") and
                   not n.endswith(".u8"))
    splits = {"train": [], "valid": [], "test": []}
    count = 0
    for name in names:
        path = os.path.join(directory, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        fortunes, current = [], []
        for line in lines_of(data):
            if line == b"%":
                fortunes.append(current)
                current = []
            else:
                current.append(line)
        fortunes.append(current)
        for lines in fortunes:
            if not lines:
                continue
            bucket = fnv1a64(b"\n".join(lines)) % 10
            split = "valid" if bucket == 0 else "test" if bucket == 1 else "train"
            splits[split].extend(lines)
            count += 1
    return splits, count


def load_corpus(data_dir, vocab_size, fortunes_dir=FORTUNES):
    """lib/data/text_corpus.cc: id tensors of each split, and the vocabulary."""
    if data_dir:
        splits = {}
        for name in ("train", "valid", "test"):
            with open(os.path.join(data_dir, name + ".txt"), "rb") as f:
                splits[name] = lines_of(f.read())
        fortunes = 0
    else:
        splits, fortunes = fortune_splits(fortunes_dir)
    tokens = {}
    for name, lines in splits.items():
        out = []
        for line in lines:
            tokenize(line, not data_dir, out)
        tokens[name] = out
    counts = collections.Counter(tokens["train"])
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    words = [w for w, _ in ranked[:vocab_size]]
    if b"<unk>" not in words:
        words.append(b"<unk>")
    ids = {w: i for i, w in enumerate(words)}
    unk = ids[b"<unk>"]
    encoded = {name: torch.tensor([ids.get(t, unk) for t in toks],
                                  dtype=torch.int64)
               for name, toks in tokens.items()}
    return encoded, words, unk, fortunes


class RNNModel(nn.Module):
    """word_language_model's RNNModel, rnn_type "LSTM", with its init."""

    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.0,
                 tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers,
                           dropout=dropout if nlayers > 1 else 0.0)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.nlayers, self.nhid = nlayers, nhid
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        z = torch.zeros(self.nlayers, bsz, self.nhid)
        return (z, z.clone())


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


def windows(source, bptt):
    for i in range(0, source.size(0) - 1, bptt):
        n = min(bptt, source.size(0) - 1 - i)
        yield source[i:i + n], source[i + 1:i + 1 + n].reshape(-1)


def evaluate(model, data, bptt):
    model.eval()
    source = batchify(data, 10)
    hidden = model.init_hidden(10)
    total = 0.0
    with torch.no_grad():
        for x, y in windows(source, bptt):
            out, hidden = model(x, hidden)
            total += F.nll_loss(out, y, reduction="sum").item()
    return total / ((source.size(0) - 1) * 10)


class LazyAdam:
    """pstrain's row-wise Adam for a row-sparse table (lib/ps/store/row_optimizer.h):
    only the rows a step's batch looks up move, with their moments; each
    row's bias correction counts its own updates. Adam's arithmetic as
    libtorch's: p -= lr * m / (1 - b1^t) / (sqrt(v) / sqrt(1 - b2^t) + eps).
    """

    def __init__(self, weight, lr, betas=(0.9, 0.999), eps=1e-8):
        self.weight, self.lr, self.betas, self.eps = weight, lr, betas, eps
        self.m = torch.zeros_like(weight)
        self.v = torch.zeros_like(weight)
        self.t = torch.zeros(weight.size(0))

    @torch.no_grad()
    def step(self, ids):
        b1, b2 = self.betas
        ids = torch.unique(ids)
        g = self.weight.grad.index_select(0, ids)
        m = self.m.index_select(0, ids).mul_(b1).add_(g, alpha=1 - b1)
        v = self.v.index_select(0, ids).mul_(b2).addcmul_(g, g, value=1 - b2)
        t = self.t.index_select(0, ids).add_(1)
        self.m.index_copy_(0, ids, m)
        self.v.index_copy_(0, ids, v)
        self.t.index_copy_(0, ids, t)
        t = t.unsqueeze(1)
        bias1, bias2 = 1 - b1 ** t, 1 - b2 ** t
        denom = (v.sqrt() / bias2.sqrt()).add_(self.eps)
        p = self.weight.index_select(0, ids)
        p.addcdiv_(m, denom * bias1, value=-self.lr)
        self.weight.index_copy_(0, ids, p)


def train_torch(args, corpus, vocab):
    torch.manual_seed(args.seed)
    model = RNNModel(len(vocab), args.embed_dim, args.hidden_dim,
                     args.num_layers, args.dropout, args.tie_weights)
    # As pstrain: with --sparse_embeddings (its default) an untied
    # embedding is updated row by row (LazyAdam), the rest by Adam.
    lazy = None
    dense = list(model.parameters())
    if args.sparse_embeddings == "on" and not args.tie_weights:
        lazy = LazyAdam(model.encoder.weight, args.lr)
        dense = [p for p in dense if p is not model.encoder.weight]
    opt = torch.optim.Adam(dense, lr=args.lr)
    columns = args.workers * args.batch_size
    source = batchify(corpus["train"], columns)
    steps, tokens = 0, 0
    start = time.monotonic()
    for _ in range(args.epochs):
        model.train()
        hidden = model.init_hidden(columns)
        for x, y in windows(source, args.bptt):
            if args.max_steps and steps >= args.max_steps:
                break
            hidden = tuple(h.detach() for h in hidden)
            model.zero_grad()
            out, hidden = model(x, hidden)
            loss = F.nll_loss(out, y)
            loss.backward()
            if args.clip_grad_norm > 0:
                nn.utils.clip_grad_norm_(model.parameters(),
                                         args.clip_grad_norm)
            opt.step()
            if lazy is not None:
                lazy.step(x.reshape(-1))
            steps += 1
            tokens += y.numel()
    seconds = time.monotonic() - start
    loss = evaluate(model, corpus["test"], args.bptt)
    return {"steps": steps, "train_seconds": seconds,
            "tokens_per_second": tokens / seconds if seconds else 0,
            "test_loss": loss, "test_perplexity": math.exp(loss)}


def run_pstrain(args):
    cmd = [args.pstrain, "launch", "--world_size", str(args.workers + 1),
           "--master_port", "0", "--model", "lstm_lm", "--json", "--quiet",
           "--batch_size", str(args.batch_size), "--epochs", str(args.epochs),
           "--bptt", str(args.bptt), "--vocab_size", str(args.vocab_size),
           "--embed_dim", str(args.embed_dim),
           "--hidden_dim", str(args.hidden_dim),
           "--num_layers", str(args.num_layers),
           "--dropout", repr(args.dropout), "--lr", repr(args.lr),
           "--clip_grad_norm", repr(args.clip_grad_norm),
           "--seed", str(args.seed), "--checkpoint", args.checkpoint]
    if args.max_steps:
        cmd += ["--max_steps", str(args.max_steps)]
    if args.tie_weights:
        cmd.append("--tie_weights")
    if args.sparse_embeddings == "off":
        cmd.append("--sparse_embeddings=false")
    if args.data_dir:
        cmd += ["--data_dir", args.data_dir]
    start = time.monotonic()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True)
    wall = time.monotonic() - start
    summary = [json.loads(l) for l in done.stdout.splitlines()
               if l.startswith("{")]
    summary = [e for e in summary if e.get("event") == "summary" and
               e.get("role") == "server"][-1]
    return {"command": " ".join(cmd[1:]), "wall_seconds": wall,
            "steps": summary["steps"],
            "test_loss": summary["test_loss"],
            "test_perplexity": summary["test_perplexity"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data_dir", default="")
    p.add_argument("--vocab_size", type=int, default=10000)
    p.add_argument("--bptt", type=int, default=35)
    p.add_argument("--workers", type=int, default=2,
                   help="pstrain's workers: the process trains on "
                        "workers * batch_size columns")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max_steps", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--embed_dim", type=int, default=256)
    p.add_argument("--hidden_dim", type=int, default=512)
    p.add_argument("--num_layers", type=int, default=1)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--tie_weights", action="store_true")
    p.add_argument("--clip_grad_norm", type=float, default=0.0)
    p.add_argument("--sparse_embeddings", choices=["on", "off"],
                   default="on",
                   help="on (pstrain's default): the embedding by LazyAdam, "
                        "as pstrain's row-sparse table; off: all by Adam")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--pstrain", default="",
                   help="also run this pstrain binary's launch")
    p.add_argument("--checkpoint", default="/tmp/lm_vs_torch.pt")
    p.add_argument("--corpus_only", action="store_true",
                   help="print the corpus figures and stop")
    p.add_argument("--fortunes_dir", default=FORTUNES)
    p.add_argument("--dump", action="store_true",
                   help="with --corpus_only: also the vocabulary (as "
                        "Latin-1 text) and every split's ids")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    corpus, vocab, unk, fortunes = load_corpus(args.data_dir, args.vocab_size,
                                               args.fortunes_dir)
    out = {"corpus": {
        "source": args.data_dir or args.fortunes_dir, "fortunes": fortunes,
        "vocabulary": len(vocab),
        "tokens": {k: v.numel() for k, v in corpus.items()},
        "unk_rate": {k: (v == unk).double().mean().item()
                     for k, v in corpus.items()}}}
    if args.dump:
        out["vocab"] = [w.decode("latin-1") for w in vocab]
        out["ids"] = {k: v.tolist() for k, v in corpus.items()}
    if not args.corpus_only:
        out["torch"] = train_torch(args, corpus, vocab)
        out["torch"]["threads"] = torch.get_num_threads()
        if args.pstrain:
            out["pstrain"] = run_pstrain(args)
            out["perplexity_ratio"] = (out["pstrain"]["test_perplexity"] /
                                       out["torch"]["test_perplexity"])
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
