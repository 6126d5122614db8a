#!/usr/bin/python3
"""Writes an ImageFolder tree of JPEGs the size of Imagenette's full-size ones.

  bench/make_image_folder.py DIR [--classes 10] [--train 40] [--val 10]
                             [--width 500] [--height 375] [--quality 90]
                             [--seed 1]

DIR/train/<class>/<n>.JPEG and DIR/val/<class>/<n>.JPEG (imagenette2's
layout; class names like n01440764). Imagenette's images average about
500x375 pixels and ~100 KB; these are smooth random gradients and blobs
plus pixel noise, so that their JPEG sizes and decode times are realistic.
Needs python3-numpy and python3-pil (Debian). Deterministic for a seed.
"""
import argparse
import os

import numpy as np
from PIL import Image


def image(rng, height, width):
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    out = np.zeros((height, width, 3), np.float32)
    for c in range(3):
        base = rng.uniform(40, 200)
        gy, gx = rng.uniform(-0.25, 0.25, 2)
        out[..., c] = base + gy * y + gx * x
        for _ in range(4):  # low-frequency waves
            fy, fx = rng.uniform(0.005, 0.05, 2)
            phase = rng.uniform(0, 2 * np.pi)
            out[..., c] += rng.uniform(10, 30) * np.sin(fy * y + fx * x + phase)
    for _ in range(6):  # blobs of another colour
        cy, cx = rng.uniform(0, height), rng.uniform(0, width)
        r = rng.uniform(15, 80)
        mask = ((y - cy) ** 2 + (x - cx) ** 2) < r * r
        out[mask] += rng.uniform(-60, 60, 3)
    out += rng.normal(0, 20, out.shape)  # sensor noise, texture
    return np.clip(out, 0, 255).astype(np.uint8)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--train", type=int, default=40, help="images per class")
    p.add_argument("--val", type=int, default=10, help="images per class")
    p.add_argument("--width", type=int, default=500)
    p.add_argument("--height", type=int, default=375)
    p.add_argument("--quality", type=int, default=90)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    total = 0
    count = 0
    for split, per_class in (("train", a.train), ("val", a.val)):
        for c in range(a.classes):
            folder = os.path.join(a.dir, split, "n%08d" % (1440764 + c))
            os.makedirs(folder, exist_ok=True)
            for i in range(per_class):
                path = os.path.join(folder, "%s_%05d.JPEG" % (split, i))
                Image.fromarray(image(rng, a.height, a.width)).save(
                    path, quality=a.quality)
                total += os.path.getsize(path)
                count += 1
    print("%d images, %.1f KB on average, in %s" % (count, total / 1e3 / count, a.dir))


if __name__ == "__main__":
    main()
