#include "wire/compression.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wire/compression_internal.h"
#include "wire/float16.h"

namespace pstrain::wire {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr Codec kAllCodecs[] = {Codec::kRaw,  Codec::kFp16, Codec::kBf16,
                                Codec::kInt8, Codec::kTopK, Codec::kOneBit};

CodecParams Params(uint32_t chunk, double ratio) {
  CodecParams p;
  p.chunk = chunk;
  p.ratio = ratio;
  return p;
}

Bytes EncodeVec(Codec codec, const CodecParams& p, const std::vector<float>& x,
                uint64_t seed = 1) {
  Bytes out(CompressedBytes(codec, p, x.size()));
  EXPECT_EQ(Encode(codec, p, x.data(), x.size(), seed, out.data()), out.size());
  return out;
}

Status ValidateVec(Codec codec, const CodecParams& p, const Bytes& in,
                   size_t n) {
  return Validate(codec, p, in.data(), in.size(), n);
}

// The decoded tensor: DecodeAdd into zeros, after Validate.
std::vector<float> DecodeVec(Codec codec, const CodecParams& p, const Bytes& in,
                             size_t n) {
  const Status s = ValidateVec(codec, p, in, n);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::vector<float> acc(n, 0.0f);
  DecodeAdd(codec, p, in.data(), in.size(), n, 1.0f, acc.data());
  return acc;
}

std::vector<float> Normal(size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> x(n);
  for (float& v : x)
    v = dist(gen);
  return x;
}

// The worked example of share/doc/wire-format.md, "Compressed tensors".
const std::vector<float> kExample = {1.0f, -2.0f, 0.5f, 0.0f};
const CodecParams kExampleParams = Params(2, 0.5);

TEST(CompressionTest, GoldenBytesRaw) {
  const Bytes raw = EncodeVec(Codec::kRaw, kExampleParams, kExample);
  EXPECT_EQ(raw, Bytes({0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0,  //
                        0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x00, 0x00}));
  EXPECT_EQ(DecodeVec(Codec::kRaw, kExampleParams, raw, 4), kExample);
}

TEST(CompressionTest, GoldenBytesFp16AndBf16) {
  const Bytes fp16 = EncodeVec(Codec::kFp16, kExampleParams, kExample);
  EXPECT_EQ(fp16, Bytes({0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38, 0x00, 0x00}));
  const Bytes bf16 = EncodeVec(Codec::kBf16, kExampleParams, kExample);
  EXPECT_EQ(bf16, Bytes({0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f, 0x00, 0x00}));
  EXPECT_EQ(DecodeVec(Codec::kFp16, kExampleParams, fp16, 4), kExample);
  EXPECT_EQ(DecodeVec(Codec::kBf16, kExampleParams, bf16, 4), kExample);
}

TEST(CompressionTest, GoldenBytesInt8) {
  // Scales 2 and 0.5; y = {63.5, -127, 127, 0}. Only y0 is between levels:
  // it rounds up iff u_0 < 0.5, and u_0 is 0.742 for seed 42, 0.113 for 3.
  EXPECT_EQ(EncodeVec(Codec::kInt8, kExampleParams, kExample, 42),
            Bytes({0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x3f,  // scales
                   0x3f, 0x81, 0x7f, 0x00}));  // 63, -127, 127, 0
  const Bytes up = EncodeVec(Codec::kInt8, kExampleParams, kExample, 3);
  EXPECT_EQ(up, Bytes({0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x3f,  //
                       0x40, 0x81, 0x7f, 0x00}));  // 64, -127, 127, 0
  const std::vector<float> want = {64 * (2.0f / 127), -2.0f, 0.5f, 0.0f};
  EXPECT_EQ(DecodeVec(Codec::kInt8, kExampleParams, up, 4), want);
}

TEST(CompressionTest, StochasticDrawIsSplitMix64) {
  // splitmix64 seeded with 0 first returns 0xE220A8397B1DCDAF; u_0 is its
  // top 24 bits over 2^24.
  EXPECT_EQ(internal::StochasticDraw(0, 0), 0xE220A8 * 0x1p-24f);
  EXPECT_NEAR(internal::StochasticDraw(42, 0), 0.741565f, 1e-6f);
  EXPECT_NEAR(internal::StochasticDraw(3, 0), 0.113450f, 1e-6f);
}

TEST(CompressionTest, GoldenBytesTopK) {
  // k = ceil(0.5 * 4) = 2: elements 1 (|-2|) and 0 (|1|), indices ascending.
  const Bytes topk = EncodeVec(Codec::kTopK, kExampleParams, kExample);
  EXPECT_EQ(topk, Bytes({0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,  //
                         0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0}));
  EXPECT_EQ(DecodeVec(Codec::kTopK, kExampleParams, topk, 4),
            std::vector<float>({1.0f, -2.0f, 0.0f, 0.0f}));
}

TEST(CompressionTest, GoldenBytesOneBit) {
  // Scales: mean |x| of {1, -2} is 1.5, of {0.5, 0} 0.25. Only element 1 is
  // negative: bit 1 of the one sign byte.
  const Bytes onebit = EncodeVec(Codec::kOneBit, kExampleParams, kExample);
  EXPECT_EQ(onebit, Bytes({0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x80, 0x3e,  //
                           0x02}));
  EXPECT_EQ(DecodeVec(Codec::kOneBit, kExampleParams, onebit, 4),
            std::vector<float>({1.5f, -1.5f, 0.25f, 0.25f}));
}

TEST(CompressionTest, Fp16AndBf16EqualTheReferenceConversion) {
  std::vector<float> x = Normal(1000, 7, 100.0f);
  x.insert(x.end(), {0.0f, -0.0f, 1e-8f, -3e-5f, 65504.0f, 1e30f});
  const CodecParams p;
  const std::vector<float> half =
      DecodeVec(Codec::kFp16, p, EncodeVec(Codec::kFp16, p, x), x.size());
  const std::vector<float> bf =
      DecodeVec(Codec::kBf16, p, EncodeVec(Codec::kBf16, p, x), x.size());
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    EXPECT_EQ(half[i], HalfToFloat(FloatToHalf(x[i]))) << x[i];
    EXPECT_EQ(bf[i], BFloat16ToFloat(FloatToBFloat16(x[i]))) << x[i];
  }
  EXPECT_EQ(half.back(), 65504.0f);  // saturated, not infinity
  EXPECT_EQ(bf.back(), BFloat16ToFloat(FloatToBFloat16(1e30f)));
}

