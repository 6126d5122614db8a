// Streaming sync: a push is read a chunk at a time through the worker's own
// chunk and each piece is added into the step's sums at once, so memory does
// not grow with the number of workers (ParameterServer::Accumulate). A step
// is one version on every server, and it waits for every member's push.

#include <algorithm>
#include <vector>

#include "ps/update_rule.h"

namespace pstrain::ps {

namespace {

// Versions of notice a snapshot of several servers is asked with: the
// servers make the same versions, but not at the same instant, and none
// may have passed the version when asked.
constexpr uint64_t kSnapshotLead = 3;

class StreamingSync : public UpdateRule {
 public:
  explicit StreamingSync(ParameterServer* server)
      : UpdateRule(StreamingSyncTraits()),
        server_(server),
        chunks_(server->num_workers()) {
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

RuleTraits StreamingSyncTraits() {
  RuleTraits t;
  t.applies_each_push = false;
  t.buffers_pushes = false;
  t.waits_for_every_member = true;
  t.reply_awaits_step = true;
  t.bounds_staleness = false;
  t.rejoin_awaits_next_version = true;
  t.snapshot_versions_agree = true;
  t.snapshot_lead = kSnapshotLead;
  t.step_timeout = 0;
  t.refused_push_outcome = "the step is skipped";
  return t;
}

std::unique_ptr<UpdateRule> MakeStreamingSync(ParameterServer* server) {
  return std::make_unique<StreamingSync>(server);
}

}  // namespace pstrain::ps
