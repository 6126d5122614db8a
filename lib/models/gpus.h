#pragma once
// Whether this libtorch sees the CUDA GPUs a flag asks for (--num_gpus,
// --device cuda:i). A free function; thread-safe.

#include <cstdint>
#include <string>

#include "util/status.h"

namespace pstrain::models {

/// Ok when libtorch has CUDA and sees at least `count` GPUs. Otherwise
/// kInvalidArgument, `flag` first, with the count it sees: "--num_gpus 2:
/// this machine has 1 CUDA GPU", or "--device cuda: this libtorch has no
/// CUDA, or no GPU is visible (it sees 0 GPUs)".
Status RequireGpus(const std::string& flag, int64_t count);

}  // namespace pstrain::models
