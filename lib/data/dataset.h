#pragma once
// Data sets by name, loaded whole into memory from IDX files, and batches
// cut from them. Stateless functions; thread-safe. A Dataset is a value
// (copies share the tensors; nothing here writes to them).

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "util/result.h"

namespace pstrain::data {

enum class Split { kTrain, kTest };

struct Dataset {
  /// float32 [N,1,28,28], CPU, contiguous: (pixel/255 - mean) / std with the
  /// data set's own mean and std.
  torch::Tensor images;
  /// int64 [N], CPU, values 0..9.
  torch::Tensor labels;

  /// N; 0 for a default-constructed Dataset.
  int64_t size() const;
};

/// Rows of a Dataset picked by GetBatch.
struct Batch {
  /// float32 [b, C, H, W]: [b,1,28,28] from GetBatch; Source::shape() says.
  /// A `tensors` data set's are float32 [b, ...], any shape (TensorFile).
  torch::Tensor images;
  /// int64 [b], class labels; a `tensors` data set's may instead be float32
  /// [b, ...], regression targets (TensorFile::y_is_float()).
  torch::Tensor labels;
  /// Samples asked for but left out because they could not be decoded
  /// (Source::Get).
  int64_t skipped = 0;
};

/// Data sets by name: "fashion-mnist" (mean 0.2860, std 0.3530) and
/// "mnist" (mean 0.1307, std 0.3081). The first is the default.
std::vector<std::string> DatasetNames();

/// Where Debian puts a data set: "/usr/share/datasets/fashion-mnist"
/// (package dataset-fashion-mnist), "/usr/share/datasets/mnist" for mnist;
/// "" for an unknown name.
std::string DefaultDataDir(const std::string& dataset);

/// Debian package that provides the data set ("dataset-fashion-mnist"), or
/// "" when there is none.
std::string DatasetPackage(const std::string& dataset);

/// Loads train-images-idx3-ubyte / train-labels-idx1-ubyte (t10k-... for
/// kTest) from `data_dir` ("" means DefaultDataDir(name)), trying each
/// plain name and then "<name>.gz".
/// Errors: kInvalidArgument listing the names for an unknown `name`;
/// kNotFound "<dir>/<file>[.gz] not found; install Debian's package
/// dataset-fashion-mnist or pass --data_dir" (for mnist just "pass
/// --data_dir") for a missing directory or file; kCorruption naming the file
/// for a bad IDX file, images that are not 28x28, a label count that differs
/// from the image count, or a label outside 0..9; kIOError on a read error.
Result<Dataset> LoadDataset(const std::string& name,
                            const std::string& data_dir, Split split);

/// The rows of `dataset` at `indices` (int64 [b], each in [0, size())).
/// Returns images float32 [b,1,28,28] and labels int64 [b], fresh tensors.
/// REQUIRES: indices int64, 1-D, in range (PS_CHECK).
Batch GetBatch(const Dataset& dataset, const torch::Tensor& indices);

}  // namespace pstrain::data
