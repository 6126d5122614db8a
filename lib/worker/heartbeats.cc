#include "worker/heartbeats.h"

#include <algorithm>

namespace pstrain::worker {

Heartbeats::Heartbeats(std::chrono::milliseconds interval,
                       std::function<bool(bool again)> beat,
                       std::chrono::milliseconds retry)
    : thread_([this, interval, beat = std::move(beat), retry] {
        Run(interval, beat, retry);
      }) {}

void Heartbeats::Run(std::chrono::milliseconds interval,
                     const std::function<bool(bool)>& beat,
                     std::chrono::milliseconds retry) {
  using Clock = std::chrono::steady_clock;
  auto due = Clock::now() + interval;  // the next beat's first try
  auto next = due;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_cv_.wait_until(lock, next, [this] { return stop_; })) {
    const auto now = Clock::now();
    const bool again = now < due;
    if (!again)
      due = now + interval;
    lock.unlock();
    const bool told = beat(again);
    lock.lock();
    next = told ? due : std::min(Clock::now() + retry, due);
  }
}

Heartbeats::~Heartbeats() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

}  // namespace pstrain::worker
