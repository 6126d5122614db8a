#pragma once
// The codecs of --compression at full speed: encode, validate
// and decode-add of one float32 tensor per codec, on this thread, beside
// memcpy of the same float32 bytes measured in the same run. What a worker
// spends coding a push and a server decoding one.

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace pstrain::bench {

/// For each codec (--compression's names: "none", "fp16", "topk:0.01", ...)
/// a tensor of `elements` normal float32 values is encoded, validated and
/// decoded into an accumulator for about `seconds` each. Returns [{codec,
/// elements, raw_bytes, coded_bytes, fraction (coded / raw), encode_gbps,
/// validate_gbps, decode_gbps, memcpy_gbps}], GB/s being 1e9 float32 bytes
/// (4 x elements) per second. kInvalidArgument for an unknown codec.
Result<nlohmann::json> RunCodecBench(const std::vector<std::string>& codecs,
                                     size_t elements, double seconds);

}  // namespace pstrain::bench
