#pragma once
// BatchLoader: reads a Source's batches on threads of its own, ahead of the
// step that needs them, in a bounded queue (at most `depth` batches read and
// not taken), the way torch.utils.data.DataLoader's num_workers and
// prefetch_factor do. Request and Take are called by one thread (the
// trainer's); the loader's threads only call Source::Get.

#include <cstdint>
#include <memory>

#include <torch/types.h>

#include "data/dataset.h"
#include "data/source.h"

namespace pstrain::data {

class BatchLoader {
 public:
  /// `source` must outlive the loader. REQUIRES: threads >= 1, depth >= 1.
  BatchLoader(const Source& source, int threads, int depth);
  /// Stops the threads; batches not taken are dropped.
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  /// Queues the batch of `indices` (int64 [b]) at `epoch`, tagged `tag` (the
  /// caller's step number). Blocks while `depth` requests are not taken.
  void Request(int64_t tag, torch::Tensor indices, int64_t epoch);

  /// Requests not taken yet.
  int pending() const;

  /// The tag of the oldest request not taken; -1 when none.
  int64_t front_tag() const;

  /// The oldest request's batch, once read (waits for it).
  /// REQUIRES: pending() > 0.
  Batch Take();

  /// Drops every request not taken (the steps to compute changed).
  void Clear();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pstrain::data
