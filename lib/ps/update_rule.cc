#include "ps/update_rule.h"

#include "util/check.h"

namespace pstrain::ps {

namespace {

enum class Rule { kStreamingSync, kBufferedSync, kAsync, kSsp };

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

}  // namespace

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

std::unique_ptr<UpdateRule> MakeUpdateRule(const JobSpec& spec,
                                           ParameterServer* server) {
  const Rule rule = RuleOf(spec);
  PS_CHECK(server->buffers_pushes() == (rule != Rule::kStreamingSync))
      << "the server was made for another job's update rule";
  switch (rule) {
    case Rule::kStreamingSync:
      return MakeStreamingSync(server);
    case Rule::kBufferedSync:
      return MakeBufferedSync(server, spec.step_timeout);
    case Rule::kAsync:
      return MakeAsyncUpdate(server);
    case Rule::kSsp:
      return MakeSspUpdate(server);
  }
  PS_CHECK(false) << "unknown update rule";
  return nullptr;
}

}  // namespace pstrain::ps
