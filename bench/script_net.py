#!/usr/bin/python3
"""Writes PyTorch's RPC tutorial's Net, scripted, to PATH: the network of
pstrain's built-in `net` (the same layers, names and log_softmax output),
so that `pstrain bench train --model net,PATH --loss nll` times the two,
built-in and TorchScript, in one run.

    bench/script_net.py PATH [--seed S]

Needs Debian's python3-torch.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eval_vs_pytorch import Net  # noqa: E402  the tutorial's, pstrain's names


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("path")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    torch.jit.script(Net()).save(a.path)


if __name__ == "__main__":
    main()
