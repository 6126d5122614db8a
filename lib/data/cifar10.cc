#include "data/cifar10.h"

#include <filesystem>
#include <vector>

#include <torch/torch.h>

#include "data/image_decode.h"
#include "data/source_util.h"
#include "data/transforms.h"

namespace pstrain::data {
namespace {

constexpr int64_t kSide = 32;
constexpr int64_t kPixels = 3 * kSide * kSide;
constexpr int64_t kRecord = 1 + kPixels;
constexpr int64_t kPadding = 4;

std::vector<std::string> FileNames(Split split) {
  if (split == Split::kTest)
    return {"test_batch.bin"};
  std::vector<std::string> names;
  for (int i = 1; i <= 5; ++i)
    names.push_back("data_batch_" + std::to_string(i) + ".bin");
  return names;
}

// DIR, or DIR/cifar-10-batches-bin when the files are there instead.
std::string FilesDir(const std::string& dir, const std::string& first) {
  std::error_code ec;
  const std::string nested = internal::JoinPath(dir, "cifar-10-batches-bin");
  if (!std::filesystem::exists(internal::JoinPath(dir, first), ec) &&
      std::filesystem::exists(internal::JoinPath(nested, first), ec)) {
    return nested;
  }
  return dir;
}

}  // namespace

Result<std::unique_ptr<Cifar10>> Cifar10::Open(const SourceOptions& options,
                                               Split split) {
  if (options.data_dir.empty()) {
    return InvalidArgument(
        "cifar10 needs --data_dir (the CIFAR-10 binary version)");
  }
  const std::vector<std::string> names = FileNames(split);
  const std::string dir = FilesDir(options.data_dir, names[0]);
  std::string all;
  for (const std::string& name : names) {
    const std::string path = internal::JoinPath(dir, name);
    PS_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
    if (bytes.empty() || bytes.size() % kRecord != 0) {
      return Corruption(path + ": " + std::to_string(bytes.size()) +
                        " bytes is not a whole number of 3073-byte records");
    }
    for (size_t r = 0; r < bytes.size(); r += kRecord) {
      if (static_cast<uint8_t>(bytes[r]) > 9) {
        return Corruption(
            path + ": record " + std::to_string(r / kRecord) + " has label " +
            std::to_string(static_cast<uint8_t>(bytes[r])) + ", outside 0..9");
      }
    }
    all += bytes;
  }
  const int64_t n = static_cast<int64_t>(all.size()) / kRecord;
  torch::Tensor records =
      torch::from_blob(all.data(), {n, kRecord}, torch::kUInt8);
  torch::Tensor pixels = records.narrow(1, 1, kPixels).clone();
  torch::Tensor labels = records.select(1, 0).to(torch::kInt64);
  return std::unique_ptr<Cifar10>(
      new Cifar10(split, options.seed, std::move(pixels), std::move(labels)));
}

Cifar10::Cifar10(Split split, uint64_t seed, torch::Tensor pixels,
                 torch::Tensor labels)
    : split_(split),
      seed_(seed),
      pixels_(std::move(pixels)),
      labels_(std::move(labels)) {}

int64_t Cifar10::size() const {
  return labels_.size(0);
}

SourceShape Cifar10::shape() const {
  return {3, kSide, kSide, 10};
}

Batch Cifar10::Get(const torch::Tensor& indices, int64_t epoch) const {
  const torch::Tensor idx = internal::CheckedIndices(indices, size());
  const int64_t b = idx.size(0);
  Batch batch;
  batch.images = torch::empty({b, 3, kSide, kSide}, torch::kFloat32);
  batch.labels = labels_.index_select(0, idx);
  const int64_t* ids = idx.data_ptr<int64_t>();
  const uint8_t* pixels = pixels_.data_ptr<uint8_t>();
  float* out = batch.images.data_ptr<float>();
  for (int64_t j = 0; j < b; ++j) {
    const int64_t i = ids[j];
    CropBox box{kPadding, kPadding, kSide, kSide};  // the unpadded image
    bool flip = false;
    if (split_ == Split::kTrain) {
      at::Generator gen = SampleGenerator(seed_, epoch, i);
      box = RandomPaddedCropBox(kSide, kPadding, gen);
      flip = RandomFlip(gen);
    }
    PaddedCrop(pixels + i * kPixels, kSide, kPadding, box, flip,
               kCifar10Normalization, out + j * kPixels);
  }
  return batch;
}

}  // namespace pstrain::data
