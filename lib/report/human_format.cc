#include "report/human_format.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <vector>

namespace pstrain::report {
namespace {

using nlohmann::json;

std::string Fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

std::string Plain(const json& value) {
  if (value.is_string())
    return value.get<std::string>();
  if (value.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%g", value.get<double>());
    return buf;
  }
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty())
      out += sep;
    out += part;
  }
  return out;
}

// Reads typed fields and remembers which ones were used, so that the rest
// can be listed as k=v.
class FieldReader {
 public:
  explicit FieldReader(const json& fields) : fields_(fields) {}

  std::optional<double> Number(const char* key) {
    if (!fields_.is_object())
      return std::nullopt;
    auto it = fields_.find(key);
    if (it == fields_.end() || !it->is_number())
      return std::nullopt;
    used_.insert(key);
    return it->get<double>();
  }

  std::optional<std::string> Text(const char* key) {
    if (!fields_.is_object())
      return std::nullopt;
    auto it = fields_.find(key);
    if (it == fields_.end() || !it->is_string())
      return std::nullopt;
    used_.insert(key);
    return it->get<std::string>();
  }

  void Skip(const char* key) { used_.insert(key); }

  /// "k=v" for every field not read; the whole value when not an object.
  std::vector<std::string> Rest() const {
    std::vector<std::string> out;
    if (fields_.is_null())
      return out;
    if (!fields_.is_object())
      return {Plain(fields_)};
    for (auto it = fields_.begin(); it != fields_.end(); ++it) {
      if (used_.count(it.key()) == 0) {
        out.push_back(it.key() + "=" + Plain(it.value()));
      }
    }
    return out;
  }

 private:
  const json& fields_;
  std::set<std::string> used_;
};

// "head: body" when there is a body; the unread fields follow.
std::string Compose(std::string head, const std::vector<std::string>& body,
                    const char* sep, const FieldReader& reader) {
  if (!body.empty())
    head += ": " + Join(body, sep);
  std::vector<std::string> rest = reader.Rest();
  if (!rest.empty())
    head += " " + Join(rest, " ");
  return head;
}

std::string FormatStep(FieldReader& f) {
  std::vector<std::string> parts;
  if (auto epoch = f.Number("epoch"))
    parts.push_back("epoch " + Fixed(*epoch, 0));
  if (auto step = f.Number("step")) {
    std::string s = "step " + Fixed(*step, 0);
    if (auto total = f.Number("total_steps"))
      s += "/" + Fixed(*total, 0);
    parts.push_back(s);
  }
  if (auto loss = f.Number("loss"))
    parts.push_back("loss " + Fixed(*loss, 4));
  if (auto rate = f.Number("samples_per_second")) {
    parts.push_back(Fixed(*rate, 0) + " samples/s");
  }
  if (parts.empty())
    parts.push_back("step");
  std::vector<std::string> rest = f.Rest();
  parts.insert(parts.end(), rest.begin(), rest.end());
  return Join(parts, " ");
}

// "test perplexity P" (language models), "test accuracy A" and "loss L"
// ("test loss L" without an accuracy).
void AddTestScores(FieldReader& f, std::vector<std::string>* parts) {
  if (auto perplexity = f.Number("test_perplexity"))
    parts->push_back("test perplexity " + Fixed(*perplexity, 2));
  auto accuracy = f.Number("test_accuracy");
  if (accuracy)
    parts->push_back("test accuracy " + Fixed(*accuracy, 4));
  if (auto loss = f.Number("test_loss")) {
    parts->push_back((accuracy ? "loss " : "test loss ") + Fixed(*loss, 4));
  }
}

std::string FormatEval(FieldReader& f) {
  std::string head = "eval";
  if (auto step = f.Number("step"))
    head += " step " + Fixed(*step, 0);
  std::vector<std::string> body;
  AddTestScores(f, &body);
  return Compose(head, body, " ", f);
}

