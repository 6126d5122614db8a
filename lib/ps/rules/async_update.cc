#include "ps/rules/async_update.h"

#include <algorithm>

namespace pstrain::ps {

namespace {

std::vector<bool> DenseKeys(const ParameterServer& store) {
  std::vector<bool> dense(store.num_keys());
  for (int k = 0; k < store.num_keys(); ++k)
    dense[k] = store.is_dense(k);
  return dense;
}

}  // namespace

AsyncUpdate::AsyncUpdate(const JobSpec& spec, ParameterServer* store)
    : UpdateRule(RuleTraitsOf(spec), store),
      buffers_(*store),
      recipe_(std::make_unique<AsyncRecipe>(spec, store->params(),
                                            DenseKeys(*store))),
      staleness_histogram_(kMaxStaleness + 1, 0),
      order_(store->num_keys()) {}

Result<bool> AsyncUpdate::Apply(int w, uint64_t version, bool refused) {
  if (refused)
    return false;
  ParameterServer& store = *this->store();
  store.CountPush();
  // A push from the future (a confused peer) counts as fresh.
  const uint64_t staleness =
      store.version() > version ? store.version() - version : 0;
  ++staleness_histogram_[std::min<uint64_t>(staleness, kMaxStaleness)];
  NoteApplied(w, version);
  const std::vector<at::Tensor>& grads = buffers_.of(w);
  store.SetGradients(grads);
  recipe_->Correct(w, grads);
  for (int k = 0; k < store.num_keys(); ++k) {
    if (store.is_row_sparse(k) && store.PushedRowIds(w, k).defined())
      store.SetRowGradient(k, store.PushedRowIds(w, k), store.PushedRows(w, k));
  }
  store.ClipGradients();
  store.Step(store.lr() * recipe_->LrScale(staleness));
  // Buffers take each push's values, in the order pushes arrive.
  store.CopyBuffers(grads);
  return true;
}

void AsyncUpdate::NoteParamsSent(int w) {
  recipe_->NoteSent(w, store()->lr(), store()->dense_optimizers());
}

const at::Tensor& AsyncUpdate::SentParam(int w, int key) const {
  const at::Tensor* sent = recipe_->Sent(w, key);
  return sent ? *sent : store()->params()[key];
}

std::unique_ptr<UpdateRule> MakeAsyncUpdate(const JobSpec& spec,
                                            ParameterServer* server) {
  return std::make_unique<AsyncUpdate>(spec, server);
}

}  // namespace pstrain::ps
