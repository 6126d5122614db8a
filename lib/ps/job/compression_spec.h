#pragma once
// CompressionSpec: the job's --compression, --compress_chunk,
// --error_feedback, --compress_min_bytes and --pull_compression, parsed,
// and the one rule both ends of a connection apply to learn which codec a
// key travels in, so that the codec never has to be negotiated: a push's
// descriptor names it, and the server refuses any other
// (wire/compression.h has the codecs and their sources).

#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

#include "ps/job/job_spec.h"
#include "util/result.h"
#include "wire/compression.h"

namespace pstrain::ps {

struct CompressionSpec {
  wire::Codec push = wire::Codec::kRaw;  // --compression
  wire::CodecParams params;              // chunk, topk's ratio
  /// Whether workers carry what int8, topk and onebit leave out (fp16 and
  /// bf16 round to nearest and carry nothing).
  bool error_feedback = true;
  uint64_t min_bytes = 4096;             // smaller tensors travel raw
  wire::Codec pull = wire::Codec::kRaw;  // --pull_compression
};

/// Parses the job's fields. kInvalidArgument naming the flag and what was
/// expected: "--compression 'topk:2': expected none, fp16, bf16, int8,
/// topk:R with 0 < R <= 1, or onebit"; "--pull_compression 'int8':
/// expected none, fp16 or bf16"; "--error_feedback 'maybe': expected on or
/// off".
Result<CompressionSpec> CompressionOf(const JobSpec& spec);

/// "none", "fp16", ..., "topk:0.01" (the flag's text for `codec`).
std::string CompressionName(wire::Codec codec, const wire::CodecParams& params);

/// The codec a push carries tensor `t` in: the job's, for a trained
/// (requires-grad) float32 tensor of at least min_bytes bytes; raw for the
/// rest (buffers, biases and norms, other dtypes).
wire::Codec PushCodecOf(const CompressionSpec& c, bool trained,
                        const at::Tensor& t);
/// The codec a reply carries parameter `t` in, by the same rule with
/// --pull_compression.
wire::Codec PullCodecOf(const CompressionSpec& c, bool trained,
                        const at::Tensor& t);

/// The codec the rows a worker pushes of a row-sparse key (a float32
/// table [rows, row_dim], ps/job/sparse_keys.h) travel in: the job's
/// --compression when it is fp16 or bf16, raw for every other codec and
/// for a table of another dtype. int8, topk and onebit are per-tensor
/// codecs whose error feedback keeps a residual per key; the rows of a
/// push change every step, so a residual of the rows would carry the last
/// batch's rows into rows the next batch does not touch. fp16 and bf16
/// round each element on its own and carry nothing. min_bytes does not
/// apply: a table is large, and the rows of one push (a batch's unique
/// ids) would cross any byte threshold from step to step, changing the
/// codec with them.
wire::Codec PushRowsCodecOf(const CompressionSpec& c, const at::Tensor& table);
/// The codec the rows a server returns of a row-sparse key (the params
/// reply to a push_pull's requests) travel in: --pull_compression (fp16,
/// bf16 or none) for a float32 table, raw for another dtype. A pull of
/// whole tables (a worker's first, or after a reconnect) sends them raw.
wire::Codec PullRowsCodecOf(const CompressionSpec& c, const at::Tensor& table);

/// Whether `codec` leaves something out that error feedback carries.
inline bool IsLossy(wire::Codec codec) {
  return codec == wire::Codec::kInt8 || codec == wire::Codec::kTopK ||
         codec == wire::Codec::kOneBit;
}

}  // namespace pstrain::ps
