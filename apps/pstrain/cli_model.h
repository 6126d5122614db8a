#pragma once
// CliModel: the command tree of a CLI11 App, reduced to what the shell
// completions and man pages need. Built by walking the App, so that those
// files follow every flag the subcommands define and never drift from them.
// A value type.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace pstrain::apps {

struct FlagModel {
  /// Long names with dashes ("--world_size"), then short ones ("-h").
  std::vector<std::string> names;
  std::string description;
  /// CLI11's type name ("INT", "TEXT"); empty for a flag without a value.
  std::string value_type;
  /// The default shown by --help; may be empty.
  std::string default_value;
  /// The --help group ("Options", "Job (...)", ...).
  std::string group;
};

struct CommandModel {
  /// {"pstrain"}, {"pstrain", "serve"}, {"pstrain", "bench", "wire"}.
  std::vector<std::string> path;
  std::string description;
  std::vector<FlagModel> flags;
  std::vector<CommandModel> children;

  /// The path joined by `sep`: "pstrain serve" with " ".
  std::string Joined(const std::string& sep) const;
};

/// The model of `app` and its subcommands, in definition order. Options
/// without a group (hidden from --help) and positionals are left out.
CommandModel BuildCliModel(const CLI::App& app);

/// Every command of the tree, depth first, `root` first.
std::vector<const CommandModel*> AllCommands(const CommandModel& root);

}  // namespace pstrain::apps
