#include "ps/rank/server_beats.h"

#include <utility>

#include "ps/rank/master_client.h"

namespace pstrain::ps {

ServerBeats::ServerBeats(std::chrono::nanoseconds interval,
                         MasterClient* master,
                         std::function<void(const Status&)> on_end)
    : thread_([this, interval, master, on_end = std::move(on_end)] {
        Run(interval, master, on_end);
      }) {}

ServerBeats::~ServerBeats() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

Status ServerBeats::ended() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_;
}

void ServerBeats::Run(std::chrono::nanoseconds interval, MasterClient* master,
                      const std::function<void(const Status&)>& on_end) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    Status beat = master->Beat();
    lock.lock();
    if (!beat.ok() && !stop_) {
      ended_ = beat;
      lock.unlock();
      on_end(beat);
      return;
    }
    stop_cv_.wait_for(lock, interval, [this] { return stop_; });
  }
}

}  // namespace pstrain::ps
