#include "bench/codec_bench.h"

#include <chrono>
#include <random>

#include "bench/loopback_limits.h"
#include "ps/job/compression_spec.h"
#include "ps/job/job_spec.h"
#include "wire/compression.h"

namespace pstrain::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Runs `op` until `seconds` have passed (at least 3 times); GB/s of `bytes`
// per call.
template <typename Op>
double Rate(uint64_t bytes, double seconds, Op op) {
  op();  // warm: page faults, caches
  int calls = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  while (calls < 3 || elapsed < seconds) {
    op();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return static_cast<double>(bytes) * calls / elapsed / 1e9;
}

}  // namespace

Result<nlohmann::json> RunCodecBench(const std::vector<std::string>& codecs,
                                     size_t elements, double seconds) {
  std::vector<float> x(elements), acc(elements, 0.0f);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x)
    v = normal(rng);
  const uint64_t raw = 4 * static_cast<uint64_t>(elements);
  const double memcpy_gbps = MeasureMemcpy(raw, seconds);
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& name : codecs) {
    if (name.empty())  // --codecs '' asks for none
      continue;
    ps::JobSpec spec;
    spec.compression = name;
    PS_ASSIGN_OR_RETURN(ps::CompressionSpec c, ps::CompressionOf(spec));
    const wire::Codec codec = c.push;
    const size_t n = elements;
    std::vector<uint8_t> coded(wire::CompressedBytes(codec, c.params, n));
    uint64_t seed = 0;
    const double encode = Rate(raw, seconds, [&] {
      wire::Encode(codec, c.params, x.data(), n, seed++, coded.data());
    });
    const double validate = Rate(raw, seconds, [&] {
      (void)wire::Validate(codec, c.params, coded.data(), coded.size(), n);
    });
    const double decode = Rate(raw, seconds, [&] {
      wire::DecodeAdd(codec, c.params, coded.data(), coded.size(), n, 1.0f,
                      acc.data());
    });
    out.push_back({{"codec", name},
                   {"elements", elements},
                   {"raw_bytes", raw},
                   {"coded_bytes", coded.size()},
                   {"fraction", static_cast<double>(coded.size()) / raw},
                   {"encode_gbps", encode},
                   {"validate_gbps", validate},
                   {"decode_gbps", decode},
                   {"memcpy_gbps", memcpy_gbps}});
  }
  return out;
}

}  // namespace pstrain::bench
