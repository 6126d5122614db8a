#include "worker/device.h"

#include <cstdint>

#include <torch/cuda.h>

namespace pstrain::worker {

namespace {

// i of "cuda:i" (digits only), or -1.
int64_t CudaIndex(const std::string& device) {
  const std::string prefix = "cuda:";
  if (device.rfind(prefix, 0) != 0 || device.size() == prefix.size() ||
      device.size() > prefix.size() + 2)
    return -1;
  int64_t i = 0;
  for (size_t c = prefix.size(); c < device.size(); ++c) {
    if (device[c] < '0' || device[c] > '9')
      return -1;
    i = i * 10 + (device[c] - '0');
  }
  return i;
}

}  // namespace

Result<torch::Device> ParseDevice(const std::string& device) {
  if (device == "cpu")
    return torch::Device(torch::kCPU);
  const int64_t index = device == "cuda" ? 0 : CudaIndex(device);
  if (index < 0) {
    return InvalidArgument("--device '" + device +
                           "': expected cpu, cuda or cuda:i");
  }
  const std::string flag = "--device " + device + ": ";
  if (!torch::cuda::is_available()) {
    return InvalidArgument(flag +
                           "this libtorch has no CUDA, or no GPU is visible "
                           "(it sees 0 GPUs)");
  }
  const auto seen = static_cast<int64_t>(torch::cuda::device_count());
  if (index >= seen) {
    return InvalidArgument(flag + "this machine has " + std::to_string(seen) +
                           " CUDA GPU" + (seen == 1 ? "" : "s"));
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace pstrain::worker
