"""Loads a pstrain ResNet checkpoint into torchvision's model and scores an
input with it, for tests/models/resnet_torchvision_test.cc.

usage: resnet_torchvision.py ARCH STEM NUM_CLASSES CHECKPOINT INPUT OUTPUT

ARCH is resnet18, resnet34 or resnet50; STEM is "imagenet" (torchvision's
own) or "cifar" (conv1 3x3 stride 1 padding 1, no max-pool). Loads
CHECKPOINT with strict=True (exit 1 with Python's message when it does not
fit), reads {"input": x} from INPUT, writes {"output": log_softmax(m(x), 1),
"input": x} in eval mode to OUTPUT with torch.save, and prints the model's
state_dict keys in order, one a line.
"""

import sys

import torch
import torchvision


def main(arch, stem, num_classes, checkpoint, input_path, output_path):
    model = getattr(torchvision.models, arch)(num_classes=int(num_classes))
    state = torch.load(checkpoint)
    in_channels = state["conv1.weight"].shape[1]
    if stem == "cifar":
        model.conv1 = torch.nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False)
        model.maxpool = torch.nn.Identity()
    elif in_channels != 3:
        model.conv1 = torch.nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False)
    model.load_state_dict(state, strict=True)
    model.eval()
    x = torch.load(input_path)["input"]
    with torch.no_grad():
        out = torch.log_softmax(model(x), 1)
    # Two entries: Python pickles a one-entry dict with the SETITEM opcode,
    # which libtorch 1.13's unpickler (torch::pickle_load) does not know.
    torch.save({"output": out.contiguous(), "input": x}, output_path)
    for key in model.state_dict():
        print(key)


if __name__ == "__main__":
    main(*sys.argv[1:])
