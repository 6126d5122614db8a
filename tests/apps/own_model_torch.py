#!/usr/bin/python3
"""Python's side of tests/apps/own_model_test.cc, with Debian's python3-torch
and python3-torchvision: scripted models and tensor data sets to train, the
single-process reference a sync run must equal, and the checks that
pstrain's checkpoints load into the Python modules.

    own_model_torch.py mlp PATH SEED INPUTS HIDDEN CLASSES
    own_model_torch.py data DIR SEED N FEATURES CLASSES [--y_n M]
                       [--y_float] [--x_dtype float64]
    own_model_torch.py images DIR SEED N
    own_model_torch.py resnet18 PATH
    own_model_torch.py reference MODULE DIR STEPS WORKERS BATCH LR MOMENTUM
                       SEED OUT
    own_model_torch.py compare A B
    own_model_torch.py load_mlp CHECKPOINT INPUTS HIDDEN CLASSES
    own_model_torch.py load_resnet18 CHECKPOINT
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

# The example's MLP (share/examples/own_model.py), so that the tests train
# what share/doc/own-model.md shows.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "share", "examples"))
from own_model import MLP  # noqa: E402

# data::ShardSampler's epoch seed: seed * 1000003 + epoch.
EPOCH_SEED_MULTIPLIER = 1000003


def cmd_mlp(a):
    torch.manual_seed(a.seed)
    torch.jit.script(MLP(a.inputs, a.hidden, a.classes)).save(a.path)


def cmd_data(a):
    g = torch.Generator().manual_seed(a.seed)
    dtype = getattr(torch, a.x_dtype)
    for name in ("train.pt", "test.pt"):
        x = torch.randn(a.n, a.features, generator=g).to(dtype)
        n_y = a.y_n if a.y_n >= 0 else a.n
        if a.y_float:
            y = torch.randn(n_y, a.classes, generator=g)
        else:
            y = torch.randint(0, a.classes, (n_y,), generator=g)
        torch.save({"x": x, "y": y}, f"{a.dir}/{name}")


def cmd_images(a):
    g = torch.Generator().manual_seed(a.seed)
    for name in ("train.pt", "test.pt"):
        x = torch.randn(a.n, 3, 32, 32, generator=g)
        y = torch.randint(0, 10, (a.n,), generator=g)
        torch.save({"x": x, "y": y}, f"{a.dir}/{name}")


def cmd_resnet18(a):
    import torchvision
    torch.manual_seed(1)
    torch.jit.script(torchvision.models.resnet18(num_classes=10)).save(a.path)


def cmd_reference(a):
    """SGD with momentum on the batch that all workers of a sync step see
    together, as one process: what pstrain's sync mode must compute."""
    model = torch.jit.load(a.module)
    data = torch.load(f"{a.dir}/train.pt")
    x, y = data["x"].float(), data["y"]
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    model.train()
    n = len(x)
    global_batch = a.workers * a.batch
    per_epoch = n // global_batch
    for step in range(a.steps):
        epoch, s = divmod(step, per_epoch)
        g = torch.Generator().manual_seed(a.seed * EPOCH_SEED_MULTIPLIER + epoch)
        perm = torch.randperm(n, generator=g)
        idx = perm[s * global_batch:(s + 1) * global_batch]
        opt.zero_grad()
        F.cross_entropy(model(x[idx]), y[idx]).backward()
        opt.step()
    torch.save({k: v for k, v in model.state_dict().items()}, a.out)


def cmd_compare(a):
    left, right = torch.load(a.a), torch.load(a.b)
    if list(left) != list(right):
        sys.exit(f"names differ: {list(left)} vs {list(right)}")
    print(max((left[k].double() - right[k].double()).abs().max().item()
              for k in left))


def cmd_load_mlp(a):
    model = MLP(a.inputs, a.hidden, a.classes)
    model.load_state_dict(torch.load(a.checkpoint), strict=True)
    print(len(model.state_dict()))


def cmd_load_resnet18(a):
    import torchvision
    model = torchvision.models.resnet18(num_classes=10)
    model.load_state_dict(torch.load(a.checkpoint), strict=True)
    print(len(model.state_dict()))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("mlp")
    for name in ("path",):
        s.add_argument(name)
    for name in ("seed", "inputs", "hidden", "classes"):
        s.add_argument(name, type=int)
    s = sub.add_parser("data")
    s.add_argument("dir")
    for name in ("seed", "n", "features", "classes"):
        s.add_argument(name, type=int)
    s.add_argument("--y_n", type=int, default=-1)
    s.add_argument("--y_float", action="store_true")
    s.add_argument("--x_dtype", default="float32")
    s = sub.add_parser("images")
    s.add_argument("dir")
    s.add_argument("seed", type=int)
    s.add_argument("n", type=int)
    s = sub.add_parser("resnet18")
    s.add_argument("path")
    s = sub.add_parser("reference")
    s.add_argument("module")
    s.add_argument("dir")
    for name in ("steps", "workers", "batch"):
        s.add_argument(name, type=int)
    s.add_argument("lr", type=float)
    s.add_argument("momentum", type=float)
    s.add_argument("seed", type=int)
    s.add_argument("out")
    s = sub.add_parser("compare")
    s.add_argument("a")
    s.add_argument("b")
    s = sub.add_parser("load_mlp")
    s.add_argument("checkpoint")
    for name in ("inputs", "hidden", "classes"):
        s.add_argument(name, type=int)
    s = sub.add_parser("load_resnet18")
    s.add_argument("checkpoint")
    a = p.parse_args()
    globals()["cmd_" + a.cmd](a)


if __name__ == "__main__":
    main()
