"""DLRM_Net, a python3-torch DLRM built as the reference's is for Criteo
(Naumov et al., 2019, arXiv:1906.00091: bottom MLP, one EmbeddingBag a
feature, dot-product interactions without self-interaction, top MLP ending
in a Sigmoid), for bench/ctr_torch.py to train; and, run as a script, a
check that a pstrain dlrm checkpoint loads into it, for
tests/models/dlrm_torch_test.cc.

usage: dlrm_torch.py BOTTOM TOP TABLES CHECKPOINT INPUT OUTPUT

BOTTOM and TOP are the reference's --arch-mlp-bot and --arch-mlp-top
("13-8-4", "16-1"; TOP without its input width, which the interactions
set), TABLES the tables' rows ("3-5-7"). Loads CHECKPOINT with strict=True
(exit 1 with Python's message when it does not load), reads {"dense":
float [B, 13], "rows": int64 [B, T]} from INPUT, writes {"output": the
click probabilities [B], "dense": the input's} to OUTPUT with torch.save,
and prints the model's state_dict keys in order, one a line.
"""

import sys

import torch
import torch.nn as nn


def mlp(widths, sigmoid_layer):
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1], bias=True))
        layers.append(nn.Sigmoid() if i == sigmoid_layer else nn.ReLU())
    return nn.Sequential(*layers)


class DLRM_Net(nn.Module):
    def __init__(self, bottom, top, tables):
        super().__init__()
        d = bottom[-1]
        self.emb_l = nn.ModuleList(
            nn.EmbeddingBag(n, d, mode="sum", sparse=True) for n in tables)
        self.bot_l = mlp(bottom, -1)
        vectors = len(tables) + 1
        top = [d + vectors * (vectors - 1) // 2] + top
        self.top_l = mlp(top, len(top) - 2)

    def forward(self, dense, offsets, indices):
        x = self.bot_l(dense)
        ly = [e(indices[t], offsets[t]) for t, e in enumerate(self.emb_l)]
        batch, d = x.shape
        t = torch.cat([x] + ly, dim=1).view((batch, -1, d))
        z = torch.bmm(t, torch.transpose(t, 1, 2))
        n = z.shape[1]
        li = torch.tensor([i for i in range(n) for j in range(i)])
        lj = torch.tensor([j for i in range(n) for j in range(i)])
        r = torch.cat([x, z[:, li, lj]], dim=1)
        return self.top_l(r)


def widths(text):
    return [int(w) for w in text.split("-")]


def main(bottom, top, tables, checkpoint, input_path, output_path):
    model = DLRM_Net(widths(bottom), widths(top), widths(tables))
    model.load_state_dict(torch.load(checkpoint), strict=True)
    model.eval()
    data = torch.load(input_path)
    rows = data["rows"]
    batch = rows.shape[0]
    offsets = [torch.arange(batch)] * rows.shape[1]
    indices = [rows[:, t].contiguous() for t in range(rows.shape[1])]
    with torch.no_grad():
        out = model(data["dense"], offsets, indices).view(-1)
    # Two entries: a dict of one is pickled with an opcode (SETITEM) that
    # libtorch's reader lacks.
    torch.save({"output": out.contiguous(), "dense": data["dense"]},
               output_path)
    for key in model.state_dict():
        print(key)


if __name__ == "__main__":
    main(*sys.argv[1:])
