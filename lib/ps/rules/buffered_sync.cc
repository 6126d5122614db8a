// Buffered sync (--backup_workers, --step_timeout; Chen et al., "Revisiting
// Distributed Synchronous SGD", 2016, section 3): a step may close without
// a push that is half in, so pushes land whole in per-worker buffers and
// are summed in worker order and divided by their count when the step
// closes: with the first num_workers - b pushes, or on --step_timeout
// (CloseStep). A push for an older version arrives after its step closed:
// it is dropped and counted. A refused push is left out of its step. The
// rest is as in streaming sync.

#include <algorithm>

#include "ps/rules/grad_buffers.h"
#include "ps/rules/sync_rule.h"

namespace pstrain::ps {

namespace {

class BufferedSync : public SyncRule {
 public:
  BufferedSync(const JobSpec& spec, ParameterServer* store)
      : SyncRule(spec, store),
        buffers_(*store),
        quorum_(spec.num_workers() - spec.backup_workers) {}

  char* PieceBuffer(int w, int key, uint64_t offset) override {
    return buffers_.Piece(w, key, offset);
  }
  void AddPiece(int, int, uint64_t, uint64_t) override {}
  void AddRecord(int w, int key, wire::Codec codec,
                 const wire::CodecParams& params, const uint8_t* data,
                 uint64_t nbytes) override {
    buffers_.DecodeRecord(w, key, codec, params, data, nbytes);
  }
  void AddRows(int, int) override {}  // they wait in RowsBuffer
  Result<bool> Apply(int w, uint64_t version, bool refused) override {
    if (refused)
      return false;
    PS_RETURN_IF_ERROR(CheckPush(w, version));
    if (version < store()->version()) {  // its step closed without it
      ++dropped_;
      return false;
    }
    return CountPush(w) >= std::min(quorum_, needed()) && CloseStep();
  }
  bool CloseStep() override;
  uint64_t dropped_pushes() const override { return dropped_; }

 private:
  bool LeftStep(int) override {
    return pushes_this_step() > 0 &&
           pushes_this_step() >= std::min(quorum_, needed()) && CloseStep();
  }
  void SumPushedRows();

  GradBuffers buffers_;
  int quorum_;  // pushes that close a step
  uint64_t dropped_ = 0;
};

bool BufferedSync::CloseStep() {
  const int count = pushes_this_step();
  if (count == 0)
    return false;
  UpdateAllKeys();  // the sums are about to change
  const ParameterServer& store = *this->store();
  for (int k = 0; k < store.num_keys(); ++k) {
    if (store.is_row_sparse(k))
      continue;  // SumPushedRows
    bool first = true;
    for (int w = 0; w < store.num_workers(); ++w) {
      if (awaits_push(w))
        continue;
      if (first) {
        sum(k).copy_(buffers_.of(w)[k]);
      } else {
        sum(k).add_(buffers_.of(w)[k]);
      }
      first = false;
    }
    if (sum(k).is_floating_point()) {
      sum(k).div_(count);
    } else {
      sum(k).div_(count, "trunc");
    }
  }
  SumPushedRows();
  FinishStep();
  return true;
}

void BufferedSync::SumPushedRows() {
  const ParameterServer& store = *this->store();
  for (int k = 0; k < store.num_keys(); ++k) {
    if (!store.is_row_sparse(k))
      continue;
    for (int w = 0; w < store.num_workers(); ++w) {
      if (!awaits_push(w) && store.PushedRowIds(w, k).defined())
        AddRowsToSums(w, k);
    }
  }
}

}  // namespace

std::unique_ptr<UpdateRule> MakeBufferedSync(const JobSpec& spec,
                                             ParameterServer* server) {
  return std::make_unique<BufferedSync>(spec, server);
}

}  // namespace pstrain::ps
