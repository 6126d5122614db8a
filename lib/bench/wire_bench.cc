#include "bench/wire_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>

#include <asio/io_context.hpp>
#include <torch/torch.h>

#include "bench/bench_server.h"
#include "bench/codec_bench.h"
#include "bench/loopback_limits.h"
#include "bench/start_line.h"
#include "net/shm_wait.h"
#include "ps/job/tensor_codec.h"
#include "ps/service/service.h"
#include "ps/store/parameter_server.h"
#include "report/worker_stats.h"
#include "worker/ps_client.h"

namespace pstrain::bench {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct CaseResult {
  std::vector<double> latencies_us;  // every op of every worker
  double elapsed_s = 0;
  uint64_t ops = 0;
  // How the shared-memory ends waited over the timed ops (process totals,
  // taken by the first worker around its loop, so every worker's and the
  // server's ops of the case are in them).
  net::ShmWaitCounts worker_waits, server_waits;
};

net::ShmWaitCounts Minus(net::ShmWaitCounts a, const net::ShmWaitCounts& b) {
  a.ops -= b.ops;
  a.looks -= b.looks;
  a.yields -= b.yields;
  a.sleeps -= b.sleeps;
  return a;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty())
    return 0;
  size_t i =
      std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return v[i];
}

// One op of a worker: the request and its reply. `*version`: the newest
// the worker has, which a sync push must name.
Status RunOp(worker::PsClient& client, const std::string& op,
             uint64_t* version) {
  if (op == "push")
    return client.Push(*version);
  Result<uint64_t> v =
      op == "pull" ? client.Pull(*version) : client.PushPull(*version);
  if (v.ok())
    *version = *v;
  return v.status();
}

// One worker thread's part of a case: join, then for each op warm up, wait
// for the others and time ops until the deadline; leave.
Status WorkerLoop(const BenchServer& server, int rank, int world_size,
                  const std::vector<std::string>& ops, double seconds,
                  const std::string& transport, StartLine* line,
                  std::vector<CaseResult>* results) {
  worker::PsClient client(milliseconds(30000), {});
  PS_RETURN_IF_ERROR(client.Connect("127.0.0.1", server.port()));
  PS_RETURN_IF_ERROR(client.Handshake(rank, world_size).status());
  PS_ASSIGN_OR_RETURN(std::string chosen, client.UseTransport(transport));
  if (transport == "shm" && chosen.find("shared memory") == std::string::npos)
    return Unavailable("bench wire --transport shm: " + chosen);
  PS_RETURN_IF_ERROR(client.Register(server.Keys()));
  auto params = torch::zeros_like(server.param());
  auto grads = torch::ones_like(server.param());
  client.Attach({params}, {grads});
  uint64_t version = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    for (int w = 0; w < 3; ++w)
      PS_RETURN_IF_ERROR(RunOp(client, ops[i], &version));
    if (!line->Arrive())
      return Unavailable("another worker of the case failed");
    CaseResult& r = (*results)[i];
    const net::ShmWaitCounts worker0 = net::ShmWaitTotals(false),
                             server0 = net::ShmWaitTotals(true);
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration<double>(seconds);
    while (Clock::now() < deadline || r.ops < 5) {
      auto t0 = Clock::now();
      PS_RETURN_IF_ERROR(RunOp(client, ops[i], &version));
      r.latencies_us.push_back(
          std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      ++r.ops;
    }
    r.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (rank == 1) {
      r.worker_waits = Minus(net::ShmWaitTotals(false), worker0);
      r.server_waits = Minus(net::ShmWaitTotals(true), server0);
    }
  }
  return client.Done(report::WorkerStats{});
}

// All ops for one size and worker count: one server, `workers` threads.
Result<std::vector<CaseResult>> RunCases(ps::Mode mode, uint64_t bytes,
                                         int workers,
                                         const std::vector<std::string>& ops,
                                         double seconds,
                                         const std::string& transport) {
  BenchServer server(bytes, workers, transport, mode);
  PS_RETURN_IF_ERROR(server.Start());
  std::vector<std::vector<CaseResult>> per_worker(
      workers, std::vector<CaseResult>(ops.size()));
  std::vector<Status> statuses(workers);
  StartLine line(workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      statuses[w] = WorkerLoop(server, w + 1, workers + 1, ops, seconds,
                               transport, &line, &per_worker[w]);
      if (!statuses[w].ok())
        line.Fail();
    });
  }
  for (auto& t : threads)
    t.join();
  for (const Status& s : statuses)
    PS_RETURN_IF_ERROR(s);
  PS_RETURN_IF_ERROR(server.Join());
  std::vector<CaseResult> merged(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    for (const auto& w : per_worker) {
      const CaseResult& r = w[i];
      merged[i].latencies_us.insert(merged[i].latencies_us.end(),
                                    r.latencies_us.begin(),
                                    r.latencies_us.end());
      merged[i].ops += r.ops;
      merged[i].elapsed_s = std::max(merged[i].elapsed_s, r.elapsed_s);
      merged[i].worker_waits += r.worker_waits;
      merged[i].server_waits += r.server_waits;
    }
  }
  return merged;
}

