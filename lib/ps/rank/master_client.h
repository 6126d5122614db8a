#pragma once
// MasterClient: server s > 0's view of rank 0 (the master): the handshake
// as a server, where it listens (server_info), and at the end its slices
// and optimizer state (shard), which rank 0 merges and saves. Each call
// waits at most the timeout; a server error reply comes back as its Status.
// Not thread-safe.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "net/client.h"
#include "ps/job/job_spec.h"
#include "util/result.h"
#include "wire/messages.h"

namespace pstrain::ps {

class MasterClient {
 public:
  /// `auth_token`: the --auth_token_file token, "" for none.
  MasterClient(std::chrono::milliseconds timeout,
               net::ConnectionOptions options, std::string auth_token);

  /// Connects to rank 0, retrying until the timeout (it may start later),
  /// then authenticates when there is a token.
  Status Connect(const std::string& host, int port);
  /// Hello as server `rank` (or, with `role` tool, as a tool of rank 0),
  /// then the job spec. Rank 0's errors as sent (kIncompatible for a
  /// world_size mismatch, kInvalidArgument for a bad rank or one that is
  /// connected already); kInvalidArgument for a job spec that is not valid
  /// (JobSpecFromPeer): the peer is not a pstrain master of this version.
  /// A tool's job spec waits until every server has said where it listens.
  Result<JobSpec> Handshake(int rank, int world_size,
                            wire::Role role = wire::Role::kServer);
  /// A standby's claim of server `shard`'s shard (ps/rank/standby.h): a
  /// hello as that server, from server rank `claimant`, holding a copy of
  /// `*version` (nullopt: no copy), then the job spec. Rank 0 answers once
  /// it has chosen among the claims, or refuses: kInvalidArgument for a
  /// rank still connected, kUnavailable for a claim that lost to a later
  /// copy or has none; refused() then says the refusal was rank 0's.
  Result<JobSpec> Claim(int shard, int world_size, int claimant,
                        std::optional<uint64_t> version);
  /// Whether the last call failed on rank 0's error reply (rather than the
  /// connection).
  bool refused() const { return client_.error_from_peer(); }
  /// Whether rank 0 ended this connection: it refused a call (its line
  /// fencing this server, say), or closed or reset it, which may come
  /// before its line is read.
  bool ended() const { return refused() || !client_.connected(); }
  /// How long each later call waits for rank 0.
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }
  /// The job's TorchScript module, whose SHA-256 is `sha256` (the job
  /// spec's model_sha256): ps::FetchModule.
  Result<std::shared_ptr<const std::string>> FetchModule(
      const std::string& sha256);
  /// Where workers reach this server ("host:port").
  Status AnnounceServer(const std::string& address);
  /// Rank 0 is gone, and the arbiter may name a successor
  /// (ps/rank/succession.h), which binds the job's master address
  /// `host`:`port`: connects there afresh, retrying until the timeout, and
  /// says hello as server `rank` and where it listens (`address`), as at
  /// the start. Errors as Connect, Handshake and AnnounceServer: the
  /// successor's refusal (refused() true) when another process serves
  /// `rank` now.
  Status Rejoin(const std::string& host, int port, int rank, int world_size,
                const std::string& address);
  /// While serving (ps/rank/server_beats.h): reads what rank 0 sent, then
  /// sends it a heartbeat. Rank 0's error (a line naming the term it
  /// ended, when it fenced this server) as sent; kUnavailable when rank 0
  /// closed the connection or the write failed. Never waits.
  Status Beat();
  /// At the end: this server's slices (ps/job/shard_plan.h order, contiguous
  /// CPU tensors) at `version`, and its optimizer state
  /// (SerializeOptimizerState bytes); waits for the ack, then closes.
  Status SendShard(uint64_t version, const std::vector<at::Tensor>& slices,
                   const std::string& optimizer_state);

  /// This end's address: the interface that reaches rank 0.
  std::string local_address() const { return client_.local_address(); }

 private:
  Status Call(net::FrameBuffers& request, wire::MsgType want);
  Result<JobSpec> Hello(const wire::Hello& hello);

  std::chrono::milliseconds timeout_;
  std::string auth_token_;
  net::Client client_;
  std::string meta_;
  std::string beat_;  // a heartbeat frame, encoded once
};

}  // namespace pstrain::ps
