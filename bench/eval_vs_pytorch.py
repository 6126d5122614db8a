#!/usr/bin/python3
"""pstrain eval against PyTorch in Python, scoring the same Net state_dict.

  bench/eval_vs_pytorch.py [path/to/pstrain] [--checkpoint PATH]
                           [--threads N] [--runs R]

Both sides score the 10,000 Fashion-MNIST test images with the same thread
count (default: all cores). pstrain: `pstrain eval --threads N --json`, one
process per run, its own batch size; the figure is the scoring time its eval
event reports (`seconds`), and the whole process's wall time is given
beside it. PyTorch: Debian's python3-torch in this process, the tutorial's
Net in eval mode under torch.no_grad(), batch 64, the images normalized as
pstrain does; the figure is the time of the scoring loop. Without
--checkpoint a Net is trained for 200 steps with `pstrain launch` first.
Prints one JSON document and writes it to bench/results/eval.json. The
figure that matters is `pstrain_over_pytorch`: the median scoring seconds of
pstrain over those of PyTorch (at most 1 is the goal).
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST's, as lib/data/dataset.h


class Net(nn.Module):
    """The RPC tutorial's Net, with pstrain's parameter names."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = self.dropout1(F.max_pool2d(x, 2))
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.log_softmax(self.fc2(self.dropout2(x)), dim=1)


def idx(name):
    path = os.path.join(DATA, name)
    opener = gzip.open if not os.path.exists(path) else open
    with opener(path if os.path.exists(path) else path + ".gz", "rb") as f:
        return f.read()


def test_set():
    images = np.frombuffer(idx("t10k-images-idx3-ubyte")[16:], dtype=np.uint8)
    labels = np.frombuffer(idx("t10k-labels-idx1-ubyte")[8:], dtype=np.uint8)
    x = (torch.from_numpy(images.astype(np.float32)).reshape(-1, 1, 28, 28) / 255 - MEAN) / STD
    return x, torch.from_numpy(labels.astype(np.int64))


def pytorch_pass(model, x, y, batch):
    start = time.perf_counter()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), batch):
            out = model(x[i:i + batch])
            correct += (out.argmax(1) == y[i:i + batch]).sum().item()
    return time.perf_counter() - start, correct / len(y)


def pstrain_pass(binary, checkpoint, threads):
    start = time.perf_counter()
    out = subprocess.run([binary, "eval", "--checkpoint", checkpoint, "--threads",
                          str(threads), "--json", "--quiet"],
                         capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit("eval_vs_pytorch.py: pstrain eval failed: " + out.stderr[-2000:])
    event = next(json.loads(l) for l in out.stdout.splitlines() if '"eval"' in l)
    return event, wall


def train_checkpoint(binary, tmp):
    path = os.path.join(tmp, "net.pt")
    subprocess.run([binary, "launch", "--world_size", "3", "--max_steps", "200",
                    "--master_port", "0", "--quiet", "--checkpoint", path], check=True)
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("binary", nargs="?", default=os.path.join(ROOT, "build", "bin", "pstrain"))
    p.add_argument("--checkpoint", default="")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    if not os.access(a.binary, os.X_OK):
        sys.exit("eval_vs_pytorch.py: %s is not an executable; build pstrain first" % a.binary)
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = a.checkpoint or train_checkpoint(a.binary, tmp)
        torch.set_num_threads(a.threads)
        model = Net()
        model.load_state_dict(torch.load(checkpoint), strict=True)
        model.eval()
        x, y = test_set()
        py = [pytorch_pass(model, x, y, 64) for _ in range(a.runs)]
        ours = [pstrain_pass(a.binary, checkpoint, a.threads) for _ in range(a.runs)]
    py_seconds = statistics.median(s for s, _ in py)
    our_seconds = statistics.median(e["seconds"] for e, _ in ours)
    doc = {
        "schema": "pstrain.bench/1",
        "eval": {
            "model": "net", "dataset": "fashion-mnist", "samples": len(y),
            "threads": a.threads, "runs": a.runs,
            "pstrain": {
                "batch_size": ours[0][0]["batch_size"],
                "seconds": our_seconds,
                "runs_seconds": [e["seconds"] for e, _ in ours],
                "process_wall_seconds": statistics.median(w for _, w in ours),
                "test_accuracy": ours[0][0]["test_accuracy"],
            },
            "pytorch": {
                "batch_size": 64, "version": torch.__version__,
                "seconds": py_seconds,
                "runs_seconds": [s for s, _ in py],
                "test_accuracy": py[0][1],
            },
            "pstrain_over_pytorch": our_seconds / py_seconds,
        },
    }
    out = os.path.join(ROOT, "bench", "results", "eval.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
