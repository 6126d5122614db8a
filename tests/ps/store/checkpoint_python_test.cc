// A process test: Python's torch.load (Debian's python3-torch) reads the
// checkpoints pstrain writes.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/model_zoo.h"
#include "ps/store/checkpoint.h"
#include "testing/idx_files.h"
#include "testing/process.h"

namespace pstrain::ps {
namespace {

using data::testing::ScratchDir;

// Python's torch.load (Debian's python3-torch) reads the state_dict.
TEST(CheckpointPythonTest, TorchLoadReadsNamesAndShapes) {
  ScratchDir dir;
  auto model = models::MakeModel("net");
  ASSERT_TRUE(model.ok());
  NamedTensors t;
  std::string expected = "{";
  for (const auto& item : (*model)->named_parameters()) {
    t.emplace_back(item.key(), item.value());
    expected += std::string(expected.size() > 1 ? ", " : "") + "\"" +
                item.key() + "\": " + c10::str(item.value().sizes()).substr(0);
  }
  expected += "}";
  const std::string path = dir.File("net.pt");
  ASSERT_TRUE(SaveCheckpoint(path, t, {}).ok());
  auto r = pstrain::testing::Process(
               {"/usr/bin/python3", "-c",
                "import json, sys, torch; d = torch.load(sys.argv[1]); "
                "print(json.dumps({k: list(v.shape) for k, v in d.items()}))",
                path})
               .Wait(120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // c10 prints sizes as [a, b]; json.dumps prints lists the same way.
  EXPECT_EQ(r.out, expected + "\n");
}

}  // namespace
}  // namespace pstrain::ps
