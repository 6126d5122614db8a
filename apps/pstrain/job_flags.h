#pragma once
// Rank 0's job flags: one per field of the job table (ps/job/job_fields.inc)
// that has a flag, added to serve, launch, run and bench train, and given
// again to the serve children of launch.

#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ps/job/job_flag_args.h"
#include "ps/job/job_spec.h"
#include "util/status.h"

namespace pstrain::apps {

struct JobFlags {
  /// The job; a subcommand may change a field's default here before
  /// AddJobFlags (which shows it in --help).
  ps::JobSpec spec;
  /// The text of each flag that is read by a parser of its own (--mode,
  /// --betas, --eval_interval), by field name; FinishJobSpec reads it.
  std::map<std::string, std::string> text;
  /// Each flag's option, by field name: FinishJobSpec asks which were
  /// given (ps::ApplyModelDefaults).
  std::map<std::string, const CLI::Option*> options;
};

/// Adds the job's flags to `app`, in the table's order, with the table's
/// help and bounds, bound to `*flags` (which must outlive `app`); the
/// fields named in `except` get none (a subcommand that sets them its own
/// way).
void AddJobFlags(CLI::App* app, JobFlags* flags,
                 const std::set<std::string>& except = {});
/// Once parsed: reads the text flags and applies the model's defaults to the
/// flags not given (ps::ApplyModelDefaults); kInvalidArgument naming the
/// flag.
Status ReadJobFlags(JobFlags* flags);
/// ReadJobFlags, then sets the world and validates the spec
/// (ps::ValidateJobSpec); kInvalidArgument naming the flag.
Status FinishJobSpec(JobFlags* flags, int world_size, int num_servers);
/// Whether the flag of the field `name` was on the command line.
bool JobFlagGiven(const JobFlags& flags, const std::string& name);
/// The job's flags with their values, as a command line of serve takes them.
std::vector<std::string> JobFlagArgs(const JobFlags& flags);

using ps::ExactText;

}  // namespace pstrain::apps
