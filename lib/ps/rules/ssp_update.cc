// SSP, stale synchronous parallel (Ho et al., NIPS 2013): pushes step as in
// async (ps/rules/async_update.h), but the reply to a worker more than
// --staleness steps ahead of the slowest waits until it is within the
// bound (ps/engine/ssp_gate.h keeps the clocks; the Engine holds the
// reply, by the rule's traits).

#include "ps/rules/async_update.h"

namespace pstrain::ps {

std::unique_ptr<UpdateRule> MakeSspUpdate(const JobSpec& spec,
                                          ParameterServer* server) {
  return std::make_unique<AsyncUpdate>(spec, server);
}

}  // namespace pstrain::ps
