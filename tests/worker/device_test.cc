// --device: the CPU, a GPU by index, and one line naming the flag and the
// count of GPUs seen when libtorch has no such GPU.

#include "worker/device.h"

#include <string>

#include <gtest/gtest.h>
#include <torch/cuda.h>

namespace pstrain::worker {
namespace {

std::string Error(const std::string& device) {
  auto parsed = ParseDevice(device);
  return parsed.ok() ? "" : parsed.status().message();
}

TEST(DeviceTest, CpuIsTheCpu) {
  auto parsed = ParseDevice("cpu");
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->is_cpu());
}

TEST(DeviceTest, OtherNamesAreRefused) {
  for (const std::string bad :
       {"gpu", "cuda:", "cuda:x", "cuda:-1", "CUDA", "cuda:123", "cpu:0"}) {
    EXPECT_EQ(Error(bad),
              "--device '" + bad + "': expected cpu, cuda or cuda:i");
  }
}

TEST(DeviceTest, AGpuTheMachineLacksIsRefusedWithTheCountSeen) {
  const auto seen = torch::cuda::is_available()
                        ? static_cast<int64_t>(torch::cuda::device_count())
                        : 0;
  const std::string beyond = "cuda:" + std::to_string(seen);
  if (seen == 0) {
    EXPECT_EQ(Error(beyond),
              "--device cuda:0: this libtorch has no CUDA, or no GPU is "
              "visible (it sees 0 GPUs)");
    EXPECT_EQ(Error("cuda"),
              "--device cuda: this libtorch has no CUDA, or no GPU is "
              "visible (it sees 0 GPUs)");
    return;
  }
  EXPECT_EQ(Error(beyond), "--device " + beyond + ": this machine has " +
                               std::to_string(seen) + " CUDA GPU" +
                               (seen == 1 ? "" : "s"));
  auto last = ParseDevice("cuda:" + std::to_string(seen - 1));
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->index(), seen - 1);
}

}  // namespace
}  // namespace pstrain::worker
