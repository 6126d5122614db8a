#include "ps/checkpoint.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include <torch/torch.h>

#include "models/model_zoo.h"
#include "testing/idx_files.h"

namespace pstrain::ps {
namespace {

using data::testing::ScratchDir;

TEST(CheckpointTest, MetaPathReplacesTheExtension) {
  EXPECT_EQ(CheckpointMetaPath("a/model.pt"), "a/model.json");
  EXPECT_EQ(CheckpointMetaPath("m.pth"), "m.json");
  EXPECT_EQ(CheckpointMetaPath("m"), "m.json");
}

TEST(CheckpointTest, RoundTripKeepsNamesOrderAndValues) {
  ScratchDir dir;
  NamedTensors t = {{"b.weight", torch::randn({3, 2})},
                    {"a.bias", torch::arange(5, torch::kInt64)}};
  ASSERT_TRUE(SaveCheckpoint(dir.File("m.pt"), t, {{"version", 9}}).ok());
  auto back = LoadCheckpointTensors(dir.File("m.pt"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].first, "b.weight");
  EXPECT_TRUE(torch::equal((*back)[0].second, t[0].second));
  EXPECT_TRUE(torch::equal((*back)[1].second, t[1].second));
  auto meta = LoadCheckpointMeta(dir.File("m.pt"));
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ((*meta)["version"], 9);
}

TEST(CheckpointTest, GarbageIsCorruptionAndMissingIsNotFound) {
  ScratchDir dir;
  std::ofstream(dir.File("bad.pt")) << "not a zip";
  Status s = LoadCheckpointTensors(dir.File("bad.pt")).status();
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("bad.pt"), std::string::npos);
  EXPECT_EQ(LoadCheckpointTensors(dir.File("none.pt")).status().code(),
            StatusCode::kNotFound);
}

// Python's torch.load (Debian's python3-torch) reads the state_dict.
TEST(CheckpointTest, PythonTorchLoadReadsNamesAndShapes) {
  ScratchDir dir;
  auto model = models::MakeModel("net");
  ASSERT_TRUE(model.ok());
  NamedTensors t;
  std::string expected = "{";
  for (const auto& item : (*model)->named_parameters()) {
    t.emplace_back(item.key(), item.value());
    expected += std::string(expected.size() > 1 ? ", " : "") + "\"" + item.key() +
                "\": " + c10::str(item.value().sizes()).substr(0) ;
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
  while (size_t n = fread(buf, 1, sizeof(buf), pipe.get())) out.append(buf, n);
  // c10 prints sizes as [a, b]; json.dumps prints lists the same way.
  EXPECT_EQ(out, expected + "\n");
}

}  // namespace
}  // namespace pstrain::ps
