#include "data/batch_loader.h"

#include <atomic>
#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/image_folder.h"
#include "testing/idx_files.h"
#include "testing/image_files.h"

namespace pstrain::data {
namespace {

// A Source whose sample i at epoch e is the 1x1x1 image i + 1000 e with
// label i; sample 13 is "corrupt". Get blocks while the gate is closed.
class FakeSource : public Source {
 public:
  int64_t size() const override { return 100; }
  SourceShape shape() const override { return {1, 1, 1, 100}; }
  Batch Get(const torch::Tensor& indices, int64_t epoch) const override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return open_; });
    }
    calls_++;
    Batch b;
    std::vector<int64_t> kept;
    for (int64_t j = 0; j < indices.size(0); ++j) {
      const int64_t i = indices[j].item<int64_t>();
      if (i == 13)
        ++b.skipped;
      else
        kept.push_back(i);
    }
    b.labels = torch::tensor(kept, torch::kInt64);
    b.images =
        (b.labels.to(torch::kFloat32) + 1000.0f * epoch).reshape({-1, 1, 1, 1});
    return b;
  }
  void SetOpen(bool open) {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = open;
    cv_.notify_all();
  }
  int calls() const { return calls_; }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool open_ = true;
  mutable std::atomic<int> calls_{0};
};

TEST(BatchLoaderTest, BatchesComeBackInRequestOrder) {
  FakeSource source;
  BatchLoader loader(source, 3, 4);
  EXPECT_EQ(loader.pending(), 0);
  EXPECT_EQ(loader.front_tag(), -1);
  for (int64_t step = 0; step < 4; ++step)
    loader.Request(step, torch::arange(step * 10, step * 10 + 7), step);
  EXPECT_EQ(loader.pending(), 4);
  for (int64_t step = 0; step < 4; ++step) {
    EXPECT_EQ(loader.front_tag(), step);
    const Batch b = loader.Take();
    const auto want = torch::arange(step * 10, step * 10 + 7);
    const auto kept =
        step == 1 ? torch::cat({want.narrow(0, 0, 3), want.narrow(0, 4, 3)})
                  : want;
    EXPECT_TRUE(torch::equal(b.labels, kept)) << step;
    EXPECT_EQ(b.skipped, step == 1 ? 1 : 0);
    EXPECT_TRUE(torch::equal(b.images.flatten(),
                             kept.to(torch::kFloat32) + 1000.0f * step));
  }
  EXPECT_EQ(loader.pending(), 0);
  EXPECT_EQ(source.calls(), 4 * 3);  // each batch cut into 3 chunks
}

TEST(BatchLoaderTest, ClearDropsWhatWasNotTaken) {
  FakeSource source;
  source.SetOpen(false);
  BatchLoader loader(source, 2, 3);
  loader.Request(0, torch::arange(4), 0);
  loader.Request(1, torch::arange(4), 0);
  EXPECT_EQ(loader.front_tag(), 0);
  loader.Clear();
  EXPECT_EQ(loader.pending(), 0);
  EXPECT_EQ(loader.front_tag(), -1);
  source.SetOpen(true);
  loader.Request(7, torch::tensor({5, 6}), 2);
  EXPECT_EQ(loader.front_tag(), 7);
  const Batch b = loader.Take();
  EXPECT_TRUE(torch::equal(b.labels, torch::tensor({5, 6})));
  EXPECT_TRUE(
      torch::equal(b.images.flatten(), torch::tensor({2005.0f, 2006.0f})));
}

TEST(BatchLoaderTest, DestructorStopsWithRequestsInFlight) {
  FakeSource source;
  {
    BatchLoader loader(source, 2, 8);
    for (int64_t step = 0; step < 8; ++step)
      loader.Request(step, torch::arange(20), 0);
  }  // batches not taken are dropped; the threads stop
  SUCCEED();
}

TEST(BatchLoaderTest, SameBatchWhateverTheThreadCount) {
  testing::ScratchDir dir;
  testing::WriteImageFolder(dir.path(), {"a", "b", "c"}, 3, 30, true);
  SourceOptions o;
  o.dataset = "imagefolder";
  o.data_dir = dir.path();
  o.image_size = 20;
  o.on_corrupt = [](const Status&) {};
  auto folder = ImageFolder::Open(o, Split::kTrain);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  const auto indices = torch::tensor({10, 0, 4, 1, 7, 2, 9});
  const Batch want = (*folder)->Get(indices, 3);
  EXPECT_EQ(want.skipped, 2);  // 0 and 1: bad_text.jpg, bad_truncated.jpg
  for (int threads : {1, 2, 3, 8}) {
    BatchLoader loader(**folder, threads, 2);
    loader.Request(0, indices, 3);
    const Batch got = loader.Take();
    EXPECT_TRUE(torch::equal(got.images, want.images)) << threads;
    EXPECT_TRUE(torch::equal(got.labels, want.labels)) << threads;
    EXPECT_EQ(got.skipped, 2) << threads;
  }
}

}  // namespace
}  // namespace pstrain::data
