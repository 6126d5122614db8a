#pragma once
// Result<T>: a T or the Status that explains why there is none. A value type.

#include <optional>
#include <utility>

#include "util/check.h"
#include "util/status.h"

namespace pstrain {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  /// REQUIRES: !status.ok().
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    PS_CHECK(!status_.ok()) << "Result built from an ok Status";
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  /// REQUIRES: ok().
  T& value() & {
    PS_CHECK(ok()) << status_.ToString();
    return *value_;
  }
  const T& value() const& {
    PS_CHECK(ok()) << status_.ToString();
    return *value_;
  }
  T&& value() && {
    PS_CHECK(ok()) << status_.ToString();
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

/// CorruptionAsInvalidArgument (util/status.h) for a Result: its value, or
/// its Status with kCorruption made kInvalidArgument.
template <typename T>
Result<T> CorruptionAsInvalidArgument(Result<T> result) {
  if (result.ok())
    return result;
  return CorruptionAsInvalidArgument(result.status());
}

}  // namespace pstrain

/// Assigns the value of a Result expression to `lhs`, or returns its Status.
#define PS_ASSIGN_OR_RETURN(lhs, expr) \
  PS_ASSIGN_OR_RETURN_IMPL(PS_CONCAT(ps_result_, __LINE__), lhs, expr)
#define PS_CONCAT_INNER(a, b) a##b
#define PS_CONCAT(a, b) PS_CONCAT_INNER(a, b)
#define PS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok())                                 \
    return tmp.status();                         \
  lhs = std::move(tmp).value()
