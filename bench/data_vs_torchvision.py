#!/usr/bin/python3
"""pstrain's image pipeline against torchvision's, per core, on the same files.

  bench/data_vs_torchvision.py [path/to/pstrain] [--data_dir DIR]
                               [--seconds S] [--image_size 224]

Both sides read the JPEGs of an ImageFolder tree (DIR/train/<class>/,
DIR/val/<class>/; without --data_dir one is made in a temporary folder by
bench/make_image_folder.py: Imagenette-sized 500x375 JPEGs of ~100 KB) and
transform them on ONE thread:
  train: RandomResizedCrop(224) + RandomHorizontalFlip() + ToTensor() +
         Normalize(ImageNet's mean and std);
  eval:  Resize(256) + CenterCrop(224) + ToTensor() + Normalize().
pstrain: `pstrain bench data --dataset imagefolder --data_threads 1 --json`
(libjpeg-turbo with DCT scaling, one bilinear pass on uint8). torchvision:
Debian's python3-torchvision's ImageFolder with its default loader (PIL),
torch.set_num_threads(1), dataset[i] in a loop. The figures are images per
second per core; `train_ratio` and `eval_ratio` are pstrain's over
torchvision's (the goal: at least 1). Prints one JSON document and writes it
to bench/results/data.json.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
import torchvision
import torchvision.transforms as T
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def rate(dataset, seconds):
    """Images per second of dataset[i] over i = 0, 1, ... (cycling)."""
    dataset[0]  # warm up
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        dataset[count % len(dataset)]
        count += 1
    return count / (time.perf_counter() - start), count


def decode_rate(paths, seconds):
    """PIL open + convert("RGB") (what ImageFolder's loader does)."""
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        with open(paths[count % len(paths)], "rb") as f:
            Image.open(f).convert("RGB")
        count += 1
    return count / (time.perf_counter() - start)


def torchvision_side(data_dir, size, seconds):
    torch.set_num_threads(1)
    resize = int(size * 256 / 224)
    train = torchvision.datasets.ImageFolder(
        os.path.join(data_dir, "train"),
        T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(),
                   T.ToTensor(), T.Normalize(MEAN, STD)]))
    val = torchvision.datasets.ImageFolder(
        os.path.join(data_dir, "val"),
        T.Compose([T.Resize(resize), T.CenterCrop(size), T.ToTensor(),
                   T.Normalize(MEAN, STD)]))
    train_rate, train_count = rate(train, seconds)
    eval_rate, eval_count = rate(val, seconds)
    paths = [p for p, _ in train.samples][:256]
    return {"version": torchvision.__version__, "torch_threads": 1,
            "decode_images_per_second_per_core": decode_rate(paths, seconds),
            "train_images_per_second_per_core": train_rate,
            "train_images": train_count,
            "eval_images_per_second_per_core": eval_rate,
            "eval_images": eval_count}


def pstrain_side(pstrain, data_dir, size, seconds):
    out = subprocess.run(
        [pstrain, "bench", "data", "--dataset", "imagefolder", "--data_dir",
         data_dir, "--image_size", str(size), "--data_threads", "1",
         "--seconds", str(seconds), "--json"],
        check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    d = doc["data"]
    side = {"decode_images_per_second_per_core":
            d["decode"]["images_per_second_per_thread"],
            "train_images_per_second_per_core":
            d["train"]["images_per_second_per_thread"],
            "train_images": d["train"]["images"],
            "eval_images_per_second_per_core":
            d["eval"]["images_per_second_per_thread"],
            "eval_images": d["eval"]["images"],
            "read_images_per_second": d["read"]["images_per_second"],
            "read_bytes_per_second": d["read"]["bytes_per_second"],
            "mean_file_bytes": d["mean_file_bytes"]}
    return side, doc


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("pstrain", nargs="?",
                   default=os.path.join(ROOT, "build", "bin", "pstrain"))
    p.add_argument("--data_dir", help="an ImageFolder tree; default: made")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--image_size", type=int, default=224)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = a.data_dir
        if data_dir is None:
            data_dir = os.path.join(tmp, "imagefolder")
            subprocess.run([sys.executable,
                            os.path.join(ROOT, "bench", "make_image_folder.py"),
                            data_dir, "--classes", "10", "--train", "26",
                            "--val", "10"], check=True, stdout=sys.stderr)
        ours, doc = pstrain_side(a.pstrain, data_dir, a.image_size, a.seconds)
        theirs = torchvision_side(data_dir, a.image_size, a.seconds)
    label = a.data_dir or "generated by bench/make_image_folder.py"
    doc["data"]["data_dir"] = label
    result = {
        "schema": doc["schema"], "machine": doc["machine"],
        "build": doc["build"],
        "data_vs_torchvision": {
            "data_dir": label,
            "image_size": a.image_size, "seconds_per_phase": a.seconds,
            "pstrain": ours, "torchvision": theirs,
            "train_ratio": ours["train_images_per_second_per_core"] /
            theirs["train_images_per_second_per_core"],
            "eval_ratio": ours["eval_images_per_second_per_core"] /
            theirs["eval_images_per_second_per_core"],
            "pstrain_data": doc["data"]}}
    text = json.dumps(result, indent=2)
    print(text)
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "data.json"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
