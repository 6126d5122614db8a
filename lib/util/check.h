#pragma once
// PS_CHECK(cond) << "message": aborts on a broken invariant (a programmer
// error). Never use it on bytes a peer sent or on user input; those are a
// Status (util/status.h).

#include <sstream>

namespace pstrain::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* cond);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

}  // namespace pstrain::internal

#define PS_CHECK(cond) \
  if (cond) {          \
  } else               \
    ::pstrain::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()
