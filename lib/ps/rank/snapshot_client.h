#pragma once
// SnapshotClient: rank 0's observer (ps/rank/observer.h) as a client of one
// other server: it says hello as a tool of rank 0 and asks for the server's
// slices at a version (wire::Snapshot), the way a worker pulls, so that a
// job of several servers is evaluated and checkpointed whole. Slices arrive
// straight in the tensors given to Fetch. Each call waits at most twice the
// timeout (a snapshot waits for its version). Not thread-safe.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "net/client.h"
#include "util/result.h"

namespace pstrain::ps {

class SnapshotClient : private net::ReplySink {
 public:
  /// `server_rank`: the rank asked (for messages); `world_size`: the job's.
  /// `auth_token`: the --auth_token_file token, "" for none.
  SnapshotClient(int server_rank, int world_size,
                 std::chrono::milliseconds timeout,
                 net::ConnectionOptions options, std::string auth_token);

  /// Connects to `address` ("host:port"), authenticates and says hello.
  /// kTimeout / kUnavailable when the server cannot be reached; the server's
  /// error as sent.
  Status Connect(const std::string& address);
  /// How long Connect retries a refused connection (default: the timeout).
  void set_connect_timeout(std::chrono::milliseconds t) {
    connect_timeout_ = t;
  }
  bool connected() const { return client_.connected(); }

  /// The server's slices at the first version >= min_version it makes (or
  /// its current one when past it), read into `slices` (contiguous CPU
  /// tensors of its slices' dtypes and shapes, ps/job/shard_plan.h order); with
  /// `optimizer_state`, also its optimizer state. Returns the version.
  /// kCorruption for a reply that does not fit; the server's error (e.g.
  /// kUnavailable when its run ended first). With `applied`, the asker is
  /// a standby of the server's shard (wire::Snapshot::standby: it holds
  /// min_version - 1), and *applied becomes the server's
  /// UpdateRule::applied() at that version.
  Result<uint64_t> Fetch(uint64_t min_version,
                         const std::vector<at::Tensor>& slices,
                         std::string* optimizer_state,
                         std::vector<int64_t>* applied = nullptr);
  /// Fetch in two halves: Ask sends the request, Answer waits for its
  /// reply, whose data lands in the tensors and strings Ask was given from
  /// Ask on. A standby asks for the next version, which acknowledges the
  /// one it has, before it loads that one (ps/rank/standby.h). With
  /// `replay` (a standby's, with `applied`), the server may answer with the
  /// record of the step that made min_version instead (wire::StepRecord):
  /// then `slices` get that step's values (ParameterServer::Replay's),
  /// step_record() is true and step_lr() its learning rate, and
  /// `optimizer_state` is left empty.
  Status Ask(uint64_t min_version, const std::vector<at::Tensor>& slices,
             std::string* optimizer_state,
             std::vector<int64_t>* applied = nullptr, bool replay = false);
  Result<uint64_t> Answer();
  /// Whether the last answer was a step record, and its learning rate.
  bool step_record() const { return step_record_; }
  double step_lr() const { return step_lr_; }
  /// Whether the last call's error was the server's answer (an error
  /// frame) rather than a lost or silent connection.
  bool refused() const { return client_.error_from_peer(); }

 private:
  Status OnMeta(const wire::FrameHeader& header, std::string_view meta,
                uint64_t data_bytes,
                std::vector<asio::mutable_buffer>* dst) override;

  int server_rank_;
  int world_size_;
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds connect_timeout_;
  std::string auth_token_;
  net::Client client_;
  const std::vector<at::Tensor>* slices_ = nullptr;  // during Fetch
  std::string* optimizer_state_ = nullptr;           // during Fetch
  std::vector<int64_t>* applied_ = nullptr;          // during Fetch
  bool replay_ = false;                              // during Fetch
  uint64_t version_ = 0;
  bool step_record_ = false;
  double step_lr_ = 0;
  std::string meta_;
};

}  // namespace pstrain::ps
