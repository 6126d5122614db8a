// Buffered sync (--backup_workers, --step_timeout; Chen et al., "Revisiting
// Distributed Synchronous SGD", 2016, section 3): a step may close without
// a push that is half in, so pushes land whole in per-worker buffers and
// are summed when the step closes; a refused push is left out of it.

#include "ps/whole_push_rule.h"

namespace pstrain::ps {

namespace {

class BufferedSync : public WholePushRule {
 public:
  BufferedSync(ParameterServer* server, double step_timeout)
      : WholePushRule(server), step_timeout_(step_timeout) {}

  uint64_t ReplyVersion(uint64_t version) const override { return version + 1; }
  bool has_quorum() const override { return true; }
  double step_timeout() const override { return step_timeout_; }

 private:
  double step_timeout_;
};

}  // namespace

std::unique_ptr<UpdateRule> MakeBufferedSync(ParameterServer* server,
                                             double step_timeout) {
  return std::make_unique<BufferedSync>(server, step_timeout);
}

}  // namespace pstrain::ps
