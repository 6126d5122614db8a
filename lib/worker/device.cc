#include "worker/device.h"

#include <torch/cuda.h>

namespace pstrain::worker {

Result<torch::Device> ParseDevice(const std::string& device) {
  if (device == "cpu")
    return torch::Device(torch::kCPU);
  if (device == "cuda") {
    if (!torch::cuda::is_available()) {
      return InvalidArgument(
          "--device cuda: this libtorch has no CUDA or sees no GPU");
    }
    return torch::Device(torch::kCUDA);
  }
  return InvalidArgument("--device '" + device + "': expected cpu or cuda");
}

}  // namespace pstrain::worker
