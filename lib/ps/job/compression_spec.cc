#include "ps/job/compression_spec.h"

#include <cstdlib>
#include <sstream>

namespace pstrain::ps {

namespace {

Result<double> ParseRatio(const std::string& text) {
  if (text.empty())
    return InvalidArgument("no ratio");
  char* end = nullptr;
  const double r = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !(r > 0 && r <= 1))
    return InvalidArgument("bad ratio");
  return r;
}

Status ParsePush(const std::string& text, CompressionSpec* c) {
  static const std::pair<const char*, wire::Codec> kNames[] = {
      {"none", wire::Codec::kRaw},
      {"fp16", wire::Codec::kFp16},
      {"bf16", wire::Codec::kBf16},
      {"int8", wire::Codec::kInt8},
      {"onebit", wire::Codec::kOneBit}};
  for (const auto& [name, codec] : kNames) {
    if (text == name) {
      c->push = codec;
      return Status::Ok();
    }
  }
  if (text.rfind("topk:", 0) == 0) {
    auto ratio = ParseRatio(text.substr(5));
    if (ratio.ok()) {
      c->push = wire::Codec::kTopK;
      c->params.ratio = *ratio;
      return Status::Ok();
    }
  }
  return InvalidArgument("--compression '" + text +
                         "': expected none, fp16, bf16, int8, topk:R with 0 "
                         "< R <= 1, or onebit");
}

Status ParsePull(const std::string& text, CompressionSpec* c) {
  if (text == "none" || text == "fp16" || text == "bf16") {
    c->pull = text == "none"   ? wire::Codec::kRaw
              : text == "fp16" ? wire::Codec::kFp16
                               : wire::Codec::kBf16;
    return Status::Ok();
  }
  return InvalidArgument("--pull_compression '" + text +
                         "': expected none, fp16 or bf16");
}

bool Compressible(const CompressionSpec& c, bool trained, const at::Tensor& t) {
  return trained && t.scalar_type() == at::kFloat &&
         t.nbytes() >= c.min_bytes && t.nbytes() > 0;
}

}  // namespace

Result<CompressionSpec> CompressionOf(const JobSpec& spec) {
  CompressionSpec c;
  PS_RETURN_IF_ERROR(ParsePush(spec.compression, &c));
  PS_RETURN_IF_ERROR(ParsePull(spec.pull_compression, &c));
  if (spec.error_feedback != "on" && spec.error_feedback != "off") {
    return InvalidArgument("--error_feedback '" + spec.error_feedback +
                           "': expected on or off");
  }
  c.error_feedback = spec.error_feedback == "on";
  if (spec.compress_chunk < 1 || spec.compress_chunk > UINT32_MAX) {
    return InvalidArgument("--compress_chunk " +
                           std::to_string(spec.compress_chunk) +
                           ": expected 1..4294967295");
  }
  c.params.chunk = static_cast<uint32_t>(spec.compress_chunk);
  c.min_bytes =
      static_cast<uint64_t>(std::max<int64_t>(0, spec.compress_min_bytes));
  PS_RETURN_IF_ERROR(wire::CheckCodecParams(c.push, c.params));
  return c;
}

std::string CompressionName(wire::Codec codec,
                            const wire::CodecParams& params) {
  if (codec == wire::Codec::kRaw)
    return "none";
  if (codec != wire::Codec::kTopK)
    return wire::CodecName(codec);
  std::ostringstream s;
  s << "topk:" << params.ratio;
  return s.str();
}

wire::Codec PushCodecOf(const CompressionSpec& c, bool trained,
                        const at::Tensor& t) {
  return Compressible(c, trained, t) ? c.push : wire::Codec::kRaw;
}

wire::Codec PullCodecOf(const CompressionSpec& c, bool trained,
                        const at::Tensor& t) {
  return Compressible(c, trained, t) ? c.pull : wire::Codec::kRaw;
}

wire::Codec PushRowsCodecOf(const CompressionSpec& c, const at::Tensor& table) {
  const bool per_element =
      c.push == wire::Codec::kFp16 || c.push == wire::Codec::kBf16;
  return per_element && table.scalar_type() == at::kFloat ? c.push
                                                          : wire::Codec::kRaw;
}

wire::Codec PullRowsCodecOf(const CompressionSpec& c, const at::Tensor& table) {
  return table.scalar_type() == at::kFloat ? c.pull : wire::Codec::kRaw;
}

}  // namespace pstrain::ps
