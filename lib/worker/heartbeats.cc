#include "worker/heartbeats.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "worker/progress_board.h"
#include "worker/ps_client.h"

namespace pstrain::worker {

std::unique_ptr<Heartbeats> Heartbeats::ToServers(
    std::chrono::milliseconds interval,
    const std::vector<std::unique_ptr<PsClient>>* clients,
    std::mutex* clients_mu, const ProgressBoard* progress) {
  return std::make_unique<Heartbeats>(
      interval,
      [clients, clients_mu, progress,
       told = std::vector<bool>(clients->size())](bool again) mutable {
        if (!again)
          told.assign(told.size(), false);
        const std::string json = progress->Json();
        std::lock_guard<std::mutex> lock(*clients_mu);
        bool all = true;
        for (size_t s = 0; s < told.size(); ++s) {
          if (!told[s])
            told[s] = (*clients)[s]->Heartbeat(s == 0 ? std::string_view(json)
                                                      : std::string_view());
          all = all && told[s];
        }
        return all;
      });
}

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
