#pragma once
// Fanout: runs n tasks at the same time, again and again: a worker's
// exchanges with S servers, a server's optimizer steps over T groups of
// keys (task 0 on the calling thread, tasks 1..n-1 on threads kept for the
// Fanout's life: no thread is started per step). With n = 1 it is a plain
// call. Start and Wait split Run so that the calling thread can do other
// work while tasks 1..n-1 run (a worker computes during its exchanges).
// Run, Start and Wait are called from one thread at a time.

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "util/status.h"

namespace pstrain {

class Fanout {
 public:
  using Task = std::function<Status(int)>;

  /// `task(i)` for i in 0..n-1 on each Run. REQUIRES: n >= 1.
  Fanout(int n, Task task);
  ~Fanout();
  Fanout(const Fanout&) = delete;
  Fanout& operator=(const Fanout&) = delete;

  /// Runs task(0..n-1) concurrently and waits for all; returns the first
  /// error by index, or ok.
  Status Run();
  /// The halves of Run without task 0: starts task(1..n-1) and returns at
  /// once, so that the calling thread works meanwhile; Wait waits for them
  /// and returns the first error by index, or ok. Each Start is followed by
  /// one Wait before the next Start or Run.
  void Start();
  Status Wait();

 private:
  void Loop(int i);

  const int n_;
  Task task_;
  std::mutex mu_;
  std::condition_variable start_, finished_;
  uint64_t generation_ = 0;  // Run count; helpers run once per increment
  int pending_ = 0;          // helper tasks of this generation still running
  bool stop_ = false;
  std::vector<Status> results_;
  std::vector<std::thread> threads_;
};

}  // namespace pstrain
