#include "util/status.h"

namespace pstrain {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kCorruption:
      return "corruption";
    case StatusCode::kIOError:
      return "I/O error";
    case StatusCode::kTimeout:
      return "timeout";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kIncompatible:
      return "incompatible";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok())
    return "ok";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok())
    return *this;
  return Status(code_, context + ": " + message_);
}

Status CorruptionAsInvalidArgument(Status s) {
  if (s.code() != StatusCode::kCorruption)
    return s;
  return InvalidArgument(s.message());
}

}  // namespace pstrain
