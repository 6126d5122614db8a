#include "ps/finite_check.h"

#include <cmath>

#include "util/check.h"

namespace pstrain::ps {
namespace {

template <typename T>
bool AllFiniteOf(const T* v, uint64_t n) {
  // No early exit: a branch-free loop vectorizes, and a bad push is rare.
  bool ok = true;
  for (uint64_t i = 0; i < n; ++i) ok &= std::isfinite(v[i]);
  return ok;
}

}  // namespace

bool AllFinite(const void* data, uint64_t bytes, at::ScalarType dtype) {
  if (dtype == at::kFloat) {
    return AllFiniteOf(static_cast<const float*>(data), bytes / sizeof(float));
  }
  PS_CHECK(dtype == at::kDouble) << "AllFinite on " << c10::toString(dtype);
  return AllFiniteOf(static_cast<const double*>(data), bytes / sizeof(double));
}

int FirstNonFinite(const std::vector<at::Tensor>& tensors) {
  for (size_t k = 0; k < tensors.size(); ++k) {
    const at::Tensor& t = tensors[k];
    if (!AllFinite(t.data_ptr(), t.nbytes(), t.scalar_type())) {
      return static_cast<int>(k);
    }
  }
  return -1;
}

}  // namespace pstrain::ps
