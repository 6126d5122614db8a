#include "ps/engine/finite_check.h"

#include <cstdint>
#include <cstring>

#include "util/check.h"

namespace pstrain::ps {
namespace {

// A float is NaN or Inf exactly when its exponent bits are all ones. Tested
// on the bits with no early exit, the loop is integer ands, compares and
// ors, which compilers vectorize with baseline SSE2: about 3x faster than a
// loop of std::isfinite, and as fast as memory here.
template <typename T, typename Bits, Bits kExponent>
bool AllFiniteOf(const void* data, uint64_t n) {
  const char* p = static_cast<const char*>(data);
  Bits bad = 0;
  for (uint64_t i = 0; i < n; ++i) {
    Bits b;
    std::memcpy(&b, p + i * sizeof(T), sizeof(T));
    bad |= (b & kExponent) == kExponent;
  }
  return bad == 0;
}

}  // namespace

bool AllFinite(const void* data, uint64_t bytes, at::ScalarType dtype) {
  if (dtype == at::kLong)
    return true;  // a buffer's count: every value is finite
  if (dtype == at::kFloat) {
    return AllFiniteOf<float, uint32_t, 0x7f800000u>(data,
                                                     bytes / sizeof(float));
  }
  PS_CHECK(dtype == at::kDouble) << "AllFinite on " << c10::toString(dtype);
  return AllFiniteOf<double, uint64_t, 0x7ff0000000000000u>(
      data, bytes / sizeof(double));
}

}  // namespace pstrain::ps
