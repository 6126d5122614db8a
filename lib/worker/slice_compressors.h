#pragma once
// SliceCompressors: a worker's --compression over all its servers: each
// server's PushCompressor of the slices it holds (none when every slice of
// it travels raw), and, by model key, the (server, slice) pairs a key's
// gradient was cut into, so that the moment backward makes a key's
// gradient final (GradStream's prepare) every slice of it is coded, on
// whichever server it goes to. Threading: Plan and Make on the training
// thread between exchanges; Prepare from GradStream's prepare, on
// different keys at once (PushCompressor::Compress allows it).

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/job/compression_spec.h"
#include "ps/job/shard_plan.h"
#include "worker/push_compressor.h"

namespace pstrain::worker {

class SliceCompressors {
 public:
  /// Codes by `spec` from now on the slices of `plan` of its `keys` model
  /// keys; a server keeps the compressor Make gave it before.
  void Plan(const ps::CompressionSpec& spec, const ps::ShardPlan& plan,
            size_t keys);
  /// The job's compression, as Plan took it. Default: all raw.
  const ps::CompressionSpec& spec() const { return spec_; }
  /// Whether pushes may carry records (spec().push not raw): only then has
  /// Prepare work to do.
  bool codes() const { return spec_.push != wire::Codec::kRaw; }

  /// Server `s`'s compressor: PushCompressor::ForSlices of its slices'
  /// gradients `grads` with `trained`, `sparse` (by slice) and `seed`;
  /// replaces the one before. REQUIRES: s < plan.num_servers.
  void Make(int s, std::vector<at::Tensor> grads,
            const std::vector<bool>& trained, const std::vector<bool>& sparse,
            uint64_t seed);
  /// Server `s`'s compressor; nullptr before Make or when all its slices
  /// are raw. Owned here; valid until the next Make of `s`.
  PushCompressor* of(int s) const { return compressors_[s].get(); }
  /// Codes every slice of model key `model_key` now (PushCompressor::
  /// Compress), on each server that has a compressor.
  void Prepare(int model_key);

 private:
  ps::CompressionSpec spec_;
  std::vector<std::unique_ptr<PushCompressor>> compressors_;  // by server
  // By model key: its (server, slice) pairs, the slice an index among the
  // server's.
  std::vector<std::vector<std::pair<int, int>>> slices_of_key_;
};

}  // namespace pstrain::worker