TEST(CompressionTest, FiniteOverflowSaturates) {
  const std::vector<float> x = {1e5f, -1e5f, 65520.0f, 3.4028235e38f,
                                -3.4028235e38f};
  const CodecParams p;
  const std::vector<float> half =
      DecodeVec(Codec::kFp16, p, EncodeVec(Codec::kFp16, p, x), x.size());
  EXPECT_EQ(half, std::vector<float>(
                      {65504.0f, -65504.0f, 65504.0f, 65504.0f, -65504.0f}));
  const std::vector<float> bf =
      DecodeVec(Codec::kBf16, p, EncodeVec(Codec::kBf16, p, x), x.size());
  EXPECT_EQ(bf[3], BFloat16ToFloat(kBFloat16MaxBits));
  EXPECT_EQ(bf[4], -BFloat16ToFloat(kBFloat16MaxBits));
}

TEST(CompressionTest, Int8IsUnbiasedAndWithinOneStep) {
  const size_t n = 1000;
  const CodecParams p = Params(64, 0.01);
  const std::vector<float> x = Normal(n, 11);
  // The scales do not depend on the seed: one step per chunk.
  const Bytes first = EncodeVec(Codec::kInt8, p, x, 0);
  std::vector<float> step(n);
  for (size_t i = 0; i < n; ++i)
    step[i] = internal::LoadF32(first.data() + 4 * (i / p.chunk)) / 127;
  const int seeds = 2000;
  std::vector<double> mean(n, 0.0);
  for (int s = 0; s < seeds; ++s) {
    const Bytes b = EncodeVec(Codec::kInt8, p, x, 1000 + s);
    const std::vector<float> d = DecodeVec(Codec::kInt8, p, b, n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_LE(std::fabs(d[i] - x[i]), step[i] * (1 + 1e-5f)) << i;
      mean[i] += d[i] / static_cast<double>(seeds);
    }
  }
  // Each decode's error is within a step, so the mean of 2000 has a
  // standard deviation below step / (2 * sqrt(2000)) = 0.011 step.
  for (size_t i = 0; i < n; ++i)
    EXPECT_NEAR(mean[i], x[i], 0.06 * step[i]) << i;
}

