#pragma once
// Heartbeats: calls `beat` every `interval` on a thread of its own until
// destroyed, so a worker busy computing a long step is not taken for lost
// (JobSpec::dead_after). Destruction stops the thread at once.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace pstrain::worker {

class Heartbeats {
 public:
  Heartbeats(std::chrono::milliseconds interval, std::function<void()> beat);
  ~Heartbeats();
  Heartbeats(const Heartbeats&) = delete;
  Heartbeats& operator=(const Heartbeats&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pstrain::worker
