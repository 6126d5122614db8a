#include "worker/device_copies.h"

#include <utility>

#include <c10/core/GradMode.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

namespace pstrain::worker {

namespace {

c10::Stream CurrentStream(const c10::Device& device) {
  return c10::impl::VirtualGuardImpl(device.type()).getStream(device);
}

}  // namespace

DeviceCopies::DeviceCopies(std::vector<at::Tensor> model,
                           std::vector<bool> is_buffer,
                           std::vector<at::Tensor> host_params,
                           std::vector<at::Tensor> host_grads,
                           std::function<void(int)> copied)
    : model_(std::move(model)),
      is_buffer_(std::move(is_buffer)),
      host_params_(std::move(host_params)),
      host_grads_(std::move(host_grads)),
      copied_(std::move(copied)),
      device_(model_.front().device()),
      copy_stream_(c10::impl::VirtualGuardImpl(device_.type())
                       .getStreamFromGlobalPool(device_)) {
  for (size_t k = 0; k < model_.size(); ++k)
    made_.push_back(std::make_unique<c10::Event>(device_.type()));
  queue_.reserve(model_.size());
  thread_ = std::thread([this] { Loop(); });
}

DeviceCopies::~DeviceCopies() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void DeviceCopies::CopyOut(int key) {
  const at::Tensor& src = is_buffer_[key] ? model_[key] : model_[key].grad();
  // The copy stream waits for the kernels queued so far on this thread's
  // stream (those that made the key), not for the ones queued after.
  c10::Event& made = *made_[key];
  made.record(CurrentStream(device_));
  made.block(copy_stream_);
  {
    c10::StreamGuard on_copy_stream(copy_stream_);
    host_grads_[key].copy_(src, /*non_blocking=*/true);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(key);  // within the capacity reserved: no allocation
  }
  cv_.notify_all();
}

void DeviceCopies::CopyOutNow(int key) {
  const at::Tensor& src = is_buffer_[key] ? model_[key] : model_[key].grad();
  host_grads_[key].copy_(src);
}

void DeviceCopies::WaitAll() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return next_ == queue_.size(); });
  queue_.clear();
  next_ = 0;
}

void DeviceCopies::CopyIn(int key) {
  c10::NoGradGuard no_grad;
  model_[key].copy_(host_params_[key], /*non_blocking=*/true);
}

void DeviceCopies::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || next_ < queue_.size(); });
    if (next_ == queue_.size())
      return;  // stopped, nothing in flight
    const int key = queue_[next_];
    lock.unlock();
    // Every copy queued so far, this key's among them, is done.
    copy_stream_.synchronize();
    copied_(key);
    lock.lock();
    ++next_;
    cv_.notify_all();
  }
}

}  // namespace pstrain::worker
