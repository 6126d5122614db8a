#include "ps/rules/async_recipe.h"

#include "ps/rules/delay_compensation.h"
#include "ps/rules/lookahead.h"
#include "util/check.h"

namespace pstrain::ps {

AsyncRecipe::AsyncRecipe(const JobSpec& spec,
                         const std::vector<at::Tensor>& params,
                         const std::vector<bool>& dense) {
  auto staleness_lr = ParseStalenessLr(spec.staleness_lr);
  PS_CHECK(staleness_lr.ok()) << staleness_lr.status().message();
  staleness_lr_ = *staleness_lr;
  auto share = AsyncLrShare(spec);
  PS_CHECK(share.ok()) << share.status().message();
  share_ = *share;
  const int workers = spec.num_workers();
  if (spec.delay_compensation > 0) {
    dc_ = std::make_unique<DelayCompensation>(spec.delay_compensation, params,
                                              dense, workers);
  }
  if (UsesLookahead(spec))
    lookahead_ =
        std::make_unique<Lookahead>(spec.momentum, params, dense, workers);
}

AsyncRecipe::~AsyncRecipe() = default;

double AsyncRecipe::LrScale(uint64_t staleness) const {
  return share_ * StalenessScale(staleness_lr_, staleness);
}

void AsyncRecipe::Correct(int w, const std::vector<at::Tensor>& grads) {
  if (dc_)
    dc_->Correct(w, grads);
}

void AsyncRecipe::NoteSent(
    int w, double lr, const std::vector<torch::optim::Optimizer*>& optimizers) {
  if (dc_)
    dc_->NoteSent(w);
  if (lookahead_)
    lookahead_->Prepare(w, lr * share_, optimizers);
}

const at::Tensor* AsyncRecipe::Sent(int w, int key) const {
  return lookahead_ ? &lookahead_->Sent(w, key) : nullptr;
}

uint64_t AsyncRecipe::delay_compensation_bytes_per_worker() const {
  return dc_ ? dc_->bytes_per_worker() : 0;
}

}  // namespace pstrain::ps
