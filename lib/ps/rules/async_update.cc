// Async: each push steps the optimizer at once (Li et al., OSDI 2014,
// section 3), on a gradient read whole into the worker's buffer, and the
// reply is the parameters as they are then. Each server counts its own
// pushes, so servers' versions differ.

#include "ps/rules/whole_push_rule.h"

namespace pstrain::ps {

namespace {

class AsyncUpdate : public WholePushRule {
 public:
  explicit AsyncUpdate(ParameterServer* server, const RuleTraits& traits)
      : WholePushRule(server, traits) {}
};

}  // namespace

std::unique_ptr<UpdateRule> MakeAsyncUpdate(ParameterServer* server,
                                            const RuleTraits& traits) {
  return std::make_unique<AsyncUpdate>(server, traits);
}

}  // namespace pstrain::ps
