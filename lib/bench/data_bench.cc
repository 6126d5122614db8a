#include "bench/data_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "data/batch_loader.h"
#include "data/image_decode.h"
#include "data/image_folder.h"
#include "data/source.h"

namespace pstrain::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Phase {
  int64_t images = 0;
  int64_t skipped = 0;
  double seconds = 0;
  uint64_t bytes = 0;
};

json ToJson(const Phase& p, int threads) {
  const double s = p.seconds > 0 ? p.seconds : 1e-9;
  json j = {{"images", p.images},
            {"seconds", p.seconds},
            {"images_per_second", p.images / s},
            {"images_per_second_per_thread", p.images / s / threads}};
  if (p.bytes > 0)
    j["bytes_per_second"] = static_cast<double>(p.bytes) / s;
  return j;
}

// Whether a phase that has done `done` samples since `start` goes on.
bool GoOn(const DataBenchOptions& o, int64_t done, Clock::time_point start) {
  if (o.samples > 0)
    return done < o.samples;
  return std::chrono::duration<double>(Clock::now() - start).count() <
         o.seconds;
}

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Reads the first `count` files of `folder` twice (the second pass, from
// the page cache, is timed).
Result<Phase> ReadFiles(const data::ImageFolder& folder, int64_t count,
                        std::vector<std::string>* bytes) {
  Phase p;
  for (int pass = 0; pass < 2; ++pass) {
    bytes->clear();
    p.bytes = 0;
    const auto start = Clock::now();
    for (int64_t i = 0; i < count; ++i) {
      PS_ASSIGN_OR_RETURN(std::string b, data::ReadFileBytes(folder.path(i)));
      p.bytes += b.size();
      bytes->push_back(std::move(b));
    }
    p.seconds = Since(start);
  }
  p.images = count;
  return p;
}

// Full-size decodes from memory on `threads` threads, cycling over `bytes`.
Result<Phase> Decode(const DataBenchOptions& o, const data::ImageFolder& folder,
                     const std::vector<std::string>& bytes) {
  std::atomic<int64_t> next{0};
  std::mutex mu;
  Status failure;
  const auto start = Clock::now();
  auto work = [&] {
    for (;;) {
      const int64_t k = next.fetch_add(1);
      if (!GoOn(o, k, start))
        return;
      const size_t f = static_cast<size_t>(k) % bytes.size();
      auto image = data::DecodeImage(folder.path(f), bytes[f]);
      if (!image.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        failure = image.status();
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t)
    threads.emplace_back(work);
  for (auto& t : threads)
    t.join();
  PS_RETURN_IF_ERROR(failure);
  Phase p;
  p.seconds = Since(start);
  // Every thread overshoots by one ticket when it stops.
  p.images = o.samples > 0 ? o.samples : next.load() - o.threads;
  return p;
}

// Batches of Source::Get through a BatchLoader of o.threads threads.
Phase Transform(const DataBenchOptions& o, const data::Source& source) {
  const int64_t n = source.size();
  const int64_t batch = std::min<int64_t>(32, n);
  data::BatchLoader loader(source, o.threads, 2);
  Phase p;
  int64_t requested = 0, step = 0;
  const auto start = Clock::now();
  auto request = [&] {
    const int64_t b =
        o.samples > 0 ? std::min(batch, o.samples - requested) : batch;
    loader.Request(step, (torch::arange(b) + step * batch) % n, 0);
    requested += b;
    ++step;
  };
  while (loader.pending() < 2 && GoOn(o, requested, start))
    request();
  while (loader.pending() > 0) {
    const data::Batch b = loader.Take();
    p.images += b.images.size(0) + b.skipped;
    p.skipped += b.skipped;
    if (GoOn(o, requested, start))
      request();
  }
  p.seconds = Since(start);
  return p;
}

}  // namespace

Result<json> RunDataBench(const DataBenchOptions& o) {
  if (o.threads < 1 || o.samples < 0 || o.files < 1 ||
      (o.samples == 0 && !(o.seconds > 0))) {
    return InvalidArgument(
        "bench data: expected --data_threads >= 1, --samples >= 0, "
        "--files >= 1 and --seconds > 0");
  }
  at::set_num_threads(1);
  data::SourceOptions so;
  so.dataset = o.dataset;
  so.data_dir = o.data_dir;
  so.image_size = o.image_size;
  PS_ASSIGN_OR_RETURN(auto train, data::OpenSource(so, data::Split::kTrain));
  PS_ASSIGN_OR_RETURN(auto eval, data::OpenSource(so, data::Split::kTest));
  json r = {{"dataset", o.dataset},
            {"data_dir", o.data_dir},
            {"image_size", train->shape().height},
            {"threads", o.threads}};
  const auto* folder = dynamic_cast<const data::ImageFolder*>(train.get());
  double decode_rate = 0;
  if (folder != nullptr) {
    const int64_t count = std::min(o.files, folder->size());
    std::vector<std::string> bytes;
    PS_ASSIGN_OR_RETURN(Phase read, ReadFiles(*folder, count, &bytes));
    PS_ASSIGN_OR_RETURN(Phase decode, Decode(o, *folder, bytes));
    r["files"] = count;
    r["mean_file_bytes"] = static_cast<double>(read.bytes) / count;
    r["read"] = ToJson(read, 1);
    r["decode"] = ToJson(decode, o.threads);
    decode_rate = decode.images / std::max(decode.seconds, 1e-9);
  }
  const Phase t = Transform(o, *train);
  r["train"] = ToJson(t, o.threads);
  r["train"]["skipped"] = t.skipped;
  const Phase e = Transform(o, *eval);
  r["eval"] = ToJson(e, o.threads);
  r["eval"]["skipped"] = e.skipped;
  if (decode_rate > 0)
    r["train_over_decode"] = t.images / std::max(t.seconds, 1e-9) / decode_rate;
  return r;
}

}  // namespace pstrain::bench