std::string FormatEpoch(FieldReader& f) {
  std::string head = "epoch";
  if (auto epoch = f.Number("epoch"))
    head += " " + Fixed(*epoch, 0);
  head += " done";
  std::vector<std::string> body;
  if (auto loss = f.Number("loss"))
    body.push_back("train loss " + Fixed(*loss, 4));
  auto accuracy = f.Number("test_accuracy");
  if (accuracy)
    body.push_back("test accuracy " + Fixed(*accuracy, 4));
  if (auto loss = f.Number("test_loss"))
    body.push_back("test loss " + Fixed(*loss, 4));
  if (auto wall = f.Number("wall_seconds"))
    body.push_back(Fixed(*wall, 1) + " s");
  if (auto rate = f.Number("samples_per_second")) {
    body.push_back(Fixed(*rate, 0) + " samples/s");
  }
  return Compose(head, body, ", ", f);
}

// "937 steps in 85.2 s", "937 steps" or "85.2 s".
std::optional<std::string> StepsAndTime(FieldReader& f) {
  auto steps = f.Number("steps");
  auto wall = f.Number("wall_seconds");
  std::string time = wall ? Fixed(*wall, 1) + " s" : "";
  if (!steps)
    return wall ? std::optional<std::string>(time) : std::nullopt;
  std::string out = Fixed(*steps, 0) + (*steps == 1 ? " step" : " steps");
  return wall ? out + " in " + time : out;
}

// "compute 81% / communication 19%": shares of the sum of those present.
std::optional<std::string> TimeShares(FieldReader& f) {
  static const char* const kKinds[] = {"compute", "communication", "waiting"};
  std::vector<std::pair<std::string, double>> present;
  double sum = 0;
  for (const char* kind : kKinds) {
    std::string key = std::string(kind) + "_seconds";
    if (auto seconds = f.Number(key.c_str())) {
      present.emplace_back(kind, *seconds);
      sum += *seconds;
    }
  }
  if (present.empty() || !(sum > 0))
    return std::nullopt;
  std::vector<std::string> parts;
  for (const auto& [kind, seconds] : present) {
    parts.push_back(kind + " " + Fixed(100 * seconds / sum, 0) + "%");
  }
  return Join(parts, " / ");
}

std::string FormatSummary(FieldReader& f) {
  std::vector<std::string> body;
  AddTestScores(f, &body);
  if (auto steps = StepsAndTime(f))
    body.push_back(*steps);
  if (auto rate = f.Number("samples_per_second")) {
    body.push_back(Fixed(*rate, 0) + " samples/s");
  }
  if (auto b = f.Number("bytes_pushed"))
    body.push_back("pushed " + FormatBytes(*b));
  if (auto b = f.Number("bytes_pulled"))
    body.push_back("pulled " + FormatBytes(*b));
  if (auto shares = TimeShares(f))
    body.push_back(*shares);
  return Compose("done", body, ", ", f);
}

std::string FormatError(FieldReader& f) {
  f.Skip("exit_status");
  std::vector<std::string> body;
  if (auto message = f.Text("message"))
    body.push_back(*message);
  return Compose("error", body, " ", f);
}

}  // namespace

std::string FormatBytes(double bytes) {
  static const char* const kUnits[] = {"kB", "MB", "GB", "TB", "PB"};
  if (!(std::fabs(bytes) >= 999.5))
    return Fixed(bytes, 0) + " B";
  double value = bytes / 1000;
  size_t unit = 0;
  while (std::fabs(value) >= 999.95 && unit + 1 < std::size(kUnits)) {
    value /= 1000;
    ++unit;
  }
  return Fixed(value, 1) + " " + kUnits[unit];
}

std::string FormatHuman(const std::string& event,
                        const nlohmann::json& fields) {
  FieldReader reader(fields);
  if (event == "step")
    return FormatStep(reader);
  if (event == "eval")
    return FormatEval(reader);
  if (event == "epoch")
    return FormatEpoch(reader);
  if (event == "summary")
    return FormatSummary(reader);
  if (event == "error")
    return FormatError(reader);
  return Compose(event, {}, " ", reader);
}

}  // namespace pstrain::report
