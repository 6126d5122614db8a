#include "ps/job/rule_traits.h"

#include "util/check.h"

namespace pstrain::ps {

namespace {

// Versions of notice a snapshot of several servers is asked with: the
// servers make the same versions, but not at the same instant, and none
// may have passed the version when asked.
constexpr uint64_t kSnapshotLead = 3;

RuleTraits StreamingSyncTraits() {
  RuleTraits t;
  t.applies_each_push = false;
  t.buffers_pushes = false;
  t.waits_for_every_member = true;
  t.reply_awaits_step = true;
  t.bounds_staleness = false;
  t.rejoin_awaits_next_version = true;
  t.snapshot_versions_agree = true;
  t.snapshot_lead = kSnapshotLead;
  t.step_timeout = 0;
  t.refused_push_outcome = "the step is skipped";
  return t;
}

RuleTraits BufferedSyncTraits(double step_timeout) {
  RuleTraits t = StreamingSyncTraits();
  t.buffers_pushes = true;
  t.step_timeout = step_timeout;
  // Only the refused push is dropped: its step closes with the others.
  t.refused_push_outcome = "it is left out of the step";
  return t;
}

RuleTraits AsyncTraits() {
  RuleTraits t;
  t.applies_each_push = true;
  t.buffers_pushes = true;
  t.waits_for_every_member = false;
  t.reply_awaits_step = false;
  t.bounds_staleness = false;
  t.rejoin_awaits_next_version = false;
  t.snapshot_versions_agree = false;
  t.snapshot_lead = 1;
  t.step_timeout = 0;
  t.refused_push_outcome = "it is not applied";
  return t;
}

RuleTraits SspTraits() {
  RuleTraits t = AsyncTraits();
  t.bounds_staleness = true;
  return t;
}

}  // namespace

// The one place that reads the job's mode: every other difference between
// modes is a rule's.
Rule RuleOf(const JobSpec& spec) {
  switch (spec.mode) {
    case Mode::kAsync:
      return Rule::kAsync;
    case Mode::kSsp:
      return Rule::kSsp;
    case Mode::kSync:
      break;
  }
  return spec.backup_workers > 0 || spec.step_timeout > 0
             ? Rule::kBufferedSync
             : Rule::kStreamingSync;
}

RuleTraits RuleTraitsOf(const JobSpec& spec) {
  switch (RuleOf(spec)) {
    case Rule::kStreamingSync:
      return StreamingSyncTraits();
    case Rule::kBufferedSync:
      return BufferedSyncTraits(spec.step_timeout);
    case Rule::kAsync:
      return AsyncTraits();
    case Rule::kSsp:
      return SspTraits();
  }
  PS_CHECK(false) << "unknown update rule";
  return {};
}

}  // namespace pstrain::ps
