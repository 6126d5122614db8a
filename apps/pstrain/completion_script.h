#pragma once
// Shell completion scripts for bash, zsh and fish, generated from the
// command tree (`pstrain completions SHELL`). They complete subcommands,
// every visible flag of the command typed so far, and file names after a
// flag that takes a value.

#include <string>

#include "apps/pstrain/cli_model.h"
#include "util/result.h"

namespace pstrain::apps {

/// The script for `shell` ("bash", "zsh" or "fish"); kInvalidArgument
/// naming the shell otherwise.
Result<std::string> CompletionScript(const CommandModel& root,
                                     const std::string& shell);

}  // namespace pstrain::apps
