#include "wire/float16.h"

#include <cstring>

namespace pstrain::wire {
namespace {

constexpr uint32_t kSignBit = 0x80000000u;
constexpr uint32_t kFloatInf = 0x7F800000u;
// Float bits of 65520, halfway between 65504 (the largest half) and 65536:
// the tie goes to the even neighbour, infinity.
constexpr uint32_t kHalfOverflow = 0x477FF000u;
// Float bits of 2^-14, the smallest normal half.
constexpr uint32_t kHalfMinNormal = 0x38800000u;
// Float bits of 2^-25, half the smallest subnormal half: it and everything
// below round to zero (the tie goes to the even neighbour, zero).
constexpr uint32_t kHalfZeroTie = 0x33000000u;
// The exponent bias difference, 127 - 15, in float exponent position.
constexpr uint32_t kRebias = 112u << 23;

// Rounds `m >> shift` to the nearest integer, ties to even.
// REQUIRES: 1 <= shift <= 31.
uint32_t ShiftRoundEven(uint32_t m, uint32_t shift) {
  const uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  return q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
}

// A float below 2^-14 in magnitude (`a` without sign) as a subnormal half:
// value / 2^-24, rounded. The float's value is m * 2^(e - 150) with the
// implicit bit in m, so the half's count of 2^-24 units is m >> (126 - e).
uint16_t SubnormalHalf(uint32_t a) {
  if (a <= kHalfZeroTie)
    return 0;
  const uint32_t e = a >> 23;  // 102..112 here
  const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
  // A result of 0x400 is the smallest normal half, which is right.
  return static_cast<uint16_t>(ShiftRoundEven(m, 126 - e));
}

}  // namespace

uint32_t FloatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

float FloatFromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t FloatToHalf(float f) {
  const uint32_t x = FloatBits(f);
  const auto sign = static_cast<uint16_t>((x & kSignBit) >> 16);
  const uint32_t a = x & ~kSignBit;
  if (a > kFloatInf) {  // NaN: keep the payload's top bits, force quiet
    return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  }
  if (a >= kHalfOverflow)
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (a < kHalfMinNormal)
    return static_cast<uint16_t>(sign | SubnormalHalf(a));
  // Normal: rebias, then drop 13 mantissa bits rounding to even. Adding
  // 0xFFF plus the kept lowest bit rounds up exactly above the halfway
  // point, and at it when the kept part is odd; a carry into the exponent
  // is the right result.
  const uint32_t odd = (a >> 13) & 1u;
  return static_cast<uint16_t>(sign | ((a - kRebias + 0xFFFu + odd) >> 13));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F)  // infinity or NaN
    return FloatFromBits(sign | kFloatInf | (mant << 13));
  if (exp != 0)
    return FloatFromBits(sign | ((exp << 23) + kRebias) | (mant << 13));
  if (mant == 0)
    return FloatFromBits(sign);
  // Subnormal half, normal float: shift the leading 1 into the implicit
  // bit's place, lowering the exponent from that of 2^-14 once per step.
  uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return FloatFromBits(sign | (e << 23) | ((mant & 0x3FFu) << 13));
}

uint16_t FloatToBFloat16(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & ~kSignBit) > kFloatInf)  // NaN: truncation could make it Inf
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  // Round the dropped 16 bits to even, as FloatToHalf does; overflow
  // carries into the exponent and gives infinity.
  const uint32_t odd = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7FFFu + odd) >> 16);
}

float BFloat16ToFloat(uint16_t b) {
  return FloatFromBits(static_cast<uint32_t>(b) << 16);
}

}  // namespace pstrain::wire
