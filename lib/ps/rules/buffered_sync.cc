// Buffered sync (--backup_workers, --step_timeout; Chen et al., "Revisiting
// Distributed Synchronous SGD", 2016, section 3): a step may close without
// a push that is half in, so pushes land whole in per-worker buffers and
// are summed when the step closes; a refused push is left out of it. The
// rest is as in streaming sync.

#include "ps/rules/whole_push_rule.h"

namespace pstrain::ps {

namespace {

class BufferedSync : public WholePushRule {
 public:
  BufferedSync(ParameterServer* server, const RuleTraits& traits)
      : WholePushRule(server, traits) {}
};

}  // namespace

std::unique_ptr<UpdateRule> MakeBufferedSync(ParameterServer* server,
                                             const RuleTraits& traits) {
  return std::make_unique<BufferedSync>(server, traits);
}

}  // namespace pstrain::ps
