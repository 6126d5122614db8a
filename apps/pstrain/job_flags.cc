#include "apps/pstrain/job_flags.h"

#include <sstream>
#include <type_traits>

#include "util/check.h"

namespace pstrain::apps {

namespace {

using Kind = ps::job_table::JobFlag::Kind;

// The types a flag binds to directly (JobFlag::Kind::kValue).
template <typename T>
constexpr bool kPlainValue = std::is_same_v<T, std::string> ||
                             (std::is_arithmetic_v<T> &&
                              !std::is_same_v<T, bool>);

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

// A switch's default: one that is on by default is written "--name=false"
// when off, so that a process given the flags gets it off too.
bool SwitchDefault(const std::string& name) {
  static const ps::JobSpec defaults;
  bool on = false;
  ps::ForEachJobField(defaults,
                      [&](const ps::JobField& field, const auto& value) {
                        using T = std::decay_t<decltype(value)>;
                        if constexpr (std::is_same_v<T, bool>) {
                          if (field.name == name)
                            on = value;
                        }
                      });
  return on;
}

}  // namespace

void AddJobFlags(CLI::App* app, JobFlags* f) {
  const char* g = "Job (rank 0's flags decide for every process)";
  ps::ForEachJobField(f->spec, [&](const ps::JobField& field, auto& value) {
    using T = std::decay_t<decltype(value)>;
    const std::string name = std::string("--") + field.name;
    CLI::Option* opt = nullptr;
    switch (field.flag.kind) {
      case Kind::kNone:
        return;
      case Kind::kSwitch:
        if constexpr (std::is_same_v<T, bool>)
          opt = app->add_flag(name, value, field.help);
        break;
      case Kind::kText: {
        std::string& text = f->text[field.name];
        text = field.flag.format(f->spec);
        opt = app->add_option(name, text, field.help)->capture_default_str();
        break;
      }
      case Kind::kValue:
        if constexpr (kPlainValue<T>) {
          opt = app->add_option(name, value, field.help)->capture_default_str();
          if (field.bounds.closed())
            opt->check(CLI::Range(field.bounds.lo, field.bounds.hi));
        }
        break;
    }
    PS_CHECK(opt != nullptr)
        << "job field " << field.name << ": its flag does not fit its type";
    opt->group(g);
    f->options[field.name] = opt;
  });
}

Status FinishJobSpec(JobFlags* f, int world_size, int num_servers) {
  Status s;
  ps::ForEachJobField(f->spec, [&](const ps::JobField& field, const auto&) {
    if (s.ok() && field.flag.kind == Kind::kText) {
      s = field.flag.parse(f->text.at(field.name), &f->spec);
    }
  });
  PS_RETURN_IF_ERROR(s);
  ps::ApplyModelDefaults(
      [f](const char* name) {
        auto it = f->options.find(name);
        return it != f->options.end() && it->second->count() > 0;
      },
      &f->spec);
  f->spec.world_size = world_size;
  f->spec.num_servers = num_servers;
  return ps::ValidateJobSpec(f->spec);
}

std::vector<std::string> JobFlagArgs(const JobFlags& f) {
  std::vector<std::string> args;
  ps::ForEachJobField(
      f.spec, [&](const ps::JobField& field, const auto& value) {
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
            args.insert(args.end(), {name, f.text.at(field.name)});
            return;
          case Kind::kValue:
            if constexpr (kPlainValue<T>)
              args.insert(args.end(), {name, ValueText(value)});
            return;
        }
      });
  return args;
}

std::string ExactText(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

}  // namespace pstrain::apps
