#include "ps/rules/step_order.h"

#include "util/check.h"

namespace pstrain::ps {

StepOrder::StepOrder(int num_keys)
    : keys_(num_keys), pos_(num_keys), ahead_(num_keys, false) {
  for (int k = 0; k < num_keys; ++k)
    keys_[k] = pos_[k] = k;
}

bool StepOrder::Set(const std::vector<int>& keys) {
  PS_CHECK(idle()) << "StepOrder::Set during a step";
  if (keys == keys_)
    return true;  // each step's, mostly: nothing allocates
  if (keys.size() != keys_.size())
    return false;
  std::vector<int> pos(keys.size(), -1);
  for (size_t i = 0; i < keys.size(); ++i) {
    const int k = keys[i];
    if (k < 0 || k >= static_cast<int>(keys.size()) || pos[k] >= 0)
      return false;
    pos[k] = static_cast<int>(i);
  }
  keys_ = keys;
  pos_ = std::move(pos);
  return true;
}

void StepOrder::UpdateAhead(int key) {
  PS_CHECK(!closed_ && !ahead_[key]) << "UpdateAhead(" << key << ")";
  ahead_[key] = true;
  ++ahead_count_;
  Advance();
}

void StepOrder::Close() {
  closed_ = true;
  next_ = 0;
}

void StepOrder::Discard() {
  ahead_.assign(ahead_.size(), false);
  ahead_count_ = 0;
  closed_ = false;
  front_ = 0;
}

int StepOrder::Next() {
  if (!closed_)
    return -1;
  while (next_ < keys_.size() && ahead_[keys_[next_]]) {
    ahead_[keys_[next_]] = false;
    --ahead_count_;
    ++next_;
  }
  if (next_ == keys_.size()) {
    closed_ = false;
    front_ = 0;
    return -1;
  }
  const int key = keys_[next_++];
  Advance();
  return key;
}

bool StepOrder::stepped(int key) const {
  return ahead_[key] || (closed_ && static_cast<size_t>(pos_[key]) < next_);
}

void StepOrder::Advance() {
  while (front_ < keys_.size() && stepped(keys_[front_]))
    ++front_;
}

}  // namespace pstrain::ps