TEST(CompressionTest, Int8IsReproducibleFromItsSeed) {
  const std::vector<float> x = Normal(300, 5);
  const CodecParams p = Params(100, 0.01);
  EXPECT_EQ(EncodeVec(Codec::kInt8, p, x, 9), EncodeVec(Codec::kInt8, p, x, 9));
  EXPECT_NE(EncodeVec(Codec::kInt8, p, x, 9),
            EncodeVec(Codec::kInt8, p, x, 10));
}

TEST(CompressionTest, TopKKeepsExactlyTheKLargest) {
  const size_t n = 10007;
  const CodecParams p = Params(256, 0.01);
  const std::vector<float> x = Normal(n, 3);
  const size_t k = TopKCount(p.ratio, n);
  ASSERT_EQ(k, 101u);  // ceil(100.07)
  std::vector<float> mags(n);
  std::transform(x.begin(), x.end(), mags.begin(),
                 [](float v) { return std::fabs(v); });
  std::sort(mags.begin(), mags.end(), std::greater<float>());
  const float threshold = mags[k - 1];  // the k-th largest
  ASSERT_GT(threshold, mags[k]);        // no tie at the boundary

  const std::vector<float> d =
      DecodeVec(Codec::kTopK, p, EncodeVec(Codec::kTopK, p, x), n);
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool large = std::fabs(x[i]) >= threshold;
    EXPECT_EQ(d[i], large ? x[i] : 0.0f) << i;
    kept += large;
  }
  EXPECT_EQ(kept, k);
}

TEST(CompressionTest, TopKBreaksTiesByLowerIndex) {
  const std::vector<float> x = {1.0f, -3.0f, 3.0f, 2.0f, -3.0f, 3.0f};
  const CodecParams p = Params(1, 0.5);  // k = 3 of four tied at 3
  EXPECT_EQ(DecodeVec(Codec::kTopK, p, EncodeVec(Codec::kTopK, p, x), 6),
            std::vector<float>({0, -3.0f, 3.0f, 0, -3.0f, 0}));
}

// The selection by threshold keeps what ranking every element by
// (magnitude, then lower index) keeps, with many ties at the boundary and
// a NaN, which ranks above everything so that it travels to be refused.
TEST(CompressionTest, TopKMatchesRankingWithTies) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> level(-6, 6);
  std::vector<float> x(5000);
  for (float& v : x)
    v = 0.5f * static_cast<float>(level(rng));
  x[4321] = std::nanf("");
  for (double ratio : {0.001, 0.01, 0.1, 0.3, 0.97, 1.0}) {
    const CodecParams p = Params(256, ratio);
    const size_t k = TopKCount(ratio, x.size());
    std::vector<uint32_t> rank(x.size());
    for (uint32_t i = 0; i < rank.size(); ++i)
      rank[i] = i;
    auto magnitude = [&x](uint32_t i) {
      return std::isnan(x[i]) ? INFINITY : std::fabs(x[i]);
    };
    std::stable_sort(rank.begin(), rank.end(), [&](uint32_t a, uint32_t b) {
      return magnitude(a) > magnitude(b);
    });
    std::set<uint32_t> expected(rank.begin(), rank.begin() + k);
    const Bytes coded = EncodeVec(Codec::kTopK, p, x);
    std::vector<uint32_t> got(k);
    for (size_t j = 0; j < k; ++j)
      got[j] = internal::LoadU32(coded.data() + 4 * j);
    EXPECT_EQ(got, std::vector<uint32_t>(expected.begin(), expected.end()))
        << "ratio " << ratio;
  }
}

