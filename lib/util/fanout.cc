#include "util/fanout.h"

#include "util/check.h"

namespace pstrain {

Fanout::Fanout(int n, Task task) : n_(n), task_(std::move(task)), results_(n) {
  PS_CHECK(n >= 1) << "Fanout of " << n;
  for (int i = 1; i < n; ++i)
    threads_.emplace_back([this, i] { Loop(i); });
}

Fanout::~Fanout() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : threads_)
    t.join();
}

Status Fanout::Run() {
  Start();
  results_[0] = task_(0);
  Status s = Wait();
  return results_[0].ok() ? s : results_[0];
}

void Fanout::Start() {
  if (n_ > 1) {
    std::lock_guard<std::mutex> lock(mu_);
    ++generation_;
    pending_ = n_ - 1;
  }
  start_.notify_all();
}

Status Fanout::Wait() {
  if (n_ > 1) {
    std::unique_lock<std::mutex> lock(mu_);
    finished_.wait(lock, [this] { return pending_ == 0; });
  }
  for (int i = 1; i < n_; ++i)
    PS_RETURN_IF_ERROR(results_[i]);
  return Status::Ok();
}

void Fanout::Loop(int i) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_)
        return;
      seen = generation_;
    }
    Status s = task_(i);
    std::lock_guard<std::mutex> lock(mu_);
    results_[i] = std::move(s);
    if (--pending_ == 0)
      finished_.notify_one();
  }
}

}  // namespace pstrain
