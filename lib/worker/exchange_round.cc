#include "worker/exchange_round.h"

#include <algorithm>

namespace pstrain::worker {

void ExchangeRound::Reset(int servers) {
  versions_.assign(servers, 0);
}

void ExchangeRound::Start(Kind what) {
  kind_ = what;
  answered_.assign(versions_.size(), 0);
  under_way_ = true;
}

bool ExchangeRound::End() {
  const bool was = under_way_;
  under_way_ = false;
  return was;
}

void ExchangeRound::Answer(int s, uint64_t version) {
  versions_[s] = version;
  answered_[s] = 1;
}

bool ExchangeRound::AnsweredAllBut(const std::vector<int>& lost) const {
  for (size_t s = 0; s < answered_.size(); ++s) {
    if (answered_[s] == 0 &&
        std::find(lost.begin(), lost.end(), static_cast<int>(s)) == lost.end())
      return false;
  }
  return true;
}

}  // namespace pstrain::worker