// One end's waits per operation of the case (a push_pull is one op, of
// two reads and writes or more on each end).
nlohmann::json WaitsJson(const net::ShmWaitCounts& c, uint64_t ops) {
  const double n = std::max<uint64_t>(ops, 1);
  return {{"looks_per_op", c.looks / n},
          {"yields_per_op", c.yields / n},
          {"sleeps_per_op", c.sleeps / n},
          {"stream_ops_per_op", c.ops / n}};
}

nlohmann::json CaseJson(const std::string& op, uint64_t bytes, int workers,
                        const std::string& transport, const CaseResult& r,
                        const nlohmann::json& limit) {
  const double moved = (op == "push_pull" ? 2.0 : 1.0) * bytes;
  const double median = Percentile(r.latencies_us, 0.5);
  const double effective = moved / (median * 1e-6) / 1e9;  // one op alone
  const double aggregate = moved * r.ops / r.elapsed_s / 1e9;
  const double tcp = limit["tcp_gbps"], mem = limit["memcpy_gbps"];
  const double rtt = limit["tcp_round_trip_us"];
  return {{"op", op},
          {"bytes", bytes},
          {"workers", workers},
          {"transport", transport},
          {"ops", r.ops},
          {"median_us", median},
          {"p99_us", Percentile(r.latencies_us, 0.99)},
          {"gbps", effective},
          {"aggregate_gbps", aggregate},
          {"limit_gbps", tcp},
          {"fraction_of_limit", effective / tcp},
          {"memcpy_gbps", mem},
          {"fraction_of_memcpy", effective / mem},
          {"tcp_round_trip_us", rtt},
          {"fraction_of_tcp_round_trip", median / rtt},
          {"worker_waits", WaitsJson(r.worker_waits, r.ops)},
          {"server_waits", WaitsJson(r.server_waits, r.ops)}};
}

Result<nlohmann::json> MeasureLimits(uint64_t bytes, double seconds) {
  PS_ASSIGN_OR_RETURN(double tcp, MeasureTcpStream(bytes, seconds));
  PS_ASSIGN_OR_RETURN(double rtt, MeasureTcpRoundTrip(bytes, seconds / 2));
  return nlohmann::json{{"bytes", bytes},
                        {"tcp_gbps", tcp},
                        {"tcp_round_trip_us", rtt},
                        {"memcpy_gbps", MeasureMemcpy(bytes, seconds / 2)}};
}

}  // namespace

Result<nlohmann::json> RunWireBench(const WireBenchOptions& options) {
  PS_ASSIGN_OR_RETURN(ps::Mode mode, ps::ParseMode(options.mode));
  if (mode != ps::Mode::kSync && mode != ps::Mode::kAsync)
    return InvalidArgument("--mode " + options.mode +
                           ": expected async or sync");
  const bool push_alone = std::find(options.ops.begin(), options.ops.end(),
                                    "push") != options.ops.end();
  if (mode == ps::Mode::kSync && push_alone) {
    return InvalidArgument(
        "--op push with --mode sync: expected pull or push_pull (a worker's "
        "next push waits for every worker's)");
  }
  nlohmann::json cases = nlohmann::json::array(),
                 limits = nlohmann::json::array();
  for (uint64_t bytes : options.sizes) {
    PS_ASSIGN_OR_RETURN(nlohmann::json limit,
                        MeasureLimits(bytes, options.seconds_per_case));
    limits.push_back(limit);
    for (const std::string& transport : options.transports) {
      for (int workers : options.workers) {
        PS_ASSIGN_OR_RETURN(auto results,
                            RunCases(mode, bytes, workers, options.ops,
                                     options.seconds_per_case, transport));
        for (size_t i = 0; i < options.ops.size(); ++i) {
          cases.push_back(CaseJson(options.ops[i], bytes, workers, transport,
                                   results[i], limit));
        }
      }
    }
  }
  PS_ASSIGN_OR_RETURN(nlohmann::json codecs,
                      RunCodecBench(options.codecs, options.codec_elements,
                                    options.seconds_per_case / 4));
  return nlohmann::json{
      {"servers_and_workers",
       "threads of one process, over loopback TCP or shared memory"},
      {"mode", options.mode},
      {"cases", cases},
      {"limits", limits},
      {"codecs", codecs}};
}

Result<std::vector<uint64_t>> ParseSizes(const std::string& list) {
  std::vector<uint64_t> sizes;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t end = 0;
    double value = 0;
    try {
      value = std::stod(item, &end);
    } catch (const std::exception&) {
      return InvalidArgument("--sizes: '" + item +
                             "' is not a size like 4KiB or 1.5MiB");
    }
    const std::string unit = item.substr(end);
    double scale = unit.empty() || unit == "B" ? 1
                   : unit == "KiB"             ? 1024.0
                   : unit == "MiB"             ? 1024.0 * 1024
                   : unit == "GiB"             ? 1024.0 * 1024 * 1024
                                               : -1;
    if (scale < 0 || !(value > 0)) {
      return InvalidArgument("--sizes: '" + item +
                             "' is not a size like 4KiB or 1.5MiB");
    }
    // Whole float32 elements: the benchmark's key is a float tensor.
    uint64_t bytes = static_cast<uint64_t>(std::llround(value * scale / 4)) * 4;
    sizes.push_back(std::max<uint64_t>(4, bytes));
  }
  if (sizes.empty())
    return InvalidArgument("--sizes: expected at least one size");
  return sizes;
}

}  // namespace pstrain::bench
