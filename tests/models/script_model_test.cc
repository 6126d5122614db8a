#include "models/script_model.h"

#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/torch.h>

#include "models/model_state.h"

namespace pstrain::models {
namespace {

// A linear layer as TorchScript, built in C++ (torch::jit::Module::define),
// so that no Python is needed: weight [out, in], bias [out].
torch::jit::Module Linear(const std::string& type, int64_t in, int64_t out) {
  torch::jit::Module m(type);
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_parameter("weight", torch::randn({out, in}), false);
  m.register_parameter("bias", torch::randn({out}), false);
  m.define(R"(
def forward(self, x):
    return torch.addmm(self.bias, x, self.weight.t())
)");
  return m;
}

// Two linear layers and, on the root, a parameter and a buffer: state_dict
// order puts the root's own tensors first. Dropout (p 0.5) shows the mode.
std::string TwoLayerBytes() {
  torch::manual_seed(1);
  torch::jit::Module m("TwoLayer");
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_parameter("scale", torch::ones({1}), false);
  m.register_buffer("calls", torch::zeros({}, torch::kInt64));
  m.register_module("fc1", Linear("Fc1", 5, 4));
  m.register_module("fc2", Linear("Fc2", 4, 3));
  m.define(R"(
def forward(self, x):
    h = torch.relu(self.fc1.forward(x))
    h = torch.dropout(h, 0.5, self.training)
    return self.fc2.forward(h) * self.scale
)");
  std::ostringstream out;
  m.save(out);
  return out.str();
}

std::shared_ptr<ScriptModel> MustLoad(const std::string& bytes) {
  auto model = ScriptModel::Load(bytes, "two.pt");
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? *model : nullptr;
}

TEST(ScriptModelTest, StateIsTheModulesInStateDictOrder) {
  auto model = MustLoad(TwoLayerBytes());
  ASSERT_TRUE(model);
  std::vector<std::string> names;
  std::vector<bool> buffers;
  for (const StateTensor& s : ModelState(*model)) {
    names.push_back(s.name);
    buffers.push_back(s.is_buffer);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"scale", "calls", "fc1.weight",
                                      "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(buffers,
            (std::vector<bool>{false, true, false, false, false, false}));
  for (const auto& p : model->parameters())
    EXPECT_TRUE(p.requires_grad());
}

TEST(ScriptModelTest, TheModuleComputesWithTheStateAsWritten) {
  auto model = MustLoad(TwoLayerBytes());
  ASSERT_TRUE(model);
  model->eval();
  const torch::Tensor x = torch::randn({2, 5});
  torch::NoGradGuard no_grad;
  const torch::Tensor before = model->forward(x);
  // What the wire does: write into the registered tensors in place.
  for (auto& p : model->named_parameters()) {
    if (p.key() == "scale")
      p.value().fill_(2);
  }
  EXPECT_TRUE(torch::allclose(model->forward(x), 2 * before));
}

TEST(ScriptModelTest, BackwardFillsTheRegisteredGradients) {
  auto model = MustLoad(TwoLayerBytes());
  ASSERT_TRUE(model);
  model->eval();
  model->forward(torch::randn({3, 5})).sum().backward();
  for (const auto& p : model->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0) << p.key();
  }
}

TEST(ScriptModelTest, TrainAndEvalSwitchTheModule) {
  auto model = MustLoad(TwoLayerBytes());
  ASSERT_TRUE(model);
  const torch::Tensor x = torch::randn({64, 5});
  torch::NoGradGuard no_grad;
  model->eval();
  EXPECT_FALSE(model->is_training());
  EXPECT_TRUE(torch::equal(model->forward(x), model->forward(x)));
  model->train();
  EXPECT_TRUE(model->is_training());
  // Dropout draws anew each time.
  EXPECT_FALSE(torch::equal(model->forward(x), model->forward(x)));
}

// Forward waits for each key where it first reads it, as the built-in
// models' layers do: fc1's bias (key 3) and weight (2), fc2's (5, 4), then
// scale (0) at the end. Model::set_await gets 1 + the key.
TEST(ScriptModelTest, ForwardWaitsForEachKeyWhereItReadsIt) {
  auto model = MustLoad(TwoLayerBytes());
  ASSERT_TRUE(model);
  std::vector<size_t> waits;
  model->set_await([&](size_t end) { waits.push_back(end); });
  model->eval();
  const torch::Tensor out = model->forward(torch::randn({2, 5}));
  EXPECT_EQ(waits, (std::vector<size_t>{4, 3, 6, 5, 1}));
  // Gradients still reach the parameters themselves.
  out.sum().backward();
  for (const auto& p : model->named_parameters())
    EXPECT_TRUE(p.value().grad().defined()) << p.key();
  model->set_await(nullptr);
  waits.clear();
  model->forward(torch::randn({2, 5}));
  EXPECT_TRUE(waits.empty());
}

TEST(ScriptModelTest, TwoLoadsShareNothing) {
  const std::string bytes = TwoLayerBytes();
  auto a = MustLoad(bytes), b = MustLoad(bytes);
  ASSERT_TRUE(a && b);
  a->parameters()[0].detach().fill_(5);
  EXPECT_EQ(b->parameters()[0].item<float>(), 1.0f);
}

TEST(ScriptModelTest, BytesThatAreNoModuleAreRefusedInOneLine) {
  auto model = ScriptModel::Load("not a model", "notes.txt");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message().rfind(
                "notes.txt: not a TorchScript module (torch.jit.script(model)"
                ".save(PATH) writes one): ",
                0),
            0u)
      << model.status().message();
  EXPECT_EQ(model.status().message().find('\n'), std::string::npos);
}

TEST(ScriptModelTest, AFloat64ParameterIsRefused) {
  torch::jit::Module m("Double");
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_parameter("w", torch::ones({2}, torch::kFloat64), false);
  m.define("def forward(self, x):\n    return x * self.w\n");
  std::ostringstream out;
  m.save(out);
  auto model = ScriptModel::Load(out.str(), "double.pt");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().message(),
            "double.pt: parameter 'w' is float64; expected float32 (call "
            ".float() before scripting)");
}

TEST(ScriptModelTest, AForwardReturningATupleThrows) {
  torch::jit::Module m("Pair");
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_parameter("w", torch::ones({2}), false);
  m.define("def forward(self, x):\n    return (x * self.w, x)\n");
  std::ostringstream out;
  m.save(out);
  auto model = ScriptModel::Load(out.str(), "pair.pt");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_THROW((*model)->forward(torch::ones({1, 2})), std::runtime_error);
}

}  // namespace
}  // namespace pstrain::models
