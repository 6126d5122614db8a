// A process test: torchvision (Debian's python3-torchvision) transforms the
// same PNG with the same seeds, and draws the same crops and flips and
// (within one uint8 rounding step) the same pixels as data/transforms.h.

#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data/image_decode.h"
#include "data/transforms.h"
#include "testing/idx_files.h"
#include "testing/image_files.h"
#include "testing/process.h"

namespace pstrain::data {
namespace {

constexpr int64_t kHeight = 37, kWidth = 53, kSize = 16, kResize = 18;

// argv: png path, then seeds. Prints one JSON object.
constexpr const char* kScript = R"(
import json, sys
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image
img = F.pil_to_tensor(Image.open(sys.argv[1]).convert("RGB"))
mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
def norm(x):
    return F.normalize(F.convert_image_dtype(x, torch.float32), mean, std)
train = []
for s in sys.argv[2:]:
    torch.manual_seed(int(s))
    i, j, h, w = T.RandomResizedCrop.get_params(img, (0.08, 1.0), (3/4, 4/3))
    flip = bool(torch.rand(1) < 0.5)
    out = F.resized_crop(img, i, j, h, w, [16, 16],
                         T.InterpolationMode.BILINEAR, antialias=False)
    if flip:
        out = F.hflip(out)
    train.append({"box": [i, j, h, w], "flip": flip,
                  "values": norm(out).flatten().tolist()})
ev = F.center_crop(F.resize(img, 18, T.InterpolationMode.BILINEAR,
                            antialias=False), 16)
print(json.dumps({"train": train, "eval": norm(ev).flatten().tolist()}))
)";

// Values within one uint8 step (1/255/std) and few of them off at all:
// libtorch's kernels may fuse a multiply-add that this code does not.
void ExpectClose(const std::vector<float>& got, const nlohmann::json& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int off = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(got[i] - want[i].get<double>());
    EXPECT_LT(d, 1.01 / 255 / 0.224) << what << " value " << i;
    off += d > 1e-6;
  }
  EXPECT_LE(off, static_cast<int>(got.size() / 50)) << what;
}

TEST(TransformsTorchvisionTest, SameCropsFlipsAndPixelsAsTorchvision) {
  testing::ScratchDir dir;
  const std::string png = dir.File("image.png");
  testing::WriteFile(
      png, testing::EncodePng(testing::TestPattern(kHeight, kWidth, 3, 11),
                              kHeight, kWidth));
  auto bytes = ReadFileBytes(png);
  ASSERT_TRUE(bytes.ok());
  auto image = DecodeImage(png, *bytes);
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  std::vector<std::string> args = {"/usr/bin/python3", "-c", kScript, png};
  std::vector<uint64_t> seeds;
  for (int64_t i = 0; i < 12; ++i) {
    seeds.push_back(SampleSeed(3, 1, i));
    args.push_back(std::to_string(seeds.back()));
  }
  const auto r = pstrain::testing::Process(args).Wait(300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto want = nlohmann::json::parse(r.out);
  for (size_t k = 0; k < seeds.size(); ++k) {
    at::Generator gen = SampleGenerator(3, 1, static_cast<int64_t>(k));
    const CropBox box = RandomResizedCropBox(image->full, gen);
    const bool flip = RandomFlip(gen);
    const auto& t = want["train"][k];
    EXPECT_EQ(t["box"],
              nlohmann::json({box.top, box.left, box.height, box.width}))
        << k;
    EXPECT_EQ(t["flip"].get<bool>(), flip) << k;
    std::vector<float> out(3 * kSize * kSize);
    ResizedCrop(*image, box, kSize, flip, kImageNetNormalization, out.data());
    ExpectClose(out, t["values"], "train sample " + std::to_string(k));
  }
  std::vector<float> eval(3 * kSize * kSize);
  ResizeCenterCrop(*image, kResize, kSize, kImageNetNormalization, eval.data());
  ExpectClose(eval, want["eval"], "eval");
}

}  // namespace
}  // namespace pstrain::data
