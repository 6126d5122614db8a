#include "ps/job/job_flag_args.h"

#include <sstream>

#include "ps/job/optimizer.h"

namespace pstrain::ps {

namespace {

using Kind = job_table::JobFlag::Kind;

template <typename T>
std::string ValueText(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    return v;
  } else if constexpr (std::is_floating_point_v<T>) {
    return ExactText(v);
  } else {
    return std::to_string(v);
  }
}

// Whether the switch `name` is on by default.
bool SwitchDefault(const std::string& name) {
  static const JobSpec defaults;
  bool on = false;
  ForEachJobField(defaults, [&](const JobField& field, const auto& value) {
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, bool>) {
      if (field.name == name)
        on = value;
    }
  });
  return on;
}

}  // namespace

std::vector<std::string> JobFlagArgs(const JobSpec& spec) {
  std::vector<std::string> args;
  ForEachJobField(spec, [&](const JobField& field, const auto& value) {
    using T = std::decay_t<decltype(value)>;
    const std::string name = std::string("--") + field.name;
    switch (field.flag.kind) {
      case Kind::kNone:
        return;
      case Kind::kSwitch:
        if constexpr (std::is_same_v<T, bool>) {
          if (value) {
            args.push_back(name);
          } else if (SwitchDefault(field.name)) {
            args.push_back(name + "=false");
          }
        }
        return;
      case Kind::kText:
        args.insert(args.end(), {name, field.flag.format(spec)});
        return;
      case Kind::kValue:
        if constexpr (kPlainFlagValue<T>)
          args.insert(args.end(), {name, ValueText(value)});
        return;
    }
  });
  return args;
}

std::string OptimizerChoices() {
  const std::vector<std::string>& names = OptimizerNames();
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0)
      text += i + 1 == names.size() ? " or " : ", ";
    text += names[i];
  }
  return text;
}

std::string JobFlagHelp(const JobField& field) {
  if (std::string(field.name) == "optimizer")
    return field.help + (": " + OptimizerChoices());
  return field.help;
}

std::string ExactText(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

}  // namespace pstrain::ps
