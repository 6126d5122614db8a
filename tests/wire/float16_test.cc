#include "wire/float16.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::wire {
namespace {

// A reference rounding that shares no code with float16.cc: the nearest of
// the format's values, found by search in a table of all of them.
class NearestEven {
 public:
  // `to_float` decodes a code; codes 0..`inf_code` are the non-negative
  // values in increasing order, `inf_code` being infinity, which stands at
  // `inf_value` (the first power of two past the largest finite value) for
  // the rounding.
  NearestEven(std::function<double(uint16_t)> to_float, uint16_t inf_code,
              double inf_value)
      : inf_code_(inf_code) {
    for (uint32_t c = 0; c < inf_code; ++c)
      values_.push_back(to_float(static_cast<uint16_t>(c)));
    values_.push_back(inf_value);
  }

  // The code nearest to finite `x`, ties to the even code; the sign as bit 15.
  uint16_t operator()(float x) const {
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(x));
    if (a >= values_.back())
      return sign | inf_code_;
    const auto it = std::upper_bound(values_.begin(), values_.end(), a);
    const auto hi = static_cast<uint16_t>(it - values_.begin());
    const uint16_t lo = hi - 1;
    // lo + hi and 2a are exact in double: compare them, not distances.
    const double mid = values_[lo] + values_[hi];
    uint16_t code = lo;
    if (2 * a > mid || (2 * a == mid && (hi & 1) == 0))
      code = hi;
    return sign | code;
  }

  // Every code's value, the halfway points and the floats beside them.
  std::vector<float> HardCases() const {
    std::vector<float> out;
    for (size_t c = 0; c + 1 < values_.size(); ++c) {
      const auto mid = static_cast<float>((values_[c] + values_[c + 1]) / 2);
      for (float f : {static_cast<float>(values_[c]), mid}) {
        for (float g : {f, std::nextafter(f, 0.0f), std::nextafter(f, 1e38f)})
          out.insert(out.end(), {g, -g});
      }
    }
    return out;
  }

 private:
  uint16_t inf_code_;
  std::vector<double> values_;
};

double HalfValue(uint16_t h) {
  const int exp = (h >> 10) & 0x1F;
  const int mant = h & 0x3FF;
  const double mag =
      exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
  return (h & 0x8000) ? -mag : mag;
}

double BFloat16Value(uint16_t b) {
  const int exp = (b >> 7) & 0xFF;
  const int mant = b & 0x7F;
  const double mag =
      exp == 0 ? std::ldexp(mant, -133) : std::ldexp(128 + mant, exp - 134);
  return (b & 0x8000) ? -mag : mag;
}

// About a million floats spread over every exponent, plus the hard cases.
std::vector<float> Samples(const NearestEven& ref) {
  std::vector<float> out = ref.HardCases();
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
    const float f = FloatFromBits(static_cast<uint32_t>(bits));
    if (std::isfinite(f))
      out.push_back(f);
  }
  return out;
}

TEST(Float16Test, HalfToFloatIsExactForEveryCode) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto code = static_cast<uint16_t>(h);
    const float f = HalfToFloat(code);
    if (((h >> 10) & 0x1F) == 0x1F && (h & 0x3FF) != 0) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_EQ(FloatToHalf(f), code | 0x200) << h;  // quiet, same payload
      continue;
    }
    const double want = ((h >> 10) & 0x1F) == 0x1F
                            ? ((h & 0x8000) ? -INFINITY : INFINITY)
                            : HalfValue(code);
    ASSERT_EQ(static_cast<double>(f), want) << std::hex << h;
    EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;
    EXPECT_EQ(FloatToHalf(f), code) << std::hex << h;  // exact round trip
  }
}

TEST(Float16Test, FloatToHalfRoundsToNearestEven) {
  const NearestEven ref(HalfValue, 0x7C00, 65536.0);
  for (float f : Samples(ref))
    ASSERT_EQ(FloatToHalf(f), ref(f)) << f;
  EXPECT_EQ(FloatToHalf(65504.0f), kHalfMaxBits);
  EXPECT_EQ(FloatToHalf(65519.99f), kHalfMaxBits);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);          // tie to even: inf
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0);  // tie to even: zero
  EXPECT_EQ(FloatToHalf(std::ldexp(3.0f, -26)), 1);  // above the tie
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(FloatToHalf(-INFINITY), 0xFC00);
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie: even
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie: even
}

TEST(Float16Test, BFloat16ToFloatIsExactForEveryCode) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto code = static_cast<uint16_t>(b);
    const float f = BFloat16ToFloat(code);
    EXPECT_EQ(FloatBits(f), b << 16);
    if (std::isfinite(f)) {
      ASSERT_EQ(static_cast<double>(f), BFloat16Value(code)) << b;
      EXPECT_EQ(FloatToBFloat16(f), code) << b;
    }
  }
}

TEST(Float16Test, FloatToBFloat16RoundsToNearestEven) {
  const NearestEven ref(BFloat16Value, 0x7F80, std::ldexp(1.0, 128));
  for (float f : Samples(ref))
    ASSERT_EQ(FloatToBFloat16(f), ref(f)) << f;
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(FloatToBFloat16(-INFINITY), 0xFF80);
  EXPECT_EQ(FloatToBFloat16(FloatFromBits(0x3F808000)), 0x3F80);  // tie: even
  EXPECT_EQ(FloatToBFloat16(FloatFromBits(0x3F818000)), 0x3F82);  // tie: even
  EXPECT_EQ(FloatToBFloat16(FloatFromBits(0x3F808001)), 0x3F81);
  const float nan = FloatFromBits(0x7F800001);  // truncation would be Inf
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(nan))));
}

}  // namespace
}  // namespace pstrain::wire
