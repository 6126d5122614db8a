#include "ps/job/sparse_keys.h"

#include <algorithm>
#include <string>
#include <unordered_set>

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>

#include "models/model_state.h"

namespace pstrain::ps {

bool HasLazyRows(const JobSpec& spec) {
  return (spec.optimizer == "sgd" || spec.optimizer == "adagrad" ||
          spec.optimizer == "adam") &&
         spec.weight_decay == 0;
}

std::vector<bool> RowSparseKeys(const JobSpec& spec,
                                const torch::nn::Module& module) {
  const auto state = models::ModelState(module);
  std::vector<bool> sparse(state.size(), false);
  if (!spec.sparse_embeddings || !HasLazyRows(spec))
    return sparse;
  // An embedding's weight that another module uses too (a decoder with
  // tied weights) gets a gradient in every row: it stays dense.
  std::unordered_set<std::string> weights;
  std::unordered_set<const void*> shared;
  auto visit = [&](const std::string& name, const torch::nn::Module& m) {
    if (m.as<torch::nn::EmbeddingImpl>() != nullptr) {
      weights.insert(name.empty() ? "weight" : name + ".weight");
      return;
    }
    for (const auto& p : m.named_parameters(/*recurse=*/false))
      shared.insert(p.value().unsafeGetTensorImpl());
  };
  // The module itself need not live in a shared_ptr (a model on the
  // stack): it is visited apart from its descendants.
  visit("", module);
  for (const auto& item : module.named_modules("", /*include_self=*/false))
    visit(item.key(), *item.value());
  for (size_t k = 0; k < state.size(); ++k) {
    sparse[k] = !state[k].is_buffer && state[k].value.dim() == 2 &&
                weights.count(state[k].name) > 0 &&
                shared.count(state[k].value.unsafeGetTensorImpl()) == 0;
  }
  return sparse;
}

std::vector<bool> SliceRowSparse(const ShardPlan& plan, int server,
                                 const std::vector<bool>& model_keys) {
  if (std::none_of(model_keys.begin(), model_keys.end(),
                   [](bool b) { return b; })) {
    return {};
  }
  std::vector<bool> out;
  for (int i : plan.by_server[server])
    out.push_back(model_keys[plan.slices[i].key]);
  return out;
}

void RowsInRange(const std::vector<int64_t>& ids, int64_t begin, int64_t end,
                 std::vector<int64_t>* out) {
  out->clear();
  for (auto it = std::lower_bound(ids.begin(), ids.end(), begin);
       it != ids.end() && *it < end; ++it) {
    out->push_back(*it - begin);
  }
}

}  // namespace pstrain::ps
