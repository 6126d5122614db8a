#pragma once
// Helpers shared by the Source implementations (image_folder.cc,
// cifar10.cc, source.cc). Internal to lib/data.

#include <cstdint>
#include <string>

#include <torch/types.h>

#include "util/status.h"

namespace pstrain::data::internal {

/// PS_CHECKs that `indices` is int64, 1-D, each in [0, size); returns it
/// contiguous.
torch::Tensor CheckedIndices(const torch::Tensor& indices, int64_t size);

/// "DIR/NAME", without doubling a trailing '/'.
std::string JoinPath(const std::string& dir, const std::string& name);

/// The default report of a corrupt file: one line on stderr,
/// "pstrain: skipping corrupt image PATH: reason".
void LogCorrupt(const Status& why);

}  // namespace pstrain::data::internal
