#include "worker/device.h"

#include <cstdint>

#include "models/gpus.h"

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
  PS_RETURN_IF_ERROR(models::RequireGpus("--device " + device, index + 1));
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace pstrain::worker
