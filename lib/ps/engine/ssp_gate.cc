#include "ps/engine/ssp_gate.h"

#include <algorithm>

namespace pstrain::ps {

SspGate::SspGate(int num_workers, uint64_t staleness)
    : staleness_(staleness),
      clocks_(num_workers, 0),
      training_(num_workers, true) {}

void SspGate::NotePush(int w) {
  const uint64_t computed_at = clocks_[w]++;
  auto slowest = SlowestOther(w);
  if (slowest && computed_at > *slowest) {
    max_clock_gap_ = std::max(max_clock_gap_, computed_at - *slowest);
  }
}

bool SspGate::Allows(int w) const {
  auto slowest = SlowestOther(w);
  return !slowest || clocks_[w] <= *slowest + staleness_;
}

void SspGate::SetTraining(int w, bool training) {
  if (training && !training_[w]) {
    if (auto slowest = SlowestOther(w))
      clocks_[w] = *slowest;
  }
  training_[w] = training;
}

std::optional<uint64_t> SspGate::SlowestOther(int w) const {
  std::optional<uint64_t> slowest;
  for (size_t i = 0; i < clocks_.size(); ++i) {
    if (static_cast<int>(i) == w || !training_[i])
      continue;
    if (!slowest || clocks_[i] < *slowest)
      slowest = clocks_[i];
  }
  return slowest;
}

}  // namespace pstrain::ps
