#include "models/gpus.h"

#include <torch/cuda.h>

namespace pstrain::models {

Status RequireGpus(const std::string& flag, int64_t count) {
  if (!torch::cuda::is_available()) {
    return InvalidArgument(flag +
                           ": this libtorch has no CUDA, or no GPU is visible "
                           "(it sees " +
                           std::to_string(torch::cuda::device_count()) +
                           " GPUs)");
  }
  const auto seen = static_cast<int64_t>(torch::cuda::device_count());
  if (seen < count) {
    return InvalidArgument(flag + ": this machine has " + std::to_string(seen) +
                           " CUDA GPU" + (seen == 1 ? "" : "s"));
  }
  return Status::Ok();
}

}  // namespace pstrain::models