TEST(CompressionTest, TopKCount) {
  EXPECT_EQ(TopKCount(0.01, 100000), 1000u);
  EXPECT_EQ(TopKCount(0.07, 100), 7u);  // 7.000000000000001 in double
  EXPECT_EQ(TopKCount(0.071, 100), 8u);
  EXPECT_EQ(TopKCount(1e-9, 10), 1u);  // at least one
  EXPECT_EQ(TopKCount(1.0, 10), 10u);
  EXPECT_EQ(TopKCount(0.5, 0), 0u);
  EXPECT_EQ(TopKCount(0.3, 10), 3u);
}

TEST(CompressionTest, OneBitDecodesToSignTimesChunkMean) {
  const size_t n = 1001;  // a short last chunk and a partial last byte
  const CodecParams p = Params(100, 0.01);
  const std::vector<float> x = Normal(n, 4);
  const std::vector<float> d =
      DecodeVec(Codec::kOneBit, p, EncodeVec(Codec::kOneBit, p, x), n);
  for (size_t first = 0; first < n; first += p.chunk) {
    const size_t last = std::min(n, first + p.chunk);
    double sum = 0;
    for (size_t i = first; i < last; ++i)
      sum += std::fabs(x[i]);
    const auto mean = static_cast<float>(sum / (last - first));
    for (size_t i = first; i < last; ++i)
      ASSERT_EQ(d[i], x[i] < 0 ? -mean : mean) << i;
  }
}

TEST(CompressionTest, DecodeAddAddsAlphaTimesDecoded) {
  const std::vector<float> x = Normal(37, 8);
  const CodecParams p = Params(5, 0.2);
  for (Codec codec : kAllCodecs) {
    const Bytes b = EncodeVec(codec, p, x);
    const std::vector<float> d = DecodeVec(codec, p, b, x.size());
    std::vector<float> acc(x.size(), 10.0f);
    DecodeAdd(codec, p, b.data(), b.size(), x.size(), -0.5f, acc.data());
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(acc[i], 10.0f - 0.5f * d[i], 1e-6f) << CodecName(codec);
  }
}

// Rows are decoded where they were read (ps/engine/push_reader.cc): the record
// at the front of a buffer of 4n bytes becomes the n floats DecodeAdd gives,
// bit for bit, -0 and subnormals included.
TEST(CompressionTest, DecodeInPlaceGivesTheDecodedFloats) {
  std::vector<float> x = Normal(37, 9);
  x[0] = -0.0f;
  x[5] = 1e-7f;       // an fp16 subnormal
  x[36] = -3.0e-41f;  // a bf16 subnormal
  for (Codec codec : {Codec::kRaw, Codec::kFp16, Codec::kBf16}) {
    const Bytes b = EncodeVec(codec, {}, x);
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      want[i] = codec == Codec::kRaw ? x[i]
                : codec == Codec::kFp16
                    ? HalfToFloat(FloatToHalf(x[i]))
                    : BFloat16ToFloat(FloatToBFloat16(x[i]));
    }
    Bytes buf(4 * x.size(), 0xAB);
    std::copy(b.begin(), b.end(), buf.begin());
    DecodeInPlace(codec, buf.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      float got;
      std::memcpy(&got, buf.data() + 4 * i, 4);
      EXPECT_EQ(FloatBits(got), FloatBits(want[i]))
          << CodecName(codec) << " at " << i;
    }
  }
}

