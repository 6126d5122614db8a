#include "ps/job/interval.h"

#include <cstdlib>
#include <sstream>

namespace pstrain::ps {

Result<Interval> ParseInterval(const std::string& flag, const std::string& text,
                               bool allow_zero) {
  Interval every;
  if (allow_zero && text == "0")
    return every;
  const bool seconds = !text.empty() && text.back() == 's';
  const std::string number = seconds ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  const bool parsed = !number.empty() && end == number.c_str() + number.size();
  if (parsed && seconds && v > 0) {
    every.time = std::chrono::milliseconds(static_cast<int64_t>(v * 1000));
    return every;
  }
  if (parsed && !seconds && v >= 1 &&
      v == static_cast<double>(static_cast<uint64_t>(v))) {
    every.steps = static_cast<uint64_t>(v);
    return every;
  }
  return InvalidArgument(flag + " '" + text +
                         "': expected N (steps, >= 1) or Ns (seconds, > 0)" +
                         (allow_zero ? " or 0 (never)" : ""));
}

std::string FormatInterval(const Interval& interval) {
  if (interval.steps > 0)
    return std::to_string(interval.steps);
  if (interval.time.count() == 0)
    return "0";
  std::ostringstream s;
  s << static_cast<double>(interval.time.count()) / 1000 << "s";
  return s.str();
}

IntervalSchedule::IntervalSchedule(Interval every, uint64_t version,
                                   Clock::time_point now)
    : every_(every), last_version_(version), last_time_(now) {}

std::optional<uint64_t> IntervalSchedule::Due(uint64_t version, uint64_t lead,
                                              Clock::time_point now) const {
  if (every_.steps > 0) {
    const uint64_t n = every_.steps;
    uint64_t next = (last_version_ / n + 1) * n;
    if (next < version)
      next = (version + n - 1) / n * n;  // those passed are skipped
    if (version + lead >= next)
      return next;
  }
  if (every_.time.count() > 0 && now - last_time_ >= every_.time)
    return version + lead;
  return std::nullopt;
}

void IntervalSchedule::Done(uint64_t version, Clock::time_point now) {
  last_version_ = version;
  last_time_ = now;
}

}  // namespace pstrain::ps
