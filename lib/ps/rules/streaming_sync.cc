// Streaming sync: a push is read a chunk at a time through the worker's own
// chunk and each piece is added into the step's sums at once, so memory does
// not grow with the number of workers (ParameterServer::Accumulate). A step
// is one version on every server, and it waits for every member's push.

#include <algorithm>
#include <vector>

#include "ps/rules/update_rule.h"

namespace pstrain::ps {

namespace {

class StreamingSync : public UpdateRule {
 public:
  StreamingSync(ParameterServer* server, const RuleTraits& traits)
      : UpdateRule(traits), server_(server), chunks_(server->num_workers()) {
    uint64_t total = 0;
    for (const auto& p : server->params())
      total += p.nbytes();
    chunk_bytes_ = std::min(total, ParameterServer::kPieceBytes);
  }

  char* PieceBuffer(int w, int, uint64_t) override {
    if (chunks_[w].size() < chunk_bytes_)
      chunks_[w].resize(chunk_bytes_);  // once
    return chunks_[w].data();
  }

  void AddPiece(int w, int key, uint64_t offset, uint64_t bytes) override {
    server_->Accumulate(w, key, offset, chunks_[w].data(), bytes);
  }

  void AddRecord(int w, int key, wire::Codec codec,
                 const wire::CodecParams& params, const uint8_t* data,
                 uint64_t nbytes) override {
    server_->AccumulateRecord(w, key, codec, params, data, nbytes);
  }

  void AddRows(int w, int key) override { server_->AccumulateRows(w, key); }

  // A refused push still counts so that the step closes, but its earlier
  // finite pieces are in the sums already: the whole step is skipped.
  Result<bool> Push(int w, uint64_t version, bool refused) override {
    if (refused)
      server_->DiscardStep();
    return server_->Push(w, version);
  }

 private:
  ParameterServer* server_;
  std::vector<std::vector<char>> chunks_;  // by worker index
  uint64_t chunk_bytes_;
};

}  // namespace

std::unique_ptr<UpdateRule> MakeStreamingSync(ParameterServer* server,
                                              const RuleTraits& traits) {
  return std::make_unique<StreamingSync>(server, traits);
}

}  // namespace pstrain::ps
