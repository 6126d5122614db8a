// Buffered sync (--backup_workers, --step_timeout; Chen et al., "Revisiting
// Distributed Synchronous SGD", 2016, section 3): a step may close without
// a push that is half in, so pushes land whole in per-worker buffers and
// are summed when the step closes; a refused push is left out of it. The
// rest is as in streaming sync.

#include "ps/whole_push_rule.h"

namespace pstrain::ps {

namespace {

class BufferedSync : public WholePushRule {
 public:
  BufferedSync(ParameterServer* server, double step_timeout)
      : WholePushRule(server, BufferedSyncTraits(step_timeout)) {}
};

}  // namespace

RuleTraits BufferedSyncTraits(double step_timeout) {
  RuleTraits t = StreamingSyncTraits();
  t.buffers_pushes = true;
  t.step_timeout = step_timeout;
  // Only the refused push is dropped: its step closes with the others.
  t.refused_push_outcome = "it is left out of the step";
  return t;
}

std::unique_ptr<UpdateRule> MakeBufferedSync(ParameterServer* server,
                                             double step_timeout) {
  return std::make_unique<BufferedSync>(server, step_timeout);
}

}  // namespace pstrain::ps
