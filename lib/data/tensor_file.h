#pragma once
// TensorFile: a data set the user brings as tensors, written by Python's
// torch.save({"x": X, "y": Y}, "DIR/train.pt") (Split::kTrain) or
// "DIR/test.pt" (Split::kTest), in torch.save's zip format (PyTorch 1.6 and
// later; not _use_new_zipfile_serialization=False). Tensors saved on a GPU
// are read onto the CPU. Keys other than "x" and "y" are ignored.
//
//   X: [N, ...], at least 1-D (1-D X is one feature per sample), any
//      floating dtype (float16, bfloat16, float32, float64); held as float32.
//   Y: int64 [N], class labels each >= 0; or floating [N, ...], regression
//      targets, held as float32.
//
// Both are held whole in memory, contiguous, converted once by Open. Get
// returns rows of them as they are: no normalization, no augmentation (the
// split and the epoch change nothing). Immutable after Open; thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "data/source.h"

namespace pstrain::data {

class TensorFile : public Source {
 public:
  /// Reads <data_dir>/train.pt or <data_dir>/test.pt. Errors, each one line
  /// naming the file and what was expected:
  /// kInvalidArgument for an empty data_dir;
  /// kNotFound for a missing file; kIOError for one that cannot be opened;
  /// kCorruption for a file torch.save did not write ("PATH: not a
  /// torch.save file: " and the first line of libtorch's reason, a byte
  /// outside printable ASCII as "\xNN"), one that holds no dict, a
  /// dict without an "x" or a "y" tensor, X not floating or 0-D, Y neither
  /// int64 [N] nor floating [N, ...], X and Y of different N, or a negative
  /// label. Never aborts on the file's content.
  static Result<std::unique_ptr<TensorFile>> Open(const SourceOptions& options,
                                                  Split split);

  TensorFile(const TensorFile&) = delete;
  TensorFile& operator=(const TensorFile&) = delete;

  /// N.
  int64_t size() const override;
  /// X [N, C, H, W] gives {C, H, W}; X of any other rank gives channels =
  /// the product of x_shape() (1 for 1-D X) and height = width = 1.
  /// num_classes: max(Y) + 1 for int64 Y (0 when N == 0); 0 for float Y.
  SourceShape shape() const override;
  /// images: float32 [b, x_shape()...], the rows of X at `indices`.
  /// labels: the rows of Y: int64 [b], or float32 [b, y_shape()...] when
  /// y_is_float(). `epoch` is unused; skipped is 0.
  /// REQUIRES: indices int64, 1-D, each in [0, size()) (PS_CHECK).
  Batch Get(const torch::Tensor& indices, int64_t epoch) const override;

  /// One sample's shape in X: X's sizes after N ({5} for X [N, 5], {} for
  /// 1-D X).
  std::vector<int64_t> x_shape() const;
  /// One sample's shape in Y: {} for Y [N]; {3} for float Y [N, 3].
  std::vector<int64_t> y_shape() const;
  /// Whether Y holds float32 regression targets rather than int64 labels.
  bool y_is_float() const;

 private:
  TensorFile(torch::Tensor x, torch::Tensor y, int64_t num_classes);

  torch::Tensor x_;  // float32 [N, ...], contiguous
  torch::Tensor y_;  // int64 [N] or float32 [N, ...], contiguous
  int64_t num_classes_;
};

}  // namespace pstrain::data
