// Which keys are row-sparse: an Embedding's weight, found by type anywhere
// in the module tree, unless the job turns it off, its optimizer has no
// lazy rows, or another module shares the weight (tied weights).

#include "ps/job/sparse_keys.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/model_state.h"
#include "testing/token_classifier.h"

namespace pstrain::ps {
namespace {

JobSpec Spec() {
  JobSpec s;
  s.optimizer = "sgd";
  s.world_size = 3;
  return s;
}

TEST(SparseKeysTest, AnEmbeddingsWeightIsRowSparse) {
  testing::TokenClassifier model(50, 4, 3);
  EXPECT_EQ(RowSparseKeys(Spec(), model),
            (std::vector<bool>{true, false, false}));
}

TEST(SparseKeysTest, OffWithTheFlagOrWithoutLazyRows) {
  testing::TokenClassifier model(50, 4, 3);
  JobSpec off = Spec();
  off.sparse_embeddings = false;
  EXPECT_EQ(RowSparseKeys(off, model), std::vector<bool>(3, false));
  JobSpec rmsprop = Spec();
  rmsprop.optimizer = "rmsprop";
  EXPECT_EQ(RowSparseKeys(rmsprop, model), std::vector<bool>(3, false));
}

// A decoder whose weight is the embedding's, as a language model with
// --tie_weights: every row gets a gradient, so the table stays dense.
struct Decoder : torch::nn::Module {
  explicit Decoder(torch::Tensor w) { register_parameter("weight", w); }
};
struct Tied : torch::nn::Module {
  Tied() {
    emb = register_module("emb", torch::nn::Embedding(20, 4));
    register_module("dec", std::make_shared<Decoder>(emb->weight));
  }
  torch::nn::Embedding emb{nullptr};
};

TEST(SparseKeysTest, ATiedWeightStaysDense) {
  Tied tied;
  const auto state = models::ModelState(tied);
  const auto sparse = RowSparseKeys(Spec(), tied);
  ASSERT_EQ(sparse.size(), state.size());
  for (bool b : sparse)
    EXPECT_FALSE(b);
}

// With two servers a table larger than --slice_bytes is split into row
// ranges; each server's slices of it are row-sparse.
TEST(SparseKeysTest, SlicesOfARowSparseKeyAreRowSparse) {
  testing::TokenClassifier model(1000, 8, 3);  // 32000 bytes of table
  std::vector<wire::KeySpec> keys;
  for (const auto& s : models::ModelState(model))
    keys.push_back({s.name, wire::DType::kFloat32, s.value.sizes().vec()});
  auto plan = PlanShards(keys, 2, 16000);
  ASSERT_TRUE(plan.ok());
  const auto sparse = RowSparseKeys(Spec(), model);
  int table_slices = 0;
  for (int s = 0; s < 2; ++s) {
    const auto flags = SliceRowSparse(*plan, s, sparse);
    ASSERT_EQ(flags.size(), plan->by_server[s].size());
    for (size_t j = 0; j < flags.size(); ++j) {
      const Slice& slice = plan->slices[plan->by_server[s][j]];
      EXPECT_EQ(flags[j], slice.key == 0);
      table_slices += slice.key == 0;
    }
  }
  EXPECT_EQ(table_slices, 2);
  EXPECT_TRUE(SliceRowSparse(*plan, 0, {false, false, false}).empty());
}

}  // namespace
}  // namespace pstrain::ps
