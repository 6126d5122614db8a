#pragma once
// Cifar10: the binary version of CIFAR-10 (cifar-10-binary.tar.gz), held in
// memory as uint8: data_batch_1.bin .. data_batch_5.bin (Split::kTrain,
// 50,000 images) or test_batch.bin (Split::kTest, 10,000), records of one
// label byte and 3072 pixel bytes (32x32, R plane, G plane, B plane). The
// files may also sit in DIR/cifar-10-batches-bin/, as the archive unpacks.
// Get normalizes with kCifar10Normalization (data/transforms.h); the train
// split first takes RandomCrop(32, padding=4) and RandomHorizontalFlip(0.5),
// drawn per sample as SourceOptions::seed says. Immutable after Open;
// thread-safe.

#include <cstdint>
#include <memory>
#include <string>

#include <torch/types.h>

#include "data/source.h"

namespace pstrain::data {

class Cifar10 : public Source {
 public:
  /// Errors, one line naming the path: kInvalidArgument for an empty
  /// data_dir ("cifar10 needs --data_dir (the CIFAR-10 binary version)");
  /// kNotFound for a missing file; kCorruption for a file whose size is not
  /// a whole number of 3073-byte records, or a label outside 0..9;
  /// kIOError on a read error.
  static Result<std::unique_ptr<Cifar10>> Open(const SourceOptions& options,
                                               Split split);

  Cifar10(const Cifar10&) = delete;
  Cifar10& operator=(const Cifar10&) = delete;

  int64_t size() const override;
  /// {3, 32, 32, 10}.
  SourceShape shape() const override;
  /// Images float32 [b, 3, 32, 32], labels int64 [b]; never skips.
  Batch Get(const torch::Tensor& indices, int64_t epoch) const override;

 private:
  Cifar10(Split split, uint64_t seed, torch::Tensor pixels,
          torch::Tensor labels);

  Split split_;
  uint64_t seed_;
  torch::Tensor pixels_;  // uint8 [N, 3072], CHW per row
  torch::Tensor labels_;  // int64 [N]
};

}  // namespace pstrain::data
