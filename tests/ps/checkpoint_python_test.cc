// A process test: Python's torch.load (Debian's python3-torch) reads the
// checkpoints pstrain writes.

#include <cstdio>
#include <memory>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/model_zoo.h"
#include "ps/checkpoint.h"
#include "testing/idx_files.h"

namespace pstrain::ps {
namespace {

using data::testing::ScratchDir;

// Python's torch.load (Debian's python3-torch) reads the state_dict.
TEST(CheckpointTest, PythonTorchLoadReadsNamesAndShapes) {
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
  const std::string cmd =
      "/usr/bin/python3 -c \"import json, torch; d = torch.load('" + path +
      "'); print(json.dumps({k: list(v.shape) for k, v in d.items()}))\" 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  ASSERT_TRUE(pipe);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe.get()))
    out.append(buf, n);
  // c10 prints sizes as [a, b]; json.dumps prints lists the same way.
  EXPECT_EQ(out, expected + "\n");
}

}  // namespace
}  // namespace pstrain::ps
