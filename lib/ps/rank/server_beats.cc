#include "ps/rank/server_beats.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "ps/rank/master_client.h"
#include "ps/service/await_beats.h"
#include "report/event_log.h"

namespace pstrain::ps {

ServerBeats::ServerBeats(double dead_after, MasterClient* master,
                         std::function<void(const Status&)> on_end,
                         std::function<Status()> rejoin,
                         std::function<bool()> moved) {
  if (dead_after <= 0)
    return;
  thread_ = std::thread([this, interval = AwaitBeats::IntervalFor(dead_after),
                         master, on_end = std::move(on_end),
                         rejoin = std::move(rejoin), moved = std::move(moved)] {
    Run(interval, master, on_end, rejoin, moved);
  });
}

ServerBeats::~ServerBeats() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

Status ServerBeats::ended() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_;
}

Status ServerBeats::Serving(int rank) const {
  Status why = ended();
  if (why.ok())
    return why;
  return Status(why.code(), "server " + std::to_string(rank) +
                                " stops serving: " + why.message());
}

void ServerBeats::Run(std::chrono::nanoseconds interval, MasterClient* master,
                      const std::function<void(const Status&)>& on_end,
                      const std::function<Status()>& rejoin,
                      const std::function<bool()>& moved) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    Status beat = rejoin && moved && moved() ? rejoin() : master->Beat();
    // Gone without a word (a refusal is a fence): its successor's, perhaps.
    if (!beat.ok() && rejoin && !master->refused())
      beat = rejoin();
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

void ExitFenced(const Status& why, report::EventLog* log) {
  log->Error(why.message(), 1);
  std::fflush(nullptr);
  std::_Exit(1);  // the other threads serve nothing of this term's
}

}  // namespace pstrain::ps
