#pragma once
// Status: the outcome of an operation that can fail for expected reasons
// (I/O, a dead peer, a timeout, bad bytes, bad configuration). Programmer
// errors use PS_CHECK (util/check.h) instead. A value type; thread-compatible.

#include <string>
#include <utility>

namespace pstrain {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,  // bad flag, bad file, bad request field
  kNotFound = 2,         // a file, key or rank that does not exist
  kCorruption = 3,       // bytes from a peer or a file that do not decode
  kIOError = 4,          // a syscall or socket failed
  kTimeout = 5,          // a peer did not answer in time
  kUnavailable = 6,      // a peer went away or is not there yet
  kIncompatible = 7,     // a peer of another protocol version, model or job
};

/// Short lower-case name of a code ("corruption"), for messages and JSON.
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  /// One line, without the code's name.
  const std::string& message() const { return message_; }
  /// "corruption: frame magic is 0x00000000, expected 0x52545350".
  std::string ToString() const;

  /// Returns a copy whose message is "`context`: message"; Ok stays Ok.
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFound(std::string m) {
  return Status(StatusCode::kNotFound, std::move(m));
}
inline Status Corruption(std::string m) {
  return Status(StatusCode::kCorruption, std::move(m));
}
inline Status IOError(std::string m) {
  return Status(StatusCode::kIOError, std::move(m));
}
inline Status Timeout(std::string m) {
  return Status(StatusCode::kTimeout, std::move(m));
}
inline Status Unavailable(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status Incompatible(std::string m) {
  return Status(StatusCode::kIncompatible, std::move(m));
}

/// Bytes that do not decode in a file the user named (a data set, a
/// checkpoint) are bad input, not a failure of the run: returns
/// kInvalidArgument with the message of a kCorruption `s` (exit 2, not 1),
/// and any other Status as it is. See also the Result<T> overload.
Status CorruptionAsInvalidArgument(Status s);

}  // namespace pstrain

/// Returns `expr`'s Status from the enclosing function when it is not ok.
#define PS_RETURN_IF_ERROR(expr)           \
  do {                                     \
    ::pstrain::Status ps_status_ = (expr); \
    if (!ps_status_.ok())                  \
      return ps_status_;                   \
  } while (0)
