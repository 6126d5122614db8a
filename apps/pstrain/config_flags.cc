#include "apps/pstrain/config_flags.h"

namespace pstrain::apps {
namespace {

constexpr const char* kPrintConfig = "--print_config";

// The deepest parsed subcommand under `app`, or null when none is.
const CLI::App* ParsedLeaf(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!sub->parsed())
      continue;
    const CLI::App* deeper = ParsedLeaf(*sub);
    return deeper != nullptr ? deeper : sub;
  }
  return nullptr;
}

// Gives each option of `sub` that the command line left unset the value the
// file at `path` has for it. (CLI11 2.1 reads a --config of the main app
// only, not a subcommand's, so the file is applied here.) Throws a CLI11
// ParseError, which main turns into exit status 2, naming the file and the
// key it does not know.
void ApplyConfigFile(CLI::App* sub, const std::string& path) {
  for (const CLI::ConfigItem& item : CLI::ConfigTOML().from_file(path)) {
    if (item.name == "++" || item.name == "--")
      continue;  // [section] marks
    const bool here =
        item.parents.empty() || item.parents.back() == sub->get_name();
    CLI::Option* opt =
        here ? sub->get_option_no_throw("--" + item.name) : nullptr;
    if (opt == nullptr || !opt->get_configurable()) {
      throw CLI::ValidationError("--config", path + ": '" + item.fullname() +
                                                 "' is not a flag of pstrain " +
                                                 sub->get_name());
    }
    // The command line wins; `name = ""` is how --print_config shows a flag
    // without a value (e.g. rank), so it leaves the flag unset.
    if (opt->count() > 0 || item.inputs == std::vector<std::string>{""})
      continue;
    opt->add_result(item.inputs);
    opt->run_callback();
  }
}

}  // namespace

void AddConfigFlags(CLI::App* sub) {
  auto children = sub->get_subcommands({});
  if (!children.empty()) {
    for (CLI::App* child : children)
      AddConfigFlags(child);
    return;
  }
  // Hidden flags have no group (--log_prefix, and the knobs of the test-only
  // build, apps/pstrain/build_hooks.h); a config file should not show or set
  // them.
  for (CLI::Option* opt : sub->get_options({})) {
    if (opt->get_group().empty())
      opt->configurable(false);
  }
  // Added after every other option, so that its callback, which fills them,
  // runs last.
  sub->add_option_function<std::string>(
         "--config",
         [sub](const std::string& path) { ApplyConfigFile(sub, path); },
         "Read flags from this TOML or INI file (name = value); flags on the "
         "command line win")
      ->configurable(false);
  sub->add_flag(kPrintConfig,
                "Print the effective flags as a --config file and exit")
      ->configurable(false);
}

bool PrintConfigIfAsked(const CLI::App& root, std::ostream& out) {
  const CLI::App* leaf = ParsedLeaf(root);
  if (leaf == nullptr)
    return false;
  const CLI::Option* print = leaf->get_option_no_throw(kPrintConfig);
  if (print == nullptr || print->count() == 0)
    return false;
  out << leaf->config_to_str(/*default_also=*/true, /*write_description=*/true);
  return true;
}

}  // namespace pstrain::apps
