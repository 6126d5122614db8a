#pragma once
// Helpers for wire tests: golden bytes, descriptors and their comparison.

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wire/tensor_desc.h"

namespace pstrain::testing {

/// The bytes of `bytes` (each 0..255, or a negative for two's complement).
inline std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes)
    s.push_back(static_cast<char>(b));
  return s;
}

/// A raw descriptor of key `key`, `dtype` and `dims`, nbytes to match.
inline wire::TensorDesc Desc(uint32_t key, wire::DType dtype,
                             std::vector<int64_t> dims) {
  wire::TensorDesc d;
  d.key = key;
  d.dtype = dtype;
  d.ndim = static_cast<uint8_t>(dims.size());
  std::copy(dims.begin(), dims.end(), d.dims.begin());
  d.nbytes = static_cast<uint64_t>(d.numel()) * wire::DTypeSize(dtype);
  return d;
}

/// Expects two descriptor lists to be equal field by field.
inline void ExpectSameDescs(const std::vector<wire::TensorDesc>& a,
                            const std::vector<wire::TensorDesc>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].key, b[i].key);
    EXPECT_EQ(a[i].dtype, b[i].dtype);
    EXPECT_EQ(a[i].ndim, b[i].ndim);
    EXPECT_EQ(a[i].dims, b[i].dims);
    EXPECT_EQ(a[i].nbytes, b[i].nbytes);
  }
}

}  // namespace pstrain::testing