TEST(CompressionTest, ValidateAcceptsEveryEncodedSize) {
  const CodecParams p = Params(8, 0.3);
  for (size_t n : {0, 1, 7, 8, 9, 16, 17, 255, 1000}) {
    const std::vector<float> x = Normal(n, static_cast<uint32_t>(n));
    for (Codec codec : kAllCodecs) {
      const Status s = ValidateVec(codec, p, EncodeVec(codec, p, x), n);
      EXPECT_TRUE(s.ok()) << CodecName(codec) << " n " << n << ": "
                          << s.ToString();
    }
  }
}

// A copy of `b` with the 4 bytes at `offset` replaced by `bits`.
Bytes WithU32(Bytes b, size_t offset, uint32_t bits) {
  internal::StoreU32(b.data() + offset, bits);
  return b;
}

struct BadRecord {
  Codec codec;
  Bytes bytes;
  size_t n;
  std::string message;  // the whole Status message
};

// One record per malformed case, each derived from the worked example.
std::vector<BadRecord> MalformedCases() {
  const CodecParams& p = kExampleParams;
  const Bytes fp16 = EncodeVec(Codec::kFp16, p, kExample);
  const Bytes bf16 = EncodeVec(Codec::kBf16, p, kExample);
  const Bytes int8 = EncodeVec(Codec::kInt8, p, kExample);
  const Bytes topk = EncodeVec(Codec::kTopK, p, kExample);  // indices 0, 1
  const Bytes onebit = EncodeVec(Codec::kOneBit, p, kExample);
  const uint32_t nan = 0x7FC00000, inf = 0x7F800000, minus_two = 0xC0000000;
  Bytes int8_min = int8;
  int8_min[8 + 3] = 0x80;
  Bytes padded = onebit;
  padded[8] |= 0x10;  // element 4 of 4
  return {
      {Codec::kFp16, Bytes(fp16.begin(), fp16.end() - 2), 4,
       "fp16: 6 bytes for 4 elements, expected 8"},
      {Codec::kInt8, Bytes(int8.begin(), int8.end() - 1), 4,
       "int8: 11 bytes for 4 elements, expected 12 (chunk 2)"},
      {Codec::kTopK, topk, 5,  // k = 3 for 5 elements
       "topk: 16 bytes for 5 elements, expected 24 (ratio 0.5, k 3)"},
      {Codec::kTopK, WithU32(topk, 4, 7), 4,
       "topk: index 7 at 1 is out of range: the tensor has 4 elements"},
      {Codec::kTopK, WithU32(topk, 4, 0), 4,
       "topk: index 0 at 1 is repeated: the index before it is the same"},
      {Codec::kTopK, WithU32(WithU32(topk, 0, 3), 4, 1), 4,
       "topk: index 1 at 1 is out of order: below 3 before it (indices must "
       "ascend)"},
      {Codec::kInt8, WithU32(int8, 4, nan), 4,
       "int8: scale of chunk 1 is nan, expected a finite value"},
      {Codec::kOneBit, WithU32(onebit, 0, inf), 4,
       "onebit: scale of chunk 0 is inf, expected a finite value"},
      {Codec::kInt8, WithU32(int8, 0, minus_two), 4,
       "int8: scale of chunk 0 is -2, expected >= 0"},
      {Codec::kFp16, WithU32(fp16, 4, 0x00007C00), 4,
       "fp16: value at 2 is inf, expected a finite value"},
      {Codec::kBf16, WithU32(bf16, 0, 0xC0007FC0), 4,
       "bf16: value at 0 is nan, expected a finite value"},
      {Codec::kTopK, WithU32(topk, 12, 0xFF800000), 4,
       "topk: value at 1 is -inf, expected a finite value"},
      {Codec::kInt8, int8_min, 4,
       "int8: value -128 at 3 is out of range, expected -127..127"},
      {Codec::kOneBit, padded, 4,
       "onebit: padding bits 0x10 of the last byte are set, expected 0"},
      {static_cast<Codec>(6), fp16, 4, "codec 6 is unknown, expected 0..5"},
  };
}

