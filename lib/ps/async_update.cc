// Async: each push steps the optimizer at once (Li et al., OSDI 2014,
// section 3), on a gradient read whole into the worker's buffer, and the
// reply is the parameters as they are then. Each server counts its own
// pushes, so servers' versions differ.

#include "ps/whole_push_rule.h"

namespace pstrain::ps {

namespace {

class AsyncUpdate : public WholePushRule {
 public:
  explicit AsyncUpdate(ParameterServer* server)
      : WholePushRule(server, AsyncTraits()) {}
};

}  // namespace

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

std::unique_ptr<UpdateRule> MakeAsyncUpdate(ParameterServer* server) {
  return std::make_unique<AsyncUpdate>(server);
}

}  // namespace pstrain::ps
