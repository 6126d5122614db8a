#include "worker/grad_stream.h"

#include <algorithm>
#include <numeric>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "trace/timeline.h"
#include "worker/device_copies.h"

namespace pstrain::worker {

namespace {

std::vector<uint32_t> MarksOf(const std::vector<int>& order) {
  std::vector<uint32_t> marks(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    marks[order[i]] = static_cast<uint32_t>(i + 1);
  return marks;
}

}  // namespace

GradStream::GradStream(const std::vector<at::Tensor>& params, bool hook)
    : gate_(static_cast<uint32_t>(params.size())),
      order_(params.size()),
      ready_(params.size()) {
  std::iota(order_.rbegin(), order_.rend(), 0);
  marks_ = MarksOf(order_);
  seen_.reserve(params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    if (!params[k].requires_grad())
      buffer_keys_.push_back(static_cast<int>(k));
  }
  if (!hook)
    return;
  for (size_t k = 0; k < params.size(); ++k) {
    if (!params[k].requires_grad())
      continue;
    // Held here: a parameter keeps only a weak reference to its
    // accumulator, which would otherwise be made anew, without the hook.
    accumulators_.push_back(torch::autograd::impl::grad_accumulator(params[k]));
    hooks_.push_back(accumulators_.back()->add_post_hook(
        std::make_unique<torch::autograd::utils::LambdaPostHook>(
            [this, k](const torch::autograd::variable_list& outputs,
                      const torch::autograd::variable_list&) {
              Final(static_cast<int>(k));
              return outputs;
            })));
  }
}

GradStream::~GradStream() {
  for (size_t k = 0; k < hooks_.size(); ++k)
    accumulators_[k]->del_post_hook(hooks_[k]);
}

void GradStream::Begin() {
  Drain();  // an aborted step's copies may still report
  gate_.Reset();
  seen_.clear();
  std::fill(ready_.begin(), ready_.end(), false);
  prefix_ = 0;
  // Forward has written this step's buffers: they are final.
  if (!accumulators_.empty()) {
    for (int k : buffer_keys_)
      Final(k);
  }
}

void GradStream::Final(int key) {
  if (copies_)
    copies_->CopyOut(key);  // ready once on the host
  else
    OnReady(key);
}

void GradStream::Drain() {
  if (copies_)
    copies_->WaitAll();
}

// Runs after the accumulator has added into the key's .grad.
void GradStream::OnReady(int key) {
  if (ready_[key])
    return;
  if (prepare_)
    prepare_(key);
  ready_[key] = true;
  if (!ready_times_.empty())
    ready_times_[key] = trace::Timeline::Now();
  seen_.push_back(key);
  gate_.Open(marks_[key]);  // a tagged push sends it now, before the rest
  const size_t before = prefix_;
  while (prefix_ < order_.size() && ready_[order_[prefix_]])
    ++prefix_;
  if (prefix_ > before)
    gate_.OpenTo(static_cast<uint32_t>(prefix_));
}

bool GradStream::End() {
  Drain();
  for (size_t k = 0; k < ready_.size(); ++k) {
    if (ready_[k])
      continue;
    if (copies_)  // a key backward did not reach: its zero gradient
      copies_->CopyOutNow(static_cast<int>(k));
    if (prepare_)
      prepare_(static_cast<int>(k));
  }
  gate_.OpenTo(net::SendGate::kAll);
  // Keys without a gradient this step (unused) keep their place at the end.
  if (seen_.empty() || std::equal(seen_.begin(), seen_.end(), order_.begin())) {
    return false;
  }
  for (int k : order_) {
    if (!ready_[k])
      seen_.push_back(k);
  }
  order_ = seen_;
  marks_ = MarksOf(order_);
  return true;
}

}  // namespace pstrain::worker
