// Streaming sync: a push is read a chunk at a time through the worker's own
// chunk and each piece is added into the step's sums at once, so memory does
// not grow with the number of workers (ps/rules/step_sums.h). A step is one
// version on every server, and it waits for every member's push.

#include <algorithm>
#include <vector>

#include "ps/rules/sync_rule.h"

namespace pstrain::ps {

namespace {

class StreamingSync : public SyncRule {
 public:
  StreamingSync(const JobSpec& spec, ParameterServer* store)
      : SyncRule(spec, store), chunks_(store->num_workers()) {
    uint64_t total = 0;
    for (const auto& p : store->params())
      total += p.nbytes();
    chunk_bytes_ = std::min(total, ParameterServer::kPieceBytes);
  }

  char* PieceBuffer(int w, int, uint64_t) override {
    if (chunks_[w].size() < chunk_bytes_)
      chunks_[w].resize(chunk_bytes_);  // once
    return chunks_[w].data();
  }
  void AddPiece(int w, int key, uint64_t offset, uint64_t bytes) override {
    Accumulate(w, key, offset, chunks_[w].data(), bytes);
  }
  bool AddsPiecesInPlace() const override { return true; }
  bool AddPieceAt(int w, int key, uint64_t offset, const char* data,
                  uint64_t bytes) override {
    return Accumulate(w, key, offset, data, bytes);
  }
  void AddRecord(int w, int key, wire::Codec codec,
                 const wire::CodecParams& params, const uint8_t* data,
                 uint64_t nbytes) override {
    AccumulateRecord(w, key, codec, params, data, nbytes);
  }
  void AddRows(int w, int key) override { AccumulateRows(w, key); }
  // A refused push still counts so that the step closes, but its earlier
  // finite pieces are in the sums already: the whole step is skipped.
  Result<bool> Apply(int w, uint64_t version, bool refused) override {
    if (refused)
      DiscardStep();
    PS_RETURN_IF_ERROR(CheckPush(w, version));
    if (CountPush(w) < needed())
      return false;
    // The last push's pieces already divided the sums by their count.
    FinishStep();
    return true;
  }

 private:
  // The pieces it already added stay in their sums (each element is then
  // the mean of the gradients that reached it); those that only waited
  // for it are divided now.
  bool LeftStep(int w) override {
    RemoveFromSums(w);
    if (needed() == 0 || pushes_this_step() < needed())
      return false;
    FinishStep();
    return true;
  }

  std::vector<std::vector<char>> chunks_;  // by worker index
  uint64_t chunk_bytes_;
};

}  // namespace

std::unique_ptr<UpdateRule> MakeStreamingSync(const JobSpec& spec,
                                              ParameterServer* server) {
  return std::make_unique<StreamingSync>(spec, server);
}

}  // namespace pstrain::ps
