#pragma once
// `pstrain bench data`: how fast a data set's samples are read, decoded and
// transformed on this machine, per thread. The limit beside it, measured in
// the same run, is the rate of reading the same files' bytes (from the page
// cache after a first pass). Image folders report four phases: read, decode
// (full size, from memory), train (Source::Get of the train split through a
// BatchLoader: read + decode with DCT scaling + RandomResizedCrop + flip +
// normalize) and eval (Resize + CenterCrop); other data sets only train and
// eval. Not thread-safe: it sets libtorch's intra-op thread count to 1 so
// that every figure is the work of `threads` threads.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace pstrain::bench {

struct DataBenchOptions {
  /// A name of data::SourceNames(). Default: "imagefolder".
  std::string dataset = "imagefolder";
  /// As data::SourceOptions::data_dir.
  std::string data_dir;
  /// Side of the square crop, pixels (imagefolder). Default: 224.
  int64_t image_size = 224;
  /// Threads that read and transform (BatchLoader threads). Default: 1.
  int threads = 1;
  /// How long each phase runs, seconds, when `samples` is 0. Default: 3.
  double seconds = 3;
  /// Samples each phase processes instead of a time limit; 0: use seconds.
  int64_t samples = 0;
  /// Distinct files the read and decode phases cycle over (at most the
  /// split's size). Default: 256.
  int64_t files = 256;
};

/// {"dataset", "data_dir", "image_size", "threads", "files" (distinct files
/// read and decoded), "mean_file_bytes", then one object per phase,
/// "read" (imagefolder only; the limit), "decode" (imagefolder only),
/// "train", "eval": {"images", "seconds", "images_per_second",
/// "images_per_second_per_thread", "bytes_per_second" (read only),
/// "skipped" (train and eval)}, and "train_over_decode" (the train rate over
/// the decode rate; imagefolder only)}.
/// Errors: kInvalidArgument for threads < 1, seconds <= 0 with samples 0,
/// samples < 0 or files < 1; the data set's own errors (OpenSource); the
/// first file that fails to read or decode in the decode phase.
Result<nlohmann::json> RunDataBench(const DataBenchOptions& options);

}  // namespace pstrain::bench
