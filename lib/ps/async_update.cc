// Async and ssp: each push steps the optimizer at once (Li et al., OSDI
// 2014, section 3), on a gradient read whole into the worker's buffer. The
// reply is the parameters as they are then; ssp's also waits until the
// worker is within the staleness bound (ps/ssp_gate.h).

#include "ps/whole_push_rule.h"

namespace pstrain::ps {

namespace {

class AsyncUpdate : public WholePushRule {
 public:
  AsyncUpdate(ParameterServer* server, bool ssp)
      : WholePushRule(server), ssp_(ssp) {}

  uint64_t ReplyVersion(uint64_t) const override { return 0; }
  bool bounds_staleness() const override { return ssp_; }
  bool has_quorum() const override { return false; }

 private:
  bool ssp_;
};

}  // namespace

std::unique_ptr<UpdateRule> MakeAsyncUpdate(ParameterServer* server, bool ssp) {
  return std::make_unique<AsyncUpdate>(server, ssp);
}

}  // namespace pstrain::ps
