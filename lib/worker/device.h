#pragma once
// The --device flag of a worker. A free function; thread-safe.

#include <string>

#include <torch/types.h>

#include "util/result.h"

namespace pstrain::worker {

/// "cpu", or "cuda" where this libtorch has CUDA and sees a GPU.
/// kInvalidArgument naming the flag otherwise.
Result<torch::Device> ParseDevice(const std::string& device);

}  // namespace pstrain::worker
