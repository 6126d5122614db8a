#include "worker/param_arrivals.h"

#include <algorithm>

#include "trace/timeline.h"

namespace pstrain::worker {

ParamArrivals::ParamArrivals(std::vector<int> slices_per_key, int num_servers)
    : slices_per_key_(std::move(slices_per_key)),
      num_servers_(num_servers),
      missing_(slices_per_key_) {}

void ParamArrivals::Begin() {
  std::lock_guard<std::mutex> lock(mu_);
  missing_ = slices_per_key_;  // same size: no allocation
  prefix_ = 0;
  metas_ = 0;
  all_ = false;
}

void ParamArrivals::OnMeta() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++metas_;
  }
  cv_.notify_all();
}

void ParamArrivals::OnSlice(int key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --missing_[key];
    while (prefix_ < missing_.size() && missing_[prefix_] <= 0)
      ++prefix_;
  }
  cv_.notify_all();
}

void ParamArrivals::OpenAll() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    all_ = true;
  }
  cv_.notify_all();
}

// Returns ready() as it stood when the wait ended (OpenAll ends it too).
template <typename Pred>
bool ParamArrivals::WaitUntil(Pred ready, const char* what, int key) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!all_ && !ready()) {
    const auto start = std::chrono::steady_clock::now();
    const int64_t begin = timeline_ ? trace::Timeline::Now() : 0;
    ++waiting_;
    cv_.wait(lock, [&] { return all_ || ready(); });
    --waiting_;
    waited_ += std::chrono::steady_clock::now() - start;
    if (timeline_)
      timeline_->Record({what, key}, begin, trace::Timeline::Now());
  }
  return ready();
}

bool ParamArrivals::WaitMeta() {
  return WaitUntil([this] { return metas_ >= num_servers_; }, "wait version",
                   -1);
}

void ParamArrivals::WaitKeys(size_t n) {
  WaitUntil([this, n] { return prefix_ >= std::min(n, missing_.size()); },
            "wait params", static_cast<int>(n) - 1);
}

int ParamArrivals::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_;
}

double ParamArrivals::TakeWaitedSeconds() {
  std::lock_guard<std::mutex> lock(mu_);
  const double s = std::chrono::duration<double>(waited_).count();
  waited_ = {};
  return s;
}

}  // namespace pstrain::worker
