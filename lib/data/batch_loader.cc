#include "data/batch_loader.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "util/check.h"

namespace pstrain::data {
namespace {

// One Request: its indices cut into chunks, one task each; done when every
// chunk's batch is in.
struct Job {
  int64_t tag = 0;
  int64_t epoch = 0;
  std::vector<torch::Tensor> chunks;
  std::vector<Batch> parts;
  size_t remaining = 0;
  bool dropped = false;  // Clear() or the destructor: nobody will take it
};

struct Task {
  std::shared_ptr<Job> job;
  size_t chunk = 0;
};

// The chunks' batches, concatenated in order.
Batch Assemble(std::vector<Batch> parts) {
  if (parts.size() == 1)
    return std::move(parts[0]);
  std::vector<torch::Tensor> images, labels;
  Batch batch;
  for (Batch& p : parts) {
    images.push_back(std::move(p.images));
    labels.push_back(std::move(p.labels));
    batch.skipped += p.skipped;
  }
  batch.images = torch::cat(images);
  batch.labels = torch::cat(labels);
  return batch;
}

}  // namespace

struct BatchLoader::Impl {
  const Source& source;
  const int threads;
  const int depth;

  mutable std::mutex mu;
  std::condition_variable work_cv;        // a task queued, or stopping
  std::condition_variable done_cv;        // a job finished
  std::condition_variable space_cv;       // a job taken or dropped
  std::deque<std::shared_ptr<Job>> jobs;  // requested, not taken, in order
  std::deque<Task> tasks;                 // chunks no thread has started
  bool stopping = false;
  std::vector<std::thread> workers;

  Impl(const Source& s, int t, int d) : source(s), threads(t), depth(d) {}

  void Work() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      work_cv.wait(lock, [&] { return stopping || !tasks.empty(); });
      if (stopping)
        return;
      Task task = std::move(tasks.front());
      tasks.pop_front();
      lock.unlock();
      Batch part = source.Get(task.job->chunks[task.chunk], task.job->epoch);
      lock.lock();
      Job& job = *task.job;
      if (job.dropped)
        continue;
      job.parts[task.chunk] = std::move(part);
      if (--job.remaining == 0)
        done_cv.notify_all();
    }
  }

  // Drops every job; the caller holds `mu`.
  void DropAll() {
    for (auto& job : jobs)
      job->dropped = true;
    jobs.clear();
    tasks.clear();
    space_cv.notify_all();
  }
};

BatchLoader::BatchLoader(const Source& source, int threads, int depth)
    : impl_(std::make_unique<Impl>(source, threads, depth)) {
  PS_CHECK(threads >= 1 && depth >= 1)
      << "BatchLoader needs threads >= 1 and depth >= 1";
  for (int t = 0; t < threads; ++t)
    impl_->workers.emplace_back([this] { impl_->Work(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
    impl_->DropAll();
  }
  impl_->work_cv.notify_all();
  for (std::thread& t : impl_->workers)
    t.join();
}

void BatchLoader::Request(int64_t tag, torch::Tensor indices, int64_t epoch) {
  auto job = std::make_shared<Job>();
  job->tag = tag;
  job->epoch = epoch;
  // Up to `threads` chunks of nearly equal size, so that one batch is read
  // by every thread at once. Samples are seeded by their index, so the
  // batch is the same whatever the cut.
  const int64_t b = indices.size(0);
  const int64_t n = std::max<int64_t>(1, std::min<int64_t>(impl_->threads, b));
  for (int64_t c = 0, start = 0; c < n; ++c) {
    const int64_t len = b / n + (c < b % n ? 1 : 0);
    job->chunks.push_back(indices.narrow(0, start, len));
    start += len;
  }
  job->parts.resize(job->chunks.size());
  job->remaining = job->chunks.size();
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->space_cv.wait(lock, [&] {
    return static_cast<int>(impl_->jobs.size()) < impl_->depth;
  });
  impl_->jobs.push_back(job);
  for (size_t c = 0; c < job->chunks.size(); ++c)
    impl_->tasks.push_back({job, c});
  lock.unlock();
  impl_->work_cv.notify_all();
}

int BatchLoader::pending() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return static_cast<int>(impl_->jobs.size());
}

int64_t BatchLoader::front_tag() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->jobs.empty() ? -1 : impl_->jobs.front()->tag;
}

Batch BatchLoader::Take() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  PS_CHECK(!impl_->jobs.empty()) << "BatchLoader::Take with nothing requested";
  std::shared_ptr<Job> job = impl_->jobs.front();
  impl_->done_cv.wait(lock, [&] { return job->remaining == 0; });
  impl_->jobs.pop_front();
  impl_->space_cv.notify_all();
  lock.unlock();
  return Assemble(std::move(job->parts));
}

void BatchLoader::Clear() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->DropAll();
}

}  // namespace pstrain::data
