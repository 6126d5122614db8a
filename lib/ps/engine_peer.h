#pragma once
// Peer: what the Engine knows of one connection. Private to the
// Engine's .cc files.

#include <memory>
#include <string>
#include <vector>

#include "net/auth_gate.h"
#include "ps/engine.h"

namespace pstrain::ps {

struct Peer {
  enum class Stage { kNew, kHello, kRegistered, kDone };
  PeerId id = 0;
  std::string remote;  // "host:port", for messages
  net::AuthGate auth;  // open once the peer proved the token (or none)
  Stage stage = Stage::kNew;
  bool closing = false;  // we sent an error or closed it: no more frames
  Time accepted_at;      // for the handshake deadline
  Time last_heard;       // last frame from it
  int rank = -1;
  int worker = -1;    // worker index: rank - num_servers
  int server = -1;    // server index (= rank) of a server s > 0, on rank 0
  bool tool = false;  // rank 0's observer: asks for snapshots only
  bool job_pending = false;  // a get_job waiting for the servers
  uint64_t job_id = 0;
  bool shard_in = false;                     // a server's final slices arrived
  std::shared_ptr<const Snapshot> snapshot;  // a tool's, until it is written
  uint64_t first_pull_min_version = 0;  // a rejoined sync worker's next step
  // A pull (or the pull half of a push_pull) waiting for a version.
  bool reply_pending = false;
  uint64_t pending_id = 0;
  uint64_t pending_min_version = 0;
  bool pending_ssp = false;  // ssp: also waits for the slowest
  Time pending_since;
  double waiting_seconds = 0;  // replies held for other workers
  wire::PushPull push;         // reused for every push_pull
  wire::Push push_only;        // reused for every push
  bool push_is_push_pull = false;
  struct Piece {
    int key;
    uint64_t offset, bytes;
    // A row-sparse key's rows (RowsBuffer), whole; a record of them at
    // its front, decoded there (Engine::AddRowsPiece).
    char* rows = nullptr;
    // A compressed record's last piece: the record's bytes (it is in
    // `record` whole once this piece is); 0 for any other piece.
    uint64_t record_bytes = 0;
  };
  // The row requests of the push_pull being answered (the reply's rows),
  // and that reply's message and gathered rows, raw or coded in the pull
  // codec (by request), kept until written.
  std::vector<wire::RowRequest> want;
  wire::Params reply;
  std::vector<at::Tensor> reply_rows;
  std::vector<std::vector<uint8_t>> reply_records;
  // The first key of the push being read that held NaN or Inf or a
  // malformed compressed record, or -1; and what was wrong with it.
  int refused_key = -1;
  std::string refused_why;
  // --placement server: the batch being read or computed, where its bytes
  // land (reused while its shapes stay), and the loss it gave.
  wire::PushBatch batch;
  at::Tensor batch_x, batch_y;
  bool batch_in_flight = false;
  double batch_loss = 0;
  std::vector<uint8_t> record;  // a compressed record being read, whole
  std::vector<Piece> pieces;    // what each buffer of the push holds
  std::string meta;             // reused encode buffer

  uint64_t pushed_version() const {
    return push_is_push_pull ? push.version : push_only.version;
  }
};

}  // namespace pstrain::ps
