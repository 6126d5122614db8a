#!/usr/bin/env python3
"""Writes what `pstrain launch --model DIR/mlp.pt --dataset tensors
--data_dir DIR` trains: a model of your own as TorchScript, and a data set
as tensor files.

    python3 own_model.py [--out DIR] [--data_dir IDX_DIR] [--train N]
                         [--test N] [--hidden H] [--seed S]

- DIR/train.pt, DIR/test.pt: torch.save({"x": x, "y": y}, path), x a float
  tensor [N, ...] (here Fashion-MNIST's images, float32 [N, 784], scaled
  to 0..1 and normalized) and y int64 [N] class indices (for --loss mse: a
  float tensor of the output's shape). Read from Debian's
  dataset-fashion-mnist unless --data_dir names other IDX files.
- DIR/mlp.pt: torch.jit.script(model).save(path) of a two-layer
  perceptron that returns logits (pstrain's default --loss cross_entropy).
  Any module torch.jit.script takes will do, as long as its forward takes
  one tensor (a batch of x) and returns one tensor.

After training, pstrain's checkpoint is the module's state_dict:

    model = MLP(784, 256, 10)
    model.load_state_dict(torch.load("pstrain-model.pt"), strict=True)
"""
import argparse
import gzip
import os
import struct

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, inputs: int, hidden: int, classes: int):
        super().__init__()
        self.fc1 = nn.Linear(inputs, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def read_idx(path: str) -> torch.Tensor:
    """An IDX file (plain or .gz) as a uint8 tensor of its shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    body = bytearray(data[4 + 4 * ndim:])
    return torch.frombuffer(body, dtype=torch.uint8).reshape(dims)


def find(data_dir: str, name: str) -> str:
    for candidate in (name, name + ".gz"):
        path = os.path.join(data_dir, candidate)
        if os.path.exists(path):
            return path
    raise SystemExit(f"{os.path.join(data_dir, name)}[.gz] not found")


def split(data_dir: str, prefix: str, limit: int) -> dict:
    images = read_idx(find(data_dir, prefix + "-images-idx3-ubyte"))
    labels = read_idx(find(data_dir, prefix + "-labels-idx1-ubyte"))
    if limit > 0:
        images, labels = images[:limit], labels[:limit]
    x = images.reshape(len(images), -1).float() / 255
    # Fashion-MNIST's mean and standard deviation.
    x = (x - 0.2860) / 0.3530
    return {"x": x, "y": labels.long()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="own", help="folder to write to")
    parser.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist",
                        help="Fashion-MNIST's IDX files")
    parser.add_argument("--train", type=int, default=0,
                        help="first N training samples (0: all)")
    parser.add_argument("--test", type=int, default=0,
                        help="first N test samples (0: all)")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of the model's initial parameters")
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    for prefix, name, limit in (("train", "train.pt", args.train),
                                ("t10k", "test.pt", args.test)):
        data = split(args.data_dir, prefix, limit)
        torch.save(data, os.path.join(args.out, name))
        print(f"{name}: x {list(data['x'].shape)}, y {list(data['y'].shape)}")
    torch.manual_seed(args.seed)
    model = MLP(28 * 28, args.hidden, 10)
    torch.jit.script(model).save(os.path.join(args.out, "mlp.pt"))
    print(f"mlp.pt: {sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main()
