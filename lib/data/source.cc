#include "data/source.h"

#include <cstdio>
#include <utility>

#include "data/cifar10.h"
#include "data/image_folder.h"
#include "data/source_util.h"
#include "data/tensor_file.h"
#include "util/check.h"

namespace pstrain::data {
namespace internal {

torch::Tensor CheckedIndices(const torch::Tensor& indices, int64_t size) {
  PS_CHECK(indices.defined() && indices.scalar_type() == torch::kInt64 &&
           indices.dim() == 1)
      << "indices must be int64 [b]";
  torch::Tensor idx = indices.contiguous();
  if (idx.numel() > 0) {
    PS_CHECK(idx.min().item<int64_t>() >= 0 && idx.max().item<int64_t>() < size)
        << "index out of range [0, " << size << ")";
  }
  return idx;
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

void LogCorrupt(const Status& why) {
  const std::string line =
      "pstrain: skipping corrupt image " + why.message() + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);  // one write per line
}

}  // namespace internal

namespace {

// fashion-mnist and mnist: LoadDataset's in-memory Dataset; Get is
// GetBatch (no augmentation, nothing skipped).
class IdxSource : public Source {
 public:
  explicit IdxSource(Dataset dataset) : dataset_(std::move(dataset)) {}
  int64_t size() const override { return dataset_.size(); }
  SourceShape shape() const override { return {1, 28, 28, 10}; }
  Batch Get(const torch::Tensor& indices, int64_t) const override {
    return GetBatch(dataset_, indices);
  }

 private:
  Dataset dataset_;
};

}  // namespace

std::vector<std::string> SourceNames() {
  std::vector<std::string> names = DatasetNames();
  names.emplace_back("cifar10");
  names.emplace_back("imagefolder");
  names.emplace_back("tensors");
  return names;
}

Result<std::unique_ptr<Source>> OpenSource(const SourceOptions& options,
                                           Split split) {
  if (options.dataset == "imagefolder") {
    PS_ASSIGN_OR_RETURN(std::unique_ptr<ImageFolder> folder,
                        ImageFolder::Open(options, split));
    return std::unique_ptr<Source>(std::move(folder));
  }
  if (options.dataset == "tensors") {
    PS_ASSIGN_OR_RETURN(std::unique_ptr<TensorFile> tensors,
                        TensorFile::Open(options, split));
    return std::unique_ptr<Source>(std::move(tensors));
  }
  if (options.dataset == "cifar10") {
    PS_ASSIGN_OR_RETURN(std::unique_ptr<Cifar10> cifar,
                        Cifar10::Open(options, split));
    return std::unique_ptr<Source>(std::move(cifar));
  }
  for (const std::string& name : DatasetNames()) {
    if (options.dataset == name) {
      PS_ASSIGN_OR_RETURN(Dataset dataset,
                          LoadDataset(name, options.data_dir, split));
      return std::unique_ptr<Source>(new IdxSource(std::move(dataset)));
    }
  }
  std::string names;
  for (const std::string& name : SourceNames())
    names += (names.empty() ? "" : ", ") + name;
  return InvalidArgument("unknown data set '" + options.dataset +
                         "'; expected one of: " + names);
}

}  // namespace pstrain::data
