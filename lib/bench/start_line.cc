#include "bench/start_line.h"

#include "util/check.h"

namespace pstrain::bench {

StartLine::StartLine(int workers) : workers_(workers) {
  PS_CHECK(workers >= 1) << "StartLine: workers " << workers;
}

bool StartLine::Arrive() {
  std::unique_lock<std::mutex> lock(mu_);
  if (failed_) return false;
  const uint64_t round = round_;
  if (++arrived_ == workers_) {
    arrived_ = 0;
    ++round_;
    cv_.notify_all();
    return true;
  }
  cv_.wait(lock, [&] { return round_ != round || failed_; });
  return round_ != round;
}

void StartLine::Fail() {
  std::lock_guard<std::mutex> lock(mu_);
  failed_ = true;
  cv_.notify_all();
}

}  // namespace pstrain::bench
