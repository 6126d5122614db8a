#pragma once
// JobSpec: everything about a training job that must be the same on every
// process. Rank 0's flags decide it; it reaches workers at the handshake as
// JSON, so two terminals can never disagree on, say, the learning rate.
// A value type. Its fields, with their defaults, flags, bounds and meaning,
// are listed once, in ps/job/job_fields.inc; ForEachJobField walks them.

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "util/result.h"
#include "util/status.h"

namespace pstrain::ps {

/// kSsp: the ParameterServer applies pushes as in kAsync; the Engine bounds
/// how far a worker may run ahead of the slowest (JobSpec::staleness).
enum class Mode { kSync, kAsync, kSsp };
/// "sync", "async", "ssp".
const char* ModeName(Mode mode);
/// kInvalidArgument "--mode 'x': expected sync, async or ssp".
Result<Mode> ParseMode(const std::string& name);

/// Adam's and AdamW's B1, B2.
using Betas = std::array<double, 2>;

struct JobSpec {
#define PSTRAIN_JOB_FIELD(type, name, init, flag, bounds, help) \
  type name = init;
#include "ps/job/job_fields.inc"
#undef PSTRAIN_JOB_FIELD

  /// --model PATH: the TorchScript module's bytes (shared, never changed),
  /// read by rank 0 and fetched from it by every other process
  /// (wire::GetModule); null for a built-in model, or before they are in.
  /// Not a field of the table: it travels beside the JSON, not in it.
  std::shared_ptr<const std::string> module;

  int num_workers() const {
    return world_size - num_servers;
  }
};

// The vocabulary of the table's columns (ps/job/job_fields.inc).
namespace job_table {

/// How rank 0's command line sets a field.
struct JobFlag {
  enum class Kind { kNone, kValue, kSwitch, kText };
  Kind kind;
  /// kText: the flag's text for `spec`'s value ("sync", "0.9,0.999", "30s").
  std::string (*format)(const JobSpec& spec);
  /// kText: sets what `text` says; kInvalidArgument naming the flag.
  Status (*parse)(const std::string& text, JobSpec* spec);
};
inline constexpr JobFlag kNoFlag{JobFlag::Kind::kNone, nullptr, nullptr};
inline constexpr JobFlag kValue{JobFlag::Kind::kValue, nullptr, nullptr};
inline constexpr JobFlag kSwitch{JobFlag::Kind::kSwitch, nullptr, nullptr};
/// --mode sync, async or ssp.
extern const JobFlag kModeText;
/// --betas B1,B2.
extern const JobFlag kBetasText;
/// --eval_interval N (eval_interval) or Ns (eval_seconds), 0: neither.
extern const JobFlag kEvalIntervalText;

/// The values a number (or each number of an array) may take: above or
/// from `lo`, below or up to `hi`. NaN is never in bounds.
struct Bounds {
  double lo, hi;
  bool lo_open, hi_open;
  /// What an error says is expected ("> 0"); nullptr: any value.
  const char* expected;

  bool Contains(double v) const {
    return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  }
  /// Whether a flag's parser checks them too (and --help shows them).
  bool closed() const {
    return !lo_open && !hi_open && lo > -kInf && hi < kInf;
  }

  static constexpr double kInf = std::numeric_limits<double>::infinity();
};
inline constexpr Bounds kAnyValue{-Bounds::kInf, Bounds::kInf, false, false,
                                  nullptr};
inline constexpr Bounds kPositive{0, Bounds::kInf, true, false, "> 0"};
inline constexpr Bounds kNonNegative{0, Bounds::kInf, false, false, ">= 0"};
inline constexpr Bounds kAtLeastOne{1, Bounds::kInf, false, false, ">= 1"};
inline constexpr Bounds kUnitInterval{0, 1, false, true, "in [0, 1)"};
inline constexpr Bounds kFraction{0, 1, false, false,
                                  "a fraction in (0, 1] (0: none)"};
inline constexpr Bounds kEpsBounds{0, Bounds::kInf, false, false,
                                   ">= 0 (0: the optimizer's default)"};
inline constexpr Bounds kBetaBounds{0, 1, false, true, "two values in [0, 1)"};
inline constexpr Bounds kGpuBounds{0, 2, false, false, "0, 1 or 2"};

}  // namespace job_table

/// One row of ps/job/job_fields.inc.
struct JobField {
  /// The member's name, its JSON key and its flag's (--name).
  const char* name;
  job_table::JobFlag flag;
  job_table::Bounds bounds;
  /// The flag's --help text; for a field without a flag, its meaning.
  const char* help;
};

/// Calls visit(const JobField&, member) for each field of `spec` (a JobSpec,
/// const or not), in the table's order.
template <typename Spec, typename Visit>
void ForEachJobField(Spec& spec, Visit&& visit) {
#define PSTRAIN_JOB_FIELD(type, name, init, flag, bounds, help) \
  visit(JobField{#name, job_table::flag, job_table::bounds, help}, spec.name);
#include "ps/job/job_fields.inc"
#undef PSTRAIN_JOB_FIELD
}

/// The defaults of a model that differ from the table's, for the fields
/// whose flag was not given (given(name) is false): lstm_lm trains on
/// --dataset text with --optimizer adam --lr 0.001 (the guide's optimizer).
void ApplyModelDefaults(const std::function<bool(const char*)>& given,
                        JobSpec* spec);

/// kInvalidArgument naming the flag ("--lr -1.000000: expected > 0"), or
/// the JSON key of a field that has none.
Status ValidateJobSpec(const JobSpec& spec);

/// Every field, by its name; mode as ModeName, betas as [B1, B2].
nlohmann::json ToJson(const JobSpec& spec);
/// kInvalidArgument naming the missing or mistyped field. Unknown keys are
/// ignored.
Result<JobSpec> JobSpecFromJson(const nlohmann::json& j);

/// The job spec a peer sent (`json`, the text of wire::JobSpecMsg), checked
/// as everything received must be: JSON, every field present and typed,
/// valid (ValidateJobSpec), a world of at least one server and one worker,
/// and none or num_servers server addresses. kInvalidArgument "the job spec
/// from <from>: <why>" otherwise (<from>: "rank 0").
Result<JobSpec> JobSpecFromPeer(std::string_view json, const std::string& from);

}  // namespace pstrain::ps
