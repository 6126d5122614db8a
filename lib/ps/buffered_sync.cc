// Buffered sync (--backup_workers, --step_timeout; Chen et al., "Revisiting
// Distributed Synchronous SGD", 2016, section 3): a step may close without
// a push that is half in, so pushes land whole in per-worker buffers and
// are summed when the step closes.

#include "ps/update_rule.h"

namespace pstrain::ps {

namespace {

class BufferedSync : public UpdateRule {
 public:
  BufferedSync(ParameterServer* server, double step_timeout)
      : server_(server), step_timeout_(step_timeout) {}

  char* PieceBuffer(int w, int key, uint64_t offset) override {
    return static_cast<char*>(server_->grad_buffer(w)[key].data_ptr()) + offset;
  }
  void AddPiece(int, int, uint64_t, uint64_t) override {}

  // A refused push is never applied: the step closes without it.
  Result<bool> Push(int w, uint64_t version, bool refused) override {
    if (refused) return false;
    return server_->Push(w, version);
  }

  uint64_t ReplyVersion(uint64_t version) const override { return version + 1; }
  bool has_quorum() const override { return true; }
  double step_timeout() const override { return step_timeout_; }

 private:
  ParameterServer* server_;
  double step_timeout_;
};

}  // namespace

std::unique_ptr<UpdateRule> MakeBufferedSync(ParameterServer* server, double step_timeout) {
  return std::make_unique<BufferedSync>(server, step_timeout);
}

}  // namespace pstrain::ps
