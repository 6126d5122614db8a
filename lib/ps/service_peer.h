#pragma once
// Service::Peer: what the Service knows of one connection. Private to the
// Service's .cc files.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "net/auth_gate.h"
#include "ps/service.h"

namespace pstrain::ps {

using Clock = std::chrono::steady_clock;

struct Service::Peer {
  enum class Stage { kNew, kHello, kRegistered, kDone };
  std::shared_ptr<net::Connection> conn;
  net::AuthGate auth;  // open once the peer proved the token (or none)
  Stage stage = Stage::kNew;
  Clock::time_point accepted_at = Clock::now();  // for the handshake deadline
  int rank = -1;
  int worker = -1;  // worker index: rank - num_servers
  int server = -1;  // server index (= rank) of a server s > 0, on rank 0
  bool tool = false;  // rank 0's observer: asks for snapshots only
  bool job_pending = false;          // a get_job waiting for the servers
  uint64_t job_id = 0;
  bool shard_in = false;             // a server's final slices arrived
  std::string optimizer_state;       // and the optimizer state they carried
  std::shared_ptr<const Snapshot> snapshot;  // a tool's, until it is written
  Clock::time_point last_heard = Clock::now();  // last frame from it
  uint64_t first_pull_min_version = 0;  // a rejoined sync worker's next step
  // A pull (or the pull half of a push_pull) waiting for a version.
  bool reply_pending = false;
  uint64_t pending_id = 0;
  uint64_t pending_min_version = 0;
  bool pending_ssp = false;          // ssp: also waits for the slowest
  Clock::time_point pending_since;
  double waiting_seconds = 0;        // replies held for other workers
  wire::PushPull push;               // reused for every push_pull
  wire::Push push_only;              // reused for every push
  bool push_is_push_pull = false;
  int params_in_flight = 0;          // params frames not yet written
  struct Piece {
    int key;
    uint64_t offset, bytes;
  };
  // The first key of the push being read that held NaN or Inf, or -1.
  int refused_key = -1;
  std::vector<char> chunk;           // sync: where pushed bytes land
  std::vector<Piece> pieces;         // sync: what each chunk-full holds
  std::string meta;                  // reused encode buffer
};

}  // namespace pstrain::ps
