// SSP, stale synchronous parallel (Ho et al., NIPS 2013): pushes step as in
// async, but the reply to a worker more than --staleness steps ahead of
// the slowest waits until it is within the bound (ps/ssp_gate.h keeps the
// clocks; the Engine holds the reply).

#include "ps/whole_push_rule.h"

namespace pstrain::ps {

namespace {

class SspUpdate : public WholePushRule {
 public:
  explicit SspUpdate(ParameterServer* server)
      : WholePushRule(server, SspTraits()) {}
};

}  // namespace

RuleTraits SspTraits() {
  RuleTraits t = AsyncTraits();
  t.bounds_staleness = true;
  return t;
}

std::unique_ptr<UpdateRule> MakeSspUpdate(ParameterServer* server) {
  return std::make_unique<SspUpdate>(server);
}

}  // namespace pstrain::ps
