#pragma once
// Man pages in man(7) format, generated from the command tree (`pstrain man
// [SUBCOMMAND]`): pstrain(1) lists the subcommands and what all of them
// share (environment, exit status, files); pstrain-<sub>(1) lists a
// subcommand's flags by --help group, with --help's texts and defaults.

#include <string>

#include "apps/pstrain/cli_model.h"
#include "util/result.h"

namespace pstrain::apps {

/// The page of `subcommand` ("" for pstrain(1) itself), for pstrain
/// `version`. kInvalidArgument naming the subcommand when there is none.
Result<std::string> ManPage(const CommandModel& root,
                            const std::string& subcommand,
                            const std::string& version);

}  // namespace pstrain::apps
