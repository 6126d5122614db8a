#pragma once
// EngineHarness: a ps::Engine over a real ParameterServer and a FakeOutbox,
// with a clock the test moves. It plays the Service's part: frames are fed
// as a connection would feed them (header, meta, the data bytes into the
// buffers the Engine names, piece by piece, then the frame), and the test
// decides when writes end and posted work runs. No sockets, no sleeps.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/engine/engine.h"
#include "ps/engine/read_plan.h"
#include "ps/store/parameter_server.h"
#include "report/server_stats.h"
#include "report/worker_stats.h"
#include "testing/fake_outbox.h"
#include "wire/messages.h"

namespace pstrain::testing {

/// A worker's done message reporting `samples` (the other fields zero).
wire::Done DoneWith(int64_t samples = 0);

/// A job of `workers` workers and one server in `mode`, stepping with
/// plain SGD (lr 0.5, no momentum: steps a test can work out by hand),
/// whose silent workers are never dropped (dead_after 0).
ps::JobSpec SgdSpec(ps::Mode mode, int workers);

class EngineHarness {
 public:
  /// `params`: the server's parameters (float32, CPU); the engine's
  /// fingerprint is theirs, keys named "k0", "k1", ...
  /// `row_sparse`: as ParameterServer's (by key; empty: none).
  EngineHarness(const ps::JobSpec& spec, std::vector<at::Tensor> params,
                ps::EngineOptions options = {},
                std::vector<bool> row_sparse = {});

  ps::Engine& engine() { return *engine_; }
  ps::ParameterServer& server() { return *server_; }
  FakeOutbox& outbox() { return outbox_; }
  ps::Time now() const { return now_; }
  void Advance(std::chrono::milliseconds d) { now_ += d; }
  /// Advances by one tick and ticks.
  void Tick();

  ps::PeerId Accept();
  /// Feeds a frame of `msg` with no data; the first refusal (OnHeader,
  /// OnMeta) is returned, and then the frame is not fed further.
  template <typename M>
  Status Feed(ps::PeerId peer, const M& msg, uint64_t id) {
    std::string meta;
    wire::EncodeMeta(msg, &meta);
    return FeedRaw(peer, wire::TypeOf(msg), meta, id, {});
  }
  /// `data`: where each planned buffer's bytes come from, `data_bytes` in
  /// all; `pieces` >= 0: only that many buffers arrive.
  Status FeedRaw(ps::PeerId peer, wire::MsgType type, const std::string& meta,
                 uint64_t id, const std::vector<const char*>& data,
                 uint64_t data_bytes = 0, int pieces = -1);
  /// A tagged push_pull (wire::kFrameTagged) of `grads` in key order, whose
  /// keys `arrive` come in that order, each whole; the frame completes once
  /// every key has come.
  Status PushTagged(ps::PeerId peer, uint64_t version,
                    const std::vector<at::Tensor>& grads, uint64_t id,
                    const std::vector<int>& arrive);
  /// A worker of `rank` connects, says hello and registers; asserts both
  /// are answered.
  ps::PeerId JoinWorker(int rank);
  /// A push_pull (or push) of `grads` (one per key, the params' shapes)
  /// computed on `version`. `pieces` >= 0: only that many pieces arrive,
  /// and the frame never completes.
  /// `order`: the keys in the order the push carries them (empty: key
  /// order).
  Status Push(ps::PeerId peer, uint64_t version,
              const std::vector<at::Tensor>& grads, uint64_t id,
              bool push_pull = true, int pieces = -1,
              const std::vector<int>& order = {});
  /// A push_pull of `grads` as Push, but the keys of `rows` (key, ids,
  /// rows [ids.size(), row_dim]) travel as sparse rows, not in `grads`
  /// (whose entries for them are ignored), and `want` (key, ids) asks for
  /// rows in the reply. A `codec` other than raw sends `record` as the
  /// rows' bytes (the descriptor's nbytes its size) instead of `rows`,
  /// which still give the shape.
  struct KeyRows {
    KeyRows(uint32_t key, std::vector<int64_t> ids, at::Tensor rows,
            wire::Codec codec = wire::Codec::kRaw,
            std::vector<uint8_t> record = {})
        : key(key),
          ids(std::move(ids)),
          rows(std::move(rows)),
          codec(codec),
          record(std::move(record)) {}
    uint32_t key;
    std::vector<int64_t> ids;
    at::Tensor rows;
    wire::Codec codec;
    std::vector<uint8_t> record;
  };
  Status PushRows(ps::PeerId peer, uint64_t version,
                  const std::vector<at::Tensor>& grads,
                  const std::vector<KeyRows>& rows,
                  const std::vector<wire::RowRequest>& want, uint64_t id);
  /// A push_pull whose key k carries `records[k]`: the codec and bytes of
  /// a tensor of the params' shape (raw: the float32 elements), with the
  /// descriptor's nbytes their size; the bytes arrive in pieces of
  /// ParameterServer::kPieceBytes.
  struct Record {
    wire::Codec codec;
    std::vector<uint8_t> bytes;
  };
  Status PushRecords(ps::PeerId peer, uint64_t version,
                     const std::vector<Record>& records, uint64_t id);
  void Close(ps::PeerId peer, const Status& why = Unavailable("reset"));
  /// Runs posted work until none is left.
  void RunPosts();
  /// Every params frame sent so far and not yet written leaves now.
  void WriteAll();
  /// RunPosts, then WriteAll, until neither has anything to do.
  void Settle();

  /// The params replies sent to `peer`: (request_id, version, stop).
  struct ParamsReply {
    uint64_t request_id;
    uint64_t version;
    bool stop;
  };
  std::vector<ParamsReply> ParamsTo(ps::PeerId peer) const;
  /// Whether `peer` was closed, and the error it was sent (if any).
  std::optional<FakeOutbox::Closed> ClosedFor(ps::PeerId peer) const;
  /// The frames sent to `peer` of `type`.
  int CountSent(ps::PeerId peer, wire::MsgType type) const;

 private:
  ps::JobSpec spec_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<ps::ParameterServer> server_;
  FakeOutbox outbox_;
  std::unique_ptr<ps::Engine> engine_;
  ps::Time now_;
  ps::PeerId next_peer_ = 1;
  size_t written_ = 0;  // outbox_.sent[0, written_) have been written
};

}  // namespace pstrain::testing
