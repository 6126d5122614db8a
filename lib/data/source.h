#pragma once
// Source: one split of a data set, read sample by sample. The IDX sets
// (fashion-mnist, mnist) and the user's tensors (data/tensor_file.h) are
// held whole in memory; image folders and CIFAR-10 are read and augmented
// per batch, so a worker holds only its file list. Every Source is
// thread-safe: Get may run on several threads at once
// (data/batch_loader.h).

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "data/dataset.h"
#include "util/result.h"

namespace pstrain::data {

/// What OpenSource reads.
struct SourceOptions {
  /// "fashion-mnist", "mnist", "cifar10", "imagefolder" or "tensors"
  /// (SourceNames()).
  std::string dataset = "fashion-mnist";
  /// "" means DefaultDataDir(dataset); cifar10, imagefolder and tensors
  /// require one.
  std::string data_dir;
  /// imagefolder: the side of the square crop a batch holds, pixels
  /// (--image_size). Other data sets have their own fixed size.
  int64_t image_size = 224;
  /// Seeds augmentation: sample i of epoch e is transformed with draws from
  /// a generator seeded by (seed, e, i) alone, so a run repeats exactly
  /// whichever thread or worker reads it.
  uint64_t seed = 1;
  /// Called once per file that cannot be read or decoded, the first time
  /// that Get meets it, with the Status saying why ("PATH: reason"). It runs
  /// on the thread that calls Get (a BatchLoader's), so it must be
  /// thread-safe. Default (empty): one line on stderr, "pstrain: skipping
  /// corrupt image PATH: reason".
  std::function<void(const Status&)> on_corrupt;
};

/// The shape of what a Source yields.
struct SourceShape {
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  int64_t num_classes = 10;
};

class Source {
 public:
  virtual ~Source() = default;

  /// Samples in the split (N), corrupt files included.
  virtual int64_t size() const = 0;
  virtual SourceShape shape() const = 0;

  /// The samples at `indices` (int64 [b], each in [0, size())), in order,
  /// as images float32 [b', C, H, W] (normalized) and labels int64 [b'];
  /// a `tensors` data set's images are float32 [b, ...], any shape, and its
  /// labels may be float32 [b, ...] (regression targets; TensorFile).
  /// The train split augments (seeded as SourceOptions::seed says, with
  /// `epoch`); the test split does not. A sample that cannot be decoded is
  /// left out (b' < b), logged once with its path, and counted in
  /// Batch::skipped. Thread-safe.
  /// REQUIRES: indices int64, 1-D, in range (PS_CHECK).
  virtual Batch Get(const torch::Tensor& indices, int64_t epoch) const = 0;
};

/// Names OpenSource accepts, default first: fashion-mnist, mnist, cifar10,
/// imagefolder, tensors.
std::vector<std::string> SourceNames();

/// Opens `split` of the data set. Errors (each one line naming the path):
/// kInvalidArgument for an unknown name, or cifar10, imagefolder or tensors
/// without a data_dir; kNotFound for a missing folder or file; kCorruption
/// for a folder with no class subfolders, classes that differ between train
/// and val, or a bad IDX/CIFAR/tensors file.
Result<std::unique_ptr<Source>> OpenSource(const SourceOptions& options,
                                           Split split);

}  // namespace pstrain::data
