#include "net/send_gate.h"

#include <algorithm>

namespace pstrain::net {

void SendGate::SetMarks(uint32_t marks) {
  marks_ = marks;
  one_.reset(new std::atomic<bool>[marks]);
  for (uint32_t i = 0; i < marks_; ++i)
    one_[i].store(false);
}

void SendGate::Reset() {
  open_.store(0);
  aborted_.store(false);
  for (uint32_t i = 0; i < marks_; ++i)
    one_[i].store(false);
}

void SendGate::Open(uint32_t mark) {
  if (mark == 0 || mark > marks_ || one_[mark - 1].exchange(true))
    return;
  WakeAll();
}

void SendGate::OpenTo(uint32_t mark) {
  uint32_t seen = open_.load();
  while (seen < mark && !open_.compare_exchange_weak(seen, mark)) {
  }
  if (seen < mark)
    WakeAll();
}

void SendGate::Abort() {
  aborted_.store(true);
  WakeAll();
}

int SendGate::Watch(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(mu_);
  watchers_.emplace_back(next_id_, std::move(wake));
  return next_id_++;
}

void SendGate::Unwatch(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  watchers_.erase(std::remove_if(watchers_.begin(), watchers_.end(),
                                 [id](const auto& w) { return w.first == id; }),
                  watchers_.end());
}

void SendGate::WakeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& w : watchers_)
    w.second();
}

}  // namespace pstrain::net
