// Async and ssp: each push steps the optimizer at once (Li et al., OSDI
// 2014, section 3), on a gradient read whole into the worker's buffer. The
// reply is the parameters as they are then; ssp's also waits until the
// worker is within the staleness bound (ps/ssp_gate.h).

#include "ps/update_rule.h"

namespace pstrain::ps {

namespace {

class AsyncUpdate : public UpdateRule {
 public:
  AsyncUpdate(ParameterServer* server, bool ssp) : server_(server), ssp_(ssp) {}

  char* PieceBuffer(int w, int key, uint64_t offset) override {
    return static_cast<char*>(server_->grad_buffer(w)[key].data_ptr()) + offset;
  }
  void AddPiece(int, int, uint64_t, uint64_t) override {}

  Result<bool> Push(int w, uint64_t version, bool refused) override {
    if (refused) return false;  // never applied
    return server_->Push(w, version);
  }

  uint64_t ReplyVersion(uint64_t) const override { return 0; }
  bool bounds_staleness() const override { return ssp_; }
  bool has_quorum() const override { return false; }

 private:
  ParameterServer* server_;
  bool ssp_;
};

}  // namespace

std::unique_ptr<UpdateRule> MakeAsyncUpdate(ParameterServer* server, bool ssp) {
  return std::make_unique<AsyncUpdate>(server, ssp);
}

}  // namespace pstrain::ps
