#include "bench/start_line.h"

#include "util/check.h"

namespace pstrain::bench {

StartLine::StartLine(int workers) : workers_(workers) {
  PS_CHECK(workers >= 1) << "StartLine: workers " << workers;
}

bool StartLine::Arrive() {
  std::unique_lock<std::mutex> lock(mu_);
  if (failed_)
    return false;
  const uint64_t round = round_;
  if (++arrived_ == workers_) {
    arrived_ = 0;
    ++round_;
    cv_.notify_all();
    return true;
  }
  ++blocked_;
  cv_.wait(lock, [&] { return round_ != round || failed_; });
  --blocked_;
  return round_ != round;
}

int StartLine::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return blocked_;
}

void StartLine::Fail() {
  std::lock_guard<std::mutex> lock(mu_);
  failed_ = true;
  cv_.notify_all();
}

}  // namespace pstrain::bench
