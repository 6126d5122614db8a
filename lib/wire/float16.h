#pragma once
// Conversions between float32 and the two 16-bit float formats the fp16 and
// bf16 codecs (wire/compression.h) send. Bit manipulation only: no
// hardware half support and no FPU mode is assumed, so every build rounds
// the same way and golden bytes hold everywhere. Pure functions;
// thread-safe.
//
// IEEE binary16 (half): 1 sign, 5 exponent (bias 15), 10 mantissa bits;
// largest finite 65504, smallest subnormal 2^-24.
// bfloat16: the top 16 bits of a float32 (1 sign, 8 exponent, 7 mantissa
// bits); float32's range with 8 bits of precision.

#include <cstdint>

namespace pstrain::wire {

/// The largest finite half, 65504, and bfloat16, about 3.39e38, as bits.
inline constexpr uint16_t kHalfMaxBits = 0x7BFF;
inline constexpr uint16_t kBFloat16MaxBits = 0x7F7F;

/// `f` rounded to the nearest half, ties to even (IEEE 754 roundTiesToEven).
/// Magnitudes from 65520 up round to infinity; subnormal results are kept
/// (no flush to zero). A NaN stays a quiet NaN of the same sign.
uint16_t FloatToHalf(float f);
/// The half `h` as a float32; exact for every value, NaN payloads kept.
float HalfToFloat(uint16_t h);

/// `f` rounded to the nearest bfloat16, ties to even. Magnitudes within half
/// a bfloat16 step of FLT_MAX round to infinity. A NaN stays a quiet NaN.
uint16_t FloatToBFloat16(float f);
/// The bfloat16 `b` as a float32 (exact: the low 16 bits become zero).
float BFloat16ToFloat(uint16_t b);

/// The float's bits, and back (the IEEE representation; std::bit_cast is
/// C++20).
uint32_t FloatBits(float f);
float FloatFromBits(uint32_t bits);

}  // namespace pstrain::wire