TEST(CompressionTest, RefusesEachMalformedCaseWithItsOwnMessage) {
  const CodecParams& p = kExampleParams;
  const std::vector<BadRecord> cases = MalformedCases();
  std::set<std::string> messages;
  for (const BadRecord& c : cases) {
    const Status s = ValidateVec(c.codec, p, c.bytes, c.n);
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << c.message;
    EXPECT_EQ(s.message(), c.message);
    messages.insert(s.message());
  }
  EXPECT_EQ(messages.size(), cases.size());  // no two cases read the same
  const Status big =
      Validate(Codec::kFp16, p, nullptr, 0, (size_t{1} << 32) + 1);
  EXPECT_EQ(big.message(),
            "fp16: 4294967297 elements exceed the limit of 4294967296");
}

TEST(CompressionTest, NonFiniteGradientsGiveRecordsValidateRefuses) {
  const CodecParams p = Params(4, 0.25);
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    std::vector<float> x = Normal(16, 2);
    x[5] = bad;
    for (Codec codec : kAllCodecs) {
      if (codec == Codec::kRaw)  // raw data is checked for length only
        continue;
      const Status s = ValidateVec(codec, p, EncodeVec(codec, p, x), x.size());
      EXPECT_EQ(s.code(), StatusCode::kCorruption)
          << CodecName(codec) << " " << bad;
    }
  }
}

TEST(CompressionTest, CheckCodecParams) {
  EXPECT_TRUE(CheckCodecParams(Codec::kInt8, Params(1, 0.01)).ok());
  EXPECT_TRUE(CheckCodecParams(Codec::kTopK, Params(0, 1.0)).ok());
  EXPECT_TRUE(CheckCodecParams(Codec::kFp16, Params(0, 0.0)).ok());
  EXPECT_EQ(CheckCodecParams(Codec::kOneBit, Params(0, 0.01)).ToString(),
            "invalid argument: compress chunk is 0, expected >= 1 elements");
  for (double bad : {0.0, -0.5, 1.5, static_cast<double>(NAN)}) {
    const Status s = CheckCodecParams(Codec::kTopK, Params(256, bad));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("expected 0 < ratio <= 1"), std::string::npos);
  }
  EXPECT_EQ(CheckCodecParams(static_cast<Codec>(9), CodecParams()).message(),
            "codec 9 is unknown, expected 0..5");
}

TEST(CompressionTest, EncodedSizesAgainstRaw) {
  const size_t n = 100000;
  const double raw =
      static_cast<double>(CompressedBytes(Codec::kRaw, CodecParams(), n));
  auto ratio = [&](Codec codec, const CodecParams& p) {
    return static_cast<double>(CompressedBytes(codec, p, n)) / raw;
  };
  EXPECT_EQ(raw, 400000);
  EXPECT_LE(ratio(Codec::kFp16, CodecParams()), 0.51);
  EXPECT_LE(ratio(Codec::kBf16, CodecParams()), 0.51);
  EXPECT_LE(ratio(Codec::kInt8, Params(256, 0.01)), 0.27);
  EXPECT_LE(ratio(Codec::kTopK, Params(256, 0.01)), 0.03);
  EXPECT_LE(ratio(Codec::kOneBit, Params(256, 0.01)), 0.05);
  // The exact figures: 391 chunks of 256.
  EXPECT_EQ(CompressedBytes(Codec::kInt8, Params(256, 0.01), n), 4 * 391 + n);
  EXPECT_EQ(CompressedBytes(Codec::kTopK, Params(256, 0.01), n), 8000u);
  EXPECT_EQ(CompressedBytes(Codec::kOneBit, Params(256, 0.01), n),
            4 * 391 + 12500u);
}

}  // namespace
}  // namespace pstrain::wire
