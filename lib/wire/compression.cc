// The codec-independent half of wire/compression.h: parameters, sizes,
// the length check and the dispatch to each codec's file.

#include "wire/compression.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "util/check.h"
#include "wire/compression_internal.h"

namespace pstrain::wire {
namespace {

bool IsCodec(Codec codec) {
  return static_cast<uint8_t>(codec) <= kLastCodec;
}

bool IsDense(Codec codec) {
  return codec == Codec::kRaw || codec == Codec::kFp16 || codec == Codec::kBf16;
}

// The caller's own params (the job spec): a bad one is a programmer error.
void CheckParamsOrDie(Codec codec, const CodecParams& params, size_t n) {
  const Status s = CheckCodecParams(codec, params);
  PS_CHECK(s.ok()) << s.ToString();
  PS_CHECK(n <= kMaxCompressedElements) << n << " elements";
}

// What the expected length depends on besides n, for the length error.
std::string ParamsText(Codec codec, const CodecParams& params, size_t n) {
  if (codec == Codec::kInt8 || codec == Codec::kOneBit)
    return " (chunk " + std::to_string(params.chunk) + ")";
  if (codec == Codec::kTopK) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%g", params.ratio);
    return std::string(" (ratio ") + ratio + ", k " +
           std::to_string(TopKCount(params.ratio, n)) + ")";
  }
  return "";
}

}  // namespace

namespace internal {

std::string FloatText(float v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}

Status CodecError(Codec codec, const std::string& what) {
  return Corruption(std::string(CodecName(codec)) + ": " + what);
}

Status CheckScales(Codec codec, const uint8_t* scales, size_t chunks) {
  for (size_t c = 0; c < chunks; ++c) {
    const float s = LoadF32(scales + 4 * c);
    const std::string where = "scale of chunk " + std::to_string(c) + " is ";
    // A NaN or infinite scale would turn its whole chunk into NaN or Inf
    // in the accumulator; a negative one is never encoded.
    if (!std::isfinite(s))
      return CodecError(codec,
                        where + FloatText(s) + ", expected a finite value");
    if (s < 0)
      return CodecError(codec, where + FloatText(s) + ", expected >= 0");
  }
  return Status::Ok();
}

}  // namespace internal

Status CheckCodecParams(Codec codec, const CodecParams& params) {
  if (!IsCodec(codec)) {
    return InvalidArgument("codec " + std::to_string(static_cast<int>(codec)) +
                           " is unknown, expected 0.." +
                           std::to_string(kLastCodec));
  }
  if ((codec == Codec::kInt8 || codec == Codec::kOneBit) && params.chunk < 1)
    return InvalidArgument("compress chunk is 0, expected >= 1 elements");
  // Written so that NaN fails too.
  if (codec == Codec::kTopK && !(params.ratio > 0 && params.ratio <= 1)) {
    return InvalidArgument("topk ratio " + std::to_string(params.ratio) +
                           " is out of range, expected 0 < ratio <= 1");
  }
  return Status::Ok();
}

size_t TopKCount(double ratio, size_t n) {
  if (n == 0)
    return 0;
  double k = ratio * static_cast<double>(n);
  const double nearest = std::round(k);
  if (std::fabs(k - nearest) <= 1e-9 * std::fmax(1.0, k))
    k = nearest;
  const double up = std::ceil(k);
  if (!(up >= 1))  // NaN too; CheckCodecParams keeps it out anyway
    return 1;
  return up >= static_cast<double>(n) ? n : static_cast<size_t>(up);
}

size_t CompressedBytes(Codec codec, const CodecParams& params, size_t n) {
  CheckParamsOrDie(codec, params, n);
  const size_t chunks = internal::ChunkCount(n, params.chunk);
  switch (codec) {
    case Codec::kRaw:
      return 4 * n;
    case Codec::kFp16:
    case Codec::kBf16:
      return 2 * n;
    case Codec::kInt8:
      return 4 * chunks + n;
    case Codec::kTopK:
      return 8 * TopKCount(params.ratio, n);
    case Codec::kOneBit:
      return 4 * chunks + (n + 7) / 8;
  }
  return 0;  // unreachable: CheckParamsOrDie refused the codec
}

size_t Encode(Codec codec, const CodecParams& params, const float* x, size_t n,
              uint64_t seed, uint8_t* out) {
  const size_t bytes = CompressedBytes(codec, params, n);
  if (IsDense(codec)) {
    internal::EncodeDense(codec, x, n, out);
  } else if (codec == Codec::kInt8) {
    internal::EncodeInt8(x, n, params.chunk, seed, out);
  } else if (codec == Codec::kTopK) {
    internal::EncodeTopK(x, n, TopKCount(params.ratio, n), out);
  } else {
    internal::EncodeOneBit(x, n, params.chunk, out);
  }
  return bytes;
}

void DecodeAdd(Codec codec, const CodecParams& params, const uint8_t* in,
               size_t nbytes, size_t n, float alpha, float* acc) {
  PS_CHECK(nbytes == CompressedBytes(codec, params, n))
      << CodecName(codec) << ": " << nbytes << " bytes for " << n
      << " elements; Validate first";
  if (IsDense(codec)) {
    internal::DecodeAddDense(codec, in, n, alpha, acc);
  } else if (codec == Codec::kInt8) {
    internal::DecodeAddInt8(in, n, params.chunk, alpha, acc);
  } else if (codec == Codec::kTopK) {
    internal::DecodeAddTopK(in, TopKCount(params.ratio, n), alpha, acc);
  } else {
    internal::DecodeAddOneBit(in, n, params.chunk, alpha, acc);
  }
}

void DecodeInPlace(Codec codec, uint8_t* buf, size_t n) {
  PS_CHECK(IsDense(codec)) << CodecName(codec) << " is not per element";
  if (codec != Codec::kRaw)
    internal::DecodeDenseInPlace(codec, buf, n);
}

Status Validate(Codec codec, const CodecParams& params, const uint8_t* in,
                size_t nbytes, size_t n) {
  if (!IsCodec(codec)) {
    return Corruption("codec " + std::to_string(static_cast<int>(codec)) +
                      " is unknown, expected 0.." + std::to_string(kLastCodec));
  }
  if (n > kMaxCompressedElements) {
    return internal::CodecError(
        codec, std::to_string(n) + " elements exceed the limit of " +
                   std::to_string(kMaxCompressedElements));
  }
  const size_t want = CompressedBytes(codec, params, n);
  if (nbytes != want) {
    return internal::CodecError(
        codec, std::to_string(nbytes) + " bytes for " + std::to_string(n) +
                   " elements, expected " + std::to_string(want) +
                   ParamsText(codec, params, n));
  }
  if (IsDense(codec))
    return internal::ValidateDense(codec, in, n);
  if (codec == Codec::kInt8)
    return internal::ValidateInt8(in, n, params.chunk);
  if (codec == Codec::kTopK)
    return internal::ValidateTopK(in, n, TopKCount(params.ratio, n));
  return internal::ValidateOneBit(in, n, params.chunk);
}

}  // namespace pstrain::wire
