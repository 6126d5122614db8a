#pragma once
// `pstrain bench wire`: push, pull and push_pull through the real server
// (ps::Service on its own thread) and real clients (one thread and one
// connection per worker) on loopback, beside the limits measured in the same
// run: a plain TCP socket pair streaming messages of the same size one way,
// its round trip, and memcpy of the same size. Each case runs over TCP and
// over shared memory (net/shm_stream.h), as --transport asks. The workers of a
// case start each op's timed window together, so that N workers' aggregate is N
// at once.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace pstrain::bench {

struct WireBenchOptions {
  std::vector<uint64_t> sizes = {4096,    65536,    1 << 20,
                                 5033984, 16 << 20, 64 << 20};
  std::vector<int> workers = {1, 2, 4};
  std::vector<std::string> ops = {"push", "pull", "push_pull"};
  /// How the workers reach the server (--transport's values but auto):
  /// each case runs over each.
  std::vector<std::string> transports = {"tcp", "shm"};
  /// The server's --mode: async (each push stepped alone) or sync (the
  /// step's pushes summed as they come, then stepped; pull and push_pull
  /// only, since a push's next step waits for every worker's).
  std::string mode = "async";
  /// Time spent on each case (size x workers x op), in seconds, after warm-up.
  double seconds_per_case = 1.0;
  /// --compression's codecs, timed on a tensor of codec_elements float32s
  /// (bench/codec_bench.h): by default Net's parameter count. Empty: none.
  std::vector<std::string> codecs = {"none", "fp16",      "bf16",
                                     "int8", "topk:0.01", "onebit"};
  size_t codec_elements = 1199882;
};

/// Runs every case. Returns {"cases": [{op, bytes, workers, transport,
/// median_us, p99_us, gbps, limit_gbps, fraction_of_limit, memcpy_gbps,
/// fraction_of_memcpy, tcp_round_trip_us, fraction_of_tcp_round_trip,
/// worker_waits, server_waits: {looks_per_op, yields_per_op,
/// sleeps_per_op, stream_ops_per_op}}], "mode",
/// "limits": [{bytes, tcp_gbps, memcpy_gbps, tcp_round_trip_us}],
/// "codecs": RunCodecBench's}. GB/s are
/// 1e9 bytes per second; for push_pull the bytes both ways count.
/// kUnavailable / kIOError if loopback sockets fail; kInvalidArgument for
/// a mode other than async or sync, or push with sync.
Result<nlohmann::json> RunWireBench(const WireBenchOptions& options);

/// Parses "4KiB,64KiB,1MiB,4.8MiB" (KiB, MiB, GiB, or plain bytes) into
/// byte counts; kInvalidArgument naming the bad item.
Result<std::vector<uint64_t>> ParseSizes(const std::string& list);

}  // namespace pstrain::bench
