#include "bench/machine_info.h"

#include <gtest/gtest.h>
#include <torch/version.h>

#include "wire/frame.h"

namespace pstrain::bench {
namespace {

TEST(BenchMachineInfoTest, DescribesThisMachine) {
  nlohmann::json m = MachineInfo();
  ASSERT_TRUE(m["cores"].is_number_integer()) << m;
  EXPECT_GE(m["cores"].get<int>(), 1);
  // At least 64 MiB and at most 1 PiB: a value in bytes, not in kB.
  EXPECT_GT(m["memory_bytes"].get<uint64_t>(), uint64_t{64} << 20) << m;
  EXPECT_LT(m["memory_bytes"].get<uint64_t>(), uint64_t{1} << 50) << m;
  EXPECT_TRUE(m["cpu_model"].is_string()) << m;
  EXPECT_EQ(m["kernel"].get<std::string>().rfind("Linux ", 0), 0u) << m;
}

TEST(BenchMachineInfoTest, DescribesThisBuild) {
  nlohmann::json b = BuildInfo();
  std::string version = b["pstrain_version"].get<std::string>();
  EXPECT_FALSE(version.empty());
  EXPECT_NE(version, "unknown");
  EXPECT_EQ(b["protocol_version"].get<int>(), wire::kWireVersion);
  EXPECT_FALSE(b["compiler"].get<std::string>().empty());
  EXPECT_TRUE(b["build_type"].is_string());
  EXPECT_TRUE(b["cxx_flags"].is_string());
  EXPECT_EQ(b["libtorch_version"], TORCH_VERSION);
  EXPECT_TRUE(b["cuda_available"].is_boolean());
  // Debian's libtorch links the system BLAS; PyTorch's own builds carry
  // theirs inside and map none.
  std::string blas = b["blas"].get<std::string>();
  if (blas.empty()) {
    EXPECT_EQ(b["blas_kind"], "none") << b;
  } else {
    EXPECT_EQ(blas.front(), '/') << b;
    EXPECT_NE(blas.find("blas"), std::string::npos) << b;
    EXPECT_NE(b["blas_kind"], "none") << b;
  }
}

TEST(BenchMachineInfoTest, DocumentCarriesSchemaMachineAndBuild) {
  nlohmann::json d = BenchDocument();
  EXPECT_EQ(d["schema"], "pstrain.bench/1");
  EXPECT_TRUE(d["machine"].is_object());
  EXPECT_TRUE(d["build"].is_object());
}

}  // namespace
}  // namespace pstrain::bench
