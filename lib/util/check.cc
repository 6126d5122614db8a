#include "util/check.h"

#include <cstdio>
#include <cstdlib>

namespace pstrain::internal {

CheckFailure::CheckFailure(const char* file, int line, const char* cond) {
  stream_ << file << ":" << line << ": check failed: " << cond << ": ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n", stream_.str().c_str());
  std::abort();
}

}  // namespace pstrain::internal
