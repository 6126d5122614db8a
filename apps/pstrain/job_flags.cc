#include "apps/pstrain/job_flags.h"

#include <type_traits>

#include "ps/job/optimizer.h"
#include "util/check.h"

namespace pstrain::apps {

namespace {

using Kind = ps::job_table::JobFlag::Kind;

}  // namespace

void AddJobFlags(CLI::App* app, JobFlags* f,
                 const std::set<std::string>& except) {
  const char* g = "Job (rank 0's flags decide for every process)";
  ps::ForEachJobField(f->spec, [&](const ps::JobField& field, auto& value) {
    using T = std::decay_t<decltype(value)>;
    if (except.count(field.name) > 0)
      return;
    const std::string name = std::string("--") + field.name;
    const std::string help = ps::JobFlagHelp(field);
    CLI::Option* opt = nullptr;
    switch (field.flag.kind) {
      case Kind::kNone:
        return;
      case Kind::kSwitch:
        if constexpr (std::is_same_v<T, bool>)
          opt = app->add_flag(name, value, help);
        break;
      case Kind::kText: {
        std::string& text = f->text[field.name];
        text = field.flag.format(f->spec);
        opt = app->add_option(name, text, help)->capture_default_str();
        break;
      }
      case Kind::kValue:
        if constexpr (ps::kPlainFlagValue<T>) {
          opt = app->add_option(name, value, help)->capture_default_str();
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

Status ReadJobFlags(JobFlags* f) {
  Status s;
  ps::ForEachJobField(f->spec, [&](const ps::JobField& field, const auto&) {
    auto text = f->text.find(field.name);
    if (s.ok() && text != f->text.end())
      s = field.flag.parse(text->second, &f->spec);
  });
  PS_RETURN_IF_ERROR(s);
  ps::ApplyModelDefaults(
      [f](const char* name) { return JobFlagGiven(*f, name); }, &f->spec);
  return Status::Ok();
}

Status FinishJobSpec(JobFlags* f, int world_size, int num_servers) {
  PS_RETURN_IF_ERROR(ReadJobFlags(f));
  f->spec.world_size = world_size;
  f->spec.num_servers = num_servers;
  return ps::ValidateJobSpec(f->spec);
}

bool JobFlagGiven(const JobFlags& f, const std::string& name) {
  auto it = f.options.find(name);
  return it != f.options.end() && it->second->count() > 0;
}

std::vector<std::string> JobFlagArgs(const JobFlags& f) {
  return ps::JobFlagArgs(f.spec);
}

}  // namespace pstrain::apps
