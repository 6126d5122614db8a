#pragma once
// The --device flag of a worker. A free function; thread-safe.

#include <string>

#include <torch/types.h>

#include "util/result.h"

namespace pstrain::worker {

/// "cpu"; "cuda" (cuda:0) or "cuda:i", where this libtorch has CUDA and
/// sees GPU i. kInvalidArgument naming the flag otherwise, with the count
/// of GPUs seen: "--device cuda:1: this machine has 1 CUDA GPU".
Result<torch::Device> ParseDevice(const std::string& device);

}  // namespace pstrain::worker
