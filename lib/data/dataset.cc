#include "data/dataset.h"

#include <torch/torch.h>

#include "data/idx_file.h"
#include "util/check.h"

namespace pstrain::data {
namespace {

constexpr int64_t kImageSide = 28;
constexpr int64_t kNumClasses = 10;

struct DatasetSpec {
  const char* name;
  double mean;
  double std;
  const char* default_dir;
  const char* package;  // "" when Debian has none
};

constexpr DatasetSpec kDatasets[] = {
    {"fashion-mnist", 0.2860, 0.3530, "/usr/share/datasets/fashion-mnist",
     "dataset-fashion-mnist"},
    {"mnist", 0.1307, 0.3081, "/usr/share/datasets/mnist", ""},
};

const DatasetSpec* FindSpec(const std::string& name) {
  for (const DatasetSpec& spec : kDatasets) {
    if (name == spec.name)
      return &spec;
  }
  return nullptr;
}

std::string JoinPath(const std::string& dir, const std::string& file) {
  if (dir.empty())
    return file;
  if (dir.back() == '/')
    return dir + file;
  return dir + "/" + file;
}

std::string InstallHint(const DatasetSpec& spec) {
  if (*spec.package == '\0')
    return "pass --data_dir";
  return std::string("install Debian's package ") + spec.package +
         " or pass --data_dir";
}

/// Reads `<dir>/<file>`, else `<dir>/<file>.gz`; stores the path it read.
Result<torch::Tensor> ReadPlainOrGz(const DatasetSpec& spec,
                                    const std::string& dir,
                                    const std::string& file, IdxKind kind,
                                    std::string* path) {
  *path = JoinPath(dir, file);
  Result<torch::Tensor> plain = ReadIdxFile(*path, kind);
  if (plain.ok() || plain.status().code() != StatusCode::kNotFound) {
    return plain;
  }
  std::string gz_path = *path + ".gz";
  Result<torch::Tensor> gz = ReadIdxFile(gz_path, kind);
  if (gz.ok() || gz.status().code() != StatusCode::kNotFound) {
    *path = gz_path;
    return gz;
  }
  return NotFound(*path + "[.gz] not found; " + InstallHint(spec));
}

/// Checks the shapes and values of raw uint8 images [N,28,28] and labels [N].
Status Validate(const torch::Tensor& images, const std::string& images_path,
                const torch::Tensor& labels, const std::string& labels_path) {
  if (images.size(1) != kImageSide || images.size(2) != kImageSide) {
    return Corruption(images_path + ": images are " +
                      std::to_string(images.size(1)) + "x" +
                      std::to_string(images.size(2)) + ", expected 28x28");
  }
  if (labels.size(0) != images.size(0)) {
    return Corruption(labels_path + ": " + std::to_string(labels.size(0)) +
                      " labels, but " + images_path + " holds " +
                      std::to_string(images.size(0)) + " images");
  }
  if (labels.numel() > 0) {
    int64_t max_label = labels.max().item<int64_t>();
    if (max_label >= kNumClasses) {
      return Corruption(labels_path + ": label " + std::to_string(max_label) +
                        " is outside 0..9");
    }
  }
  return Status::Ok();
}

torch::Tensor Normalize(const torch::Tensor& images, const DatasetSpec& spec) {
  return images.to(torch::kFloat32)
      .div_(255.0)
      .sub_(spec.mean)
      .div_(spec.std)
      .unsqueeze(1)
      .contiguous();
}

std::string UnknownDataset(const std::string& name) {
  std::string names;
  for (const DatasetSpec& spec : kDatasets) {
    if (!names.empty())
      names += ", ";
    names += spec.name;
  }
  return "unknown data set '" + name + "'; expected one of: " + names;
}

}  // namespace

int64_t Dataset::size() const {
  return labels.defined() ? labels.size(0) : 0;
}

std::vector<std::string> DatasetNames() {
  std::vector<std::string> names;
  for (const DatasetSpec& spec : kDatasets)
    names.emplace_back(spec.name);
  return names;
}

std::string DefaultDataDir(const std::string& dataset) {
  const DatasetSpec* spec = FindSpec(dataset);
  return spec == nullptr ? "" : spec->default_dir;
}

std::string DatasetPackage(const std::string& dataset) {
  const DatasetSpec* spec = FindSpec(dataset);
  return spec == nullptr ? "" : spec->package;
}

Result<Dataset> LoadDataset(const std::string& name,
                            const std::string& data_dir, Split split) {
  const DatasetSpec* spec = FindSpec(name);
  if (spec == nullptr)
    return InvalidArgument(UnknownDataset(name));
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  const std::string dir = data_dir.empty() ? spec->default_dir : data_dir;
  std::string images_path;
  std::string labels_path;
  PS_ASSIGN_OR_RETURN(torch::Tensor images,
                      ReadPlainOrGz(*spec, dir, prefix + "-images-idx3-ubyte",
                                    IdxKind::kImages, &images_path));
  PS_ASSIGN_OR_RETURN(torch::Tensor labels,
                      ReadPlainOrGz(*spec, dir, prefix + "-labels-idx1-ubyte",
                                    IdxKind::kLabels, &labels_path));
  PS_RETURN_IF_ERROR(Validate(images, images_path, labels, labels_path));
  Dataset dataset;
  dataset.images = Normalize(images, *spec);
  dataset.labels = labels.to(torch::kInt64);
  return dataset;
}

Batch GetBatch(const Dataset& dataset, const torch::Tensor& indices) {
  PS_CHECK(indices.scalar_type() == torch::kInt64 && indices.dim() == 1)
      << "indices must be int64 [b], got " << indices.scalar_type() << " "
      << indices.sizes();
  if (indices.numel() > 0) {
    PS_CHECK(indices.min().item<int64_t>() >= 0 &&
             indices.max().item<int64_t>() < dataset.size())
        << "indices out of range [0, " << dataset.size() << ")";
  }
  return Batch{dataset.images.index_select(0, indices),
               dataset.labels.index_select(0, indices)};
}

}  // namespace pstrain::data
