// A process test: a pstrain ResNet's checkpoint loads into Debian's
// python3-torchvision model of the same name with strict=True, and both give
// the same eval-mode outputs for one input (resnet_torchvision.py beside this
// file does the Python half).

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/model_state.h"
#include "models/model_zoo.h"
#include "models/resnet.h"
#include "ps/store/checkpoint.h"
#include "testing/idx_files.h"
#include "testing/process.h"

namespace pstrain::models {
namespace {

using data::testing::ScratchDir;

struct Case {
  std::string name;
  InputShape input;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class ResNetTorchvisionTest : public ::testing::TestWithParam<Case> {};

TEST_P(ResNetTorchvisionTest, CheckpointLoadsStrictlyAndOutputsMatch) {
  const Case& c = GetParam();
  torch::manual_seed(5);
  Result<std::shared_ptr<Model>> made = MakeModel(c.name, c.input);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Model& model = **made;
  const int64_t px = c.input.image_size;
  torch::NoGradGuard no_grad;
  // Train-mode forwards move the running statistics off their defaults.
  for (int i = 0; i < 3; ++i)
    model.forward(torch::randn({4, c.input.channels, px, px}) * 2 + 0.5);
  model.eval();
  const torch::Tensor x = torch::randn({2, c.input.channels, px, px});
  const torch::Tensor want = model.forward(x);
  // Outputs far from uniform, so that matching them means something.
  ASSERT_GT((want.max() - want.min()).item<double>(), 0.05) << want;

  ScratchDir dir;
  ps::NamedTensors state;
  std::string names;
  for (const StateTensor& s : ModelState(model)) {
    state.emplace_back(s.name, s.value);
    names += s.name + "\n";
  }
  const std::string ckpt = dir.File("model.pt"), in = dir.File("input.pt"),
                    out = dir.File("output.pt");
  ASSERT_TRUE(ps::SaveCheckpoint(ckpt, state, {}).ok());
  ASSERT_TRUE(ps::SaveCheckpoint(in, {{"input", x}}, {}).ok());
  auto r = pstrain::testing::Process({"/usr/bin/python3",
                                      std::string(PSTRAIN_SOURCE_DIR) +
                                          "/tests/models/resnet_torchvision.py",
                                      c.name, ResNetStem(c.input),
                                      std::to_string(c.input.num_classes), ckpt,
                                      in, out})
               .Wait(300);
  ASSERT_EQ(r.exit_code, 0) << "strict load failed?\n" << r.err;
  EXPECT_EQ(r.out, names) << "torchvision's state_dict order";

  Result<ps::NamedTensors> got = ps::LoadCheckpointTensors(out);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  ASSERT_EQ((*got)[0].first, "output");
  ASSERT_EQ((*got)[1].first, "input");
  EXPECT_TRUE((*got)[1].second.equal(x)) << "the input went through intact";
  const torch::Tensor& output = (*got)[0].second;
  ASSERT_EQ(output.sizes(), want.sizes());
  EXPECT_LE((output - want).abs().max().item<double>(), 1e-4)
      << "pstrain:\n"
      << want << "\ntorchvision:\n"
      << output;
}

INSTANTIATE_TEST_SUITE_P(Models, ResNetTorchvisionTest,
                         ::testing::Values(Case{"resnet50", {3, 224, 10}},
                                           Case{"resnet18", {3, 32, 10}}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name + "_" +
                                  ResNetStem(info.param.input);
                         });

}  // namespace
}  // namespace pstrain::models
