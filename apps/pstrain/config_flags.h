#pragma once
// --config FILE and --print_config on the subcommands that run something:
// every flag can come from a TOML or INI file (CLI11's own reader), flags on
// the command line win, and --print_config shows the effective values as a
// file --config reads back.

#include <ostream>

#include <CLI/CLI.hpp>

namespace pstrain::apps {

/// Adds --config and --print_config to `sub` and, recursively, to each of
/// its own subcommands that has none (so `bench wire` gets them, `bench`
/// not). Hidden options (no group) are left out of the printed config.
void AddConfigFlags(CLI::App* sub);

/// When the parsed command line asked for --print_config, writes the
/// effective config of that subcommand (defaults included, one TOML
/// `name = value` line each, `name = ""` for one without a value, which
/// --config reads as unset; descriptions as comments) to `out` and returns
/// true; else returns false. REQUIRES: `root` parsed.
bool PrintConfigIfAsked(const CLI::App& root, std::ostream& out);

}  // namespace pstrain::apps
