#pragma once
// Rank 0's job flags: one per field of the job table (ps/job_fields.inc)
// that has a flag, added to serve, launch and run, and given again to the
// serve children of launch.

#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ps/job_spec.h"
#include "util/status.h"

namespace pstrain::apps {

struct JobFlags {
  ps::JobSpec spec;
  /// The text of each flag that is read by a parser of its own (--mode,
  /// --betas, --eval_interval), by field name; FinishJobSpec reads it.
  std::map<std::string, std::string> text;
  /// Each flag's option, by field name: FinishJobSpec asks which were
  /// given (ps::ApplyModelDefaults).
  std::map<std::string, const CLI::Option*> options;
};

/// Adds the job's flags to `app`, in the table's order, bound to `*flags`
/// (which must outlive `app`).
void AddJobFlags(CLI::App* app, JobFlags* flags);
/// Once parsed: reads the text flags, applies the model's defaults to the
/// flags not given (ps::ApplyModelDefaults), sets the world, and validates the
/// spec; kInvalidArgument naming the flag.
Status FinishJobSpec(JobFlags* flags, int world_size, int num_servers);
/// The job's flags with their values, as a command line of serve takes them.
std::vector<std::string> JobFlagArgs(const JobFlags& flags);

/// `v` exactly, as a flag's value ("0.03", 17 digits where needed).
std::string ExactText(double v);

}  // namespace pstrain::apps
