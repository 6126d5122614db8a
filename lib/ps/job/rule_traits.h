#pragma once
// RuleTraits: what each --mode's update rule (ps/rules/update_rule.h) does,
// as plain values, for the code that has no rule to ask: the
// ParameterServer, the lr schedule, the shard plan, the Observer and the
// worker's trainer. RuleOf(spec) is the one place that reads the job's mode
// (and --backup_workers, --step_timeout); MakeUpdateRule(spec, ...) makes
// the rule it names, whose traits() are RuleTraitsOf(spec). Free
// functions; pure and thread-safe.

#include <cstdint>

#include "ps/job/job_spec.h"

namespace pstrain::ps {

/// What a rule does, as plain values. A value type; copy freely.
struct RuleTraits {
  /// Each push steps the optimizer at once and makes a version: versions
  /// count the pushes of all workers, and each push has a staleness (the
  /// versions made since the one it was computed on). Otherwise a version
  /// is one step of all workers, and every server makes the same ones.
  bool applies_each_push = false;
  /// Pushes land whole in per-worker buffers (ps/rules/grad_buffers.h)
  /// rather than being summed piece by piece as they are read.
  bool buffers_pushes = false;
  /// Steps wait for every member: finished and lost workers must leave the
  /// quorum, and a silent one (--dead_after) is lost.
  bool waits_for_every_member = false;
  /// The reply to a push_pull of version v waits for version v + 1, the
  /// step the push is part of; otherwise it is the parameters as they are.
  bool reply_awaits_step = false;
  /// Replies also wait until the worker is within the staleness bound.
  bool bounds_staleness = false;
  /// A worker back after it was lost, when it joins from the next version
  /// on (its step is under way), pulls that version first; otherwise
  /// whatever version is there.
  bool rejoin_awaits_next_version = false;
  /// Snapshots of several servers must hold one version on every server
  /// (the Observer skips one whose servers answer different versions).
  bool snapshot_versions_agree = false;
  /// How many versions ahead of the current one a snapshot of several
  /// servers is asked for, so that no server has passed it when asked.
  uint64_t snapshot_lead = 1;
  /// How long a step may wait after its first push, in seconds; 0: as long
  /// as it takes.
  double step_timeout = 0;
  /// What becomes of a push refused for a NaN or Inf: the end of the log
  /// line that says so. Static storage.
  const char* refused_push_outcome = "";
};

/// The update rules (share/doc/design.md, "Update rules").
enum class Rule { kStreamingSync, kBufferedSync, kAsync, kSsp };

/// The rule of `spec.mode` (sync: buffered with --backup_workers or
/// --step_timeout, streaming otherwise).
Rule RuleOf(const JobSpec& spec);

/// The traits of RuleOf(spec). Cheap (no allocation).
RuleTraits RuleTraitsOf(const JobSpec& spec);

}  // namespace pstrain::ps
