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
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace pstrain::worker {

class ProgressBoard;
class PsClient;

class Heartbeats {
 public:
  /// `beat(again)`: again is false on a beat's first try, true on its
  /// retries; returns whether everyone was told. Runs on the thread.
  Heartbeats(std::chrono::milliseconds interval,
             std::function<bool(bool again)> beat,
             std::chrono::milliseconds retry = std::chrono::milliseconds(20));
  ~Heartbeats();
  /// A heartbeat frame to every server of `clients` (by server rank) every
  /// `interval`, rank 0's carrying `progress`' last figures. A server whose
  /// connection a call held is told once it is free (the retries); a lost
  /// one is skipped. All must outlive the heartbeats; an element of
  /// `clients` changes only under `clients_mu`, which each beat holds, so
  /// that the other servers go on hearing a worker that reconnects to a
  /// lost one (for as long as its standby takes to take over).
  /// At most 1 s apart, so that rank 0's live view moves about once a
  /// second: a heartbeat is tiny (a 36-byte frame, and about 200 bytes of
  /// progress JSON to rank 0 alone), so the rate costs nothing worth
  /// counting.
  static std::unique_ptr<Heartbeats> ToServers(
      std::chrono::milliseconds interval,
      const std::vector<std::unique_ptr<PsClient>>* clients,
      std::mutex* clients_mu, const ProgressBoard* progress);
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
