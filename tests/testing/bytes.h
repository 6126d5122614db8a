#pragma once
// Golden-bytes helper for wire tests.

#include <initializer_list>
#include <string>

namespace pstrain::testing {

/// The bytes of `bytes` (each 0..255, or a negative for two's complement).
inline std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

}  // namespace pstrain::testing
