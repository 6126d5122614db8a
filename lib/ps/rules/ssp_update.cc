// SSP, stale synchronous parallel (Ho et al., NIPS 2013): pushes step as in
// async, but the reply to a worker more than --staleness steps ahead of
// the slowest waits until it is within the bound (ps/engine/ssp_gate.h keeps
// the clocks; the Engine holds the reply).

#include "ps/rules/whole_push_rule.h"

namespace pstrain::ps {

namespace {

class SspUpdate : public WholePushRule {
 public:
  explicit SspUpdate(ParameterServer* server, const RuleTraits& traits)
      : WholePushRule(server, traits) {}
};

}  // namespace

std::unique_ptr<UpdateRule> MakeSspUpdate(ParameterServer* server,
                                          const RuleTraits& traits) {
  return std::make_unique<SspUpdate>(server, traits);
}

}  // namespace pstrain::ps
