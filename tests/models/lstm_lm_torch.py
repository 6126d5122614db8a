"""Loads a pstrain lstm_lm checkpoint into pytorch/examples'
word_language_model RNNModel (LSTM) and runs it on an input, for
tests/models/lstm_lm_torch_test.cc.

usage: lstm_lm_torch.py VOCAB EMBED HIDDEN LAYERS TIE CHECKPOINT INPUT OUTPUT

Loads CHECKPOINT with strict=True (exit 1 with Python's message when it
does not load; with TIE "1" its decoder.weight must also equal its
encoder.weight), reads {"input": int64 [T, B], "h": ..., "c": ...} from INPUT,
writes {"output": log-probs [T*B, VOCAB], "h": h', "c": c'} in eval mode to
OUTPUT with torch.save, and prints the model's state_dict keys in order, one
a line.
"""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    """word_language_model's RNNModel, rnn_type "LSTM"."""

    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.0,
                 tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden


def main(vocab, embed, hidden, layers, tie, checkpoint, input_path,
         output_path):
    tied = tie == "1"
    model = RNNModel(int(vocab), int(embed), int(hidden), int(layers),
                     tie_weights=tied)
    state = torch.load(checkpoint)
    model.load_state_dict(state, strict=True)
    if tied and not torch.equal(state["decoder.weight"],
                                state["encoder.weight"]):
        sys.exit("tied: decoder.weight is not encoder.weight")
    model.eval()
    data = torch.load(input_path)
    with torch.no_grad():
        out, (h, c) = model(data["input"], (data["h"], data["c"]))
    torch.save({"output": out.contiguous(), "h": h.contiguous(),
                "c": c.contiguous()}, output_path)
    for key in model.state_dict():
        print(key)


if __name__ == "__main__":
    main(*sys.argv[1:])
