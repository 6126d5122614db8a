#include "bench/launch_output.h"

#include <sstream>

namespace pstrain::bench {

using nlohmann::json;

LaunchOutput ParseLaunchOutput(const std::string& out) {
  LaunchOutput r;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      continue;
    std::string event = j.value("event", ""), role = j.value("role", "");
    if (event == "summary" && role == "server")
      r.server = j;
    if (event == "summary" && role == "worker")
      r.workers.push_back(j);
    if (event == "error" && r.error.empty())
      r.error = j.value("message", "");
  }
  return r;
}

std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of("\n");
  if (end == std::string::npos)
    return "";
  size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end - begin);
}

}  // namespace pstrain::bench
