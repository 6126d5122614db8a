#include "apps/pstrain/cli_model.h"

namespace pstrain::apps {
namespace {

FlagModel BuildFlag(const CLI::Option& opt) {
  FlagModel f;
  for (const std::string& name : opt.get_lnames())
    f.names.push_back("--" + name);
  for (const std::string& name : opt.get_snames())
    f.names.push_back("-" + name);
  f.description = opt.get_description();
  if (opt.get_type_size() != 0 && opt.get_expected_min() > 0) {
    f.value_type = opt.get_type_name();
    if (f.value_type.empty())
      f.value_type = "VALUE";
  }
  f.default_value = opt.get_default_str();
  f.group = opt.get_group();
  return f;
}

void Build(const CLI::App& app, std::vector<std::string> path,
           CommandModel* out) {
  out->path = std::move(path);
  out->description = app.get_description();
  for (const CLI::Option* opt : app.get_options({})) {
    const bool nameless =
        opt->get_lnames().empty() && opt->get_snames().empty();
    if (opt->get_group().empty() || nameless) {
      continue;
    }
    out->flags.push_back(BuildFlag(*opt));
  }
  for (const CLI::App* sub : app.get_subcommands({})) {
    CommandModel child;
    std::vector<std::string> child_path = out->path;
    child_path.push_back(sub->get_name());
    Build(*sub, std::move(child_path), &child);
    out->children.push_back(std::move(child));
  }
}

void Collect(const CommandModel& c, std::vector<const CommandModel*>* out) {
  out->push_back(&c);
  for (const CommandModel& child : c.children)
    Collect(child, out);
}

}  // namespace

std::string CommandModel::Joined(const std::string& sep) const {
  std::string out;
  for (const std::string& part : path)
    out += (out.empty() ? "" : sep) + part;
  return out;
}

CommandModel BuildCliModel(const CLI::App& app) {
  CommandModel root;
  Build(app, {app.get_name()}, &root);
  return root;
}

std::vector<const CommandModel*> AllCommands(const CommandModel& root) {
  std::vector<const CommandModel*> out;
  Collect(root, &out);
  return out;
}

}  // namespace pstrain::apps
