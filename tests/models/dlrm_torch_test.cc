// A process test: a pstrain dlrm's checkpoint loads with strict=True into
// Debian's python3-torch DLRM built as the reference's DLRM_Net is
// (bench/dlrm_torch.py), and both give the same click
// probabilities for one input.

#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/dlrm.h"
#include "models/model_state.h"
#include "ps/store/checkpoint.h"
#include "testing/idx_files.h"
#include "testing/process.h"

namespace pstrain::models {
namespace {

using data::testing::ScratchDir;

TEST(DlrmTorchTest, CheckpointLoadsStrictlyAndOutputsMatch) {
  DlrmOptions o;
  o.bottom = {8, 4};
  o.top = {16, 1};
  o.table_rows = {3, 5, 7, 11};
  torch::manual_seed(3);
  Dlrm model(o);
  model.eval();
  const torch::Tensor dense = torch::rand({6, 13}) * 3;
  torch::Tensor rows = torch::empty({6, 4}, torch::kLong);
  for (int t = 0; t < 4; ++t)
    rows.select(1, t).copy_(torch::randint(0, o.table_rows[t], {6}));
  torch::NoGradGuard no_grad;
  const torch::Tensor want = torch::sigmoid(model.Forward(dense, rows));

  ScratchDir dir;
  ps::NamedTensors saved;
  std::string names;
  for (const StateTensor& s : ModelState(model)) {
    saved.emplace_back(s.name, s.value);
    names += s.name + "\n";
  }
  const std::string ckpt = dir.File("model.pt"), in = dir.File("input.pt"),
                    out = dir.File("output.pt");
  ASSERT_TRUE(ps::SaveCheckpoint(ckpt, saved, {}).ok());
  ASSERT_TRUE(
      ps::SaveCheckpoint(in, {{"dense", dense}, {"rows", rows}}, {}).ok());
  auto r = pstrain::testing::Process(
               {"/usr/bin/python3",
                std::string(PSTRAIN_SOURCE_DIR) + "/bench/dlrm_torch.py",
                "13-8-4", "16-1", "3-5-7-11", ckpt, in, out})
               .Wait(300);
  ASSERT_EQ(r.exit_code, 0) << "load failed?\n" << r.err;
  EXPECT_EQ(r.out, names) << "DLRM_Net's state_dict order";

  Result<ps::NamedTensors> got = ps::LoadCheckpointTensors(out);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  ASSERT_EQ((*got)[0].first, "output");
  EXPECT_LE(((*got)[0].second - want).abs().max().item<double>(), 1e-6);
  // The packed input of the Model interface gives the same logits.
  const torch::Tensor packed =
      torch::cat({dense.to(torch::kDouble), rows.to(torch::kDouble)}, 1);
  EXPECT_TRUE(
      torch::allclose(torch::sigmoid(model.forward(packed)).view(-1), want));
}

}  // namespace
}  // namespace pstrain::models
