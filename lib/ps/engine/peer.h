#pragma once
// The Engine's peers, typed by role. Every connection is a Peer from accept
// on: its handshake stage, its times and the buffer its replies are encoded
// in. Its hello names its role, and the Engine then keeps it as one of
//   WorkerPeer: a worker (pushes, pulls, batches; Membership holds it while
//               it is registered);
//   ServerPeer: server s > 0 of a job of several servers, on rank 0;
//   ToolPeer:   rank 0's observer, which asks for snapshots only.
// Private to the Engine's .cc files (and their tests).
//
// Threading: the Engine's thread only.

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "net/auth_gate.h"
#include "ps/engine/outbox.h"
#include "ps/store/snapshot.h"
#include "wire/messages.h"

namespace pstrain::ps {

/// One connection, whatever its role.
struct Peer {
  enum class Stage { kNew, kHello, kRegistered, kDone };
  enum class Role { kUnknown, kWorker, kServer, kTool };

  Peer() = default;
  Peer(Peer&&) = default;
  virtual ~Peer() = default;

  PeerId id = 0;
  std::string remote;  // "host:port", for messages
  net::AuthGate auth;  // open once the peer proved the token (or none)
  Stage stage = Stage::kNew;
  Role role = Role::kUnknown;  // from its hello on
  bool closing = false;        // we sent an error or closed it: no more frames
  Time accepted_at;            // for the handshake deadline
  Time last_heard;             // last frame from it
  int rank = -1;
  bool job_pending = false;  // a get_job waiting for the servers
  uint64_t job_id = 0;
  std::string meta;  // reused encode buffer
};

/// A worker (worker index: rank - num_servers).
struct WorkerPeer final : Peer {
  WorkerPeer(Peer&& common, int index)
      : Peer(std::move(common)), worker(index) {}

  // What each buffer of a push being read holds.
  struct Piece {
    int key;
    uint64_t offset, bytes;
    // A row-sparse key's rows (RowsBuffer), whole; a record of them at
    // its front, decoded there (PushReader::Read).
    char* rows = nullptr;
    // A compressed record's last piece: the record's bytes (it is in
    // `record` whole once this piece is); 0 for any other piece.
    uint64_t record_bytes = 0;
  };
  // --placement server: the batch being read or computed, where its bytes
  // land (reused while its shapes stay), and the loss it gave.
  struct Batch {
    wire::PushBatch msg;
    at::Tensor x, y;
    bool in_flight = false;
    double loss = 0;
  };

  /// The version the push being read was computed on.
  uint64_t pushed_version() const {
    return push_is_push_pull ? push.version : push_only.version;
  }

  const int worker;
  uint64_t first_pull_min_version = 0;  // a rejoined sync worker's next step
  double waiting_seconds = 0;           // replies held for other workers
  wire::PushPull push;                  // reused for every push_pull
  wire::Push push_only;                 // reused for every push
  bool push_is_push_pull = false;
  // Whether the reply to the push being read went out before the push was
  // in (the step under way updates keys ahead).
  bool replied_ahead = false;
  // --replicas, sync: the push is for a version this server has made
  // already; a worker sends it again to a standby that took the shard
  // over, and its step holds it. It is read and dropped, and answered.
  bool duplicate = false;
  // The first key of the push being read that held NaN or Inf or a
  // malformed compressed record, or -1; and what was wrong with it.
  int refused_key = -1;
  std::string refused_why;
  std::vector<uint8_t> record;  // a compressed record being read, whole
  std::vector<Piece> pieces;    // what each buffer of the push holds
  Batch batch;
};

/// Server s > 0 (s: its rank), on rank 0.
struct ServerPeer final : Peer {
  explicit ServerPeer(Peer&& common) : Peer(std::move(common)) {}
  /// Its server index (its rank).
  int server() const { return rank; }

  bool shard_in = false;  // its final slices arrived
  // It sends heartbeats while it serves (from its server_info on), so its
  // silence for --dead_after means it is stopped or its host is gone.
  bool beats = false;
  bool shard_coming = false;  // its final slices are being read
};

/// Rank 0's observer.
struct ToolPeer final : Peer {
  explicit ToolPeer(Peer&& common) : Peer(std::move(common)) {}

  std::shared_ptr<const Snapshot> snapshot;  // until it is written
};

/// `peer` as its role's type, or null when it has another role.
inline WorkerPeer* AsWorker(Peer& peer) {
  return peer.role == Peer::Role::kWorker ? static_cast<WorkerPeer*>(&peer)
                                          : nullptr;
}
/// As AsWorker.
inline ServerPeer* AsServer(Peer& peer) {
  return peer.role == Peer::Role::kServer ? static_cast<ServerPeer*>(&peer)
                                          : nullptr;
}
/// As AsWorker.
inline ToolPeer* AsTool(Peer& peer) {
  return peer.role == Peer::Role::kTool ? static_cast<ToolPeer*>(&peer)
                                        : nullptr;
}
/// Sends `peer` a frame of `type` answering `id`, with peer.meta as its
/// meta and no data; nothing once it is closing.
inline void Reply(Outbox& outbox, Peer& peer, wire::MsgType type, uint64_t id) {
  if (peer.closing)
    return;
  OutFrame frame;
  frame.type = type;
  frame.request_id = id;
  frame.meta = peer.meta;
  outbox.Send(peer.id, frame);
}
/// Answers `id` with the error `why` and closes `peer`; nothing once it is
/// closing.
inline void Refuse(Outbox& outbox, Peer& peer, uint64_t id, const Status& why) {
  if (peer.closing)
    return;
  peer.closing = true;
  outbox.SendErrorAndClose(peer.id, id, why);
}
/// A worker that registered and has not sent done, or null: only workers
/// ever register.
inline WorkerPeer* Registered(Peer& peer) {
  return peer.stage == Peer::Stage::kRegistered ? AsWorker(peer) : nullptr;
}

}  // namespace pstrain::ps
