#pragma once
// Heartbeats: calls `beat` every `interval` on a thread of its own until
// destroyed, so a worker busy computing a long step is not taken for lost
// (JobSpec::dead_after) and rank 0 hears its progress. A beat that could
// not tell everyone (a call held a connection) is tried again every
// `retry` until it could or the next beat is due. Destruction stops the
// thread at once.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace pstrain::worker {

class Heartbeats {
 public:
  /// `beat(again)`: again is false on a beat's first try, true on its
  /// retries; returns whether everyone was told. Runs on the thread.
  Heartbeats(std::chrono::milliseconds interval,
             std::function<bool(bool again)> beat,
             std::chrono::milliseconds retry = std::chrono::milliseconds(20));
  ~Heartbeats();
  Heartbeats(const Heartbeats&) = delete;
  Heartbeats& operator=(const Heartbeats&) = delete;

 private:
  void Run(std::chrono::milliseconds interval,
           const std::function<bool(bool)>& beat,
           std::chrono::milliseconds retry);

  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pstrain::worker
