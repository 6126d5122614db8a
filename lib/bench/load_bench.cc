#include "bench/load_bench.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "bench/bench_server.h"
#include "report/worker_stats.h"
#include "util/resources.h"
#include "worker/ps_client.h"

namespace pstrain::bench {
namespace {

using Clock = std::chrono::steady_clock;

// One connection: join, push until the deadline (counting acks), leave.
Status PushUntil(const BenchServer& server, int rank, int world_size,
                 Clock::time_point deadline, uint64_t* acked) {
  worker::PsClient client(std::chrono::milliseconds(60000), {});
  PS_RETURN_IF_ERROR(client.Connect("127.0.0.1", server.port()));
  PS_RETURN_IF_ERROR(client.Handshake(rank, world_size).status());
  PS_RETURN_IF_ERROR(client.Register(server.Keys()));
  auto params = torch::zeros_like(server.param());
  auto grads = torch::ones_like(server.param());
  client.Attach({params}, {grads});
  while (Clock::now() < deadline) {
    PS_RETURN_IF_ERROR(client.Push(0));
    ++*acked;
  }
  return client.Done(report::WorkerStats{});
}

}  // namespace

nlohmann::json ToJson(const LoadBenchReport& r) {
  const double s = r.seconds > 0 ? r.seconds : 1;
  return {{"connections", r.connections},
          {"bytes", r.bytes},
          {"seconds", r.seconds},
          {"acked_pushes", r.acked_pushes},
          {"applied_pushes", r.applied_pushes},
          {"server_version", r.server_version},
          {"refused_pushes", r.refused_pushes},
          {"exact", r.exact()},
          {"pushes_per_second", r.acked_pushes / s},
          {"gbps", r.acked_pushes * static_cast<double>(r.bytes) / s / 1e9},
          {"rss_after_quarter_bytes", r.rss_after_quarter},
          {"peak_rss_bytes", r.peak_rss}};
}

Result<LoadBenchReport> RunLoadBench(const LoadBenchOptions& o) {
  if (o.connections < 1 || o.bytes < 4 || !(o.seconds > 0)) {
    return InvalidArgument(
        "bench load: expected --connections >= 1, "
        "--bytes >= 4 and --seconds > 0");
  }
  BenchServer server(o.bytes, o.connections);
  PS_RETURN_IF_ERROR(server.Start());
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(o.seconds));
  std::vector<uint64_t> acked(o.connections, 0);
  std::vector<Status> statuses(o.connections);
  std::vector<std::thread> threads;
  for (int c = 0; c < o.connections; ++c) {
    threads.emplace_back([&, c] {
      statuses[c] =
          PushUntil(server, c + 1, o.connections + 1, deadline, &acked[c]);
    });
  }
  LoadBenchReport r;
  std::this_thread::sleep_until(
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(o.seconds / 4)));
  r.rss_after_quarter = PeakRssBytes();
  for (auto& t : threads)
    t.join();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const Status& s : statuses)
    PS_RETURN_IF_ERROR(s);
  PS_RETURN_IF_ERROR(server.Join());
  r.connections = o.connections;
  r.bytes = o.bytes;
  for (uint64_t a : acked)
    r.acked_pushes += a;
  r.applied_pushes = server.pushes();
  r.server_version = server.version();
  r.refused_pushes = server.Stats().refused_pushes;
  r.peak_rss = PeakRssBytes();
  return r;
}

}  // namespace pstrain::bench
