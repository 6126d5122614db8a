#include "worker/heartbeats.h"

namespace pstrain::worker {

Heartbeats::Heartbeats(std::chrono::milliseconds interval,
                       std::function<void()> beat)
    : thread_([this, interval, beat = std::move(beat)] {
        std::unique_lock<std::mutex> lock(mu_);
        while (!stop_cv_.wait_for(lock, interval, [this] { return stop_; })) {
          lock.unlock();
          beat();
          lock.lock();
        }
      }) {}

Heartbeats::~Heartbeats() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

}  // namespace pstrain::worker
