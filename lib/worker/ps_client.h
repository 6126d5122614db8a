#pragma once
// PsClient: a worker's view of one parameter server: handshake, model
// registration, pull and push-pull, done. (A server s > 0's view of rank 0
// is ps/rank/master_client.h.) Parameters arrive straight in the
// storage of the tensors given to Attach (no staging copy), and gradients
// leave straight from theirs. Each call waits at most `timeout`; a server
// error reply comes back as its Status. Replies are awaited for twice the
// timeout: in sync mode a reply waits on the other workers, and the server,
// which sees them all, gives up first and says which rank is missing.
// Not thread-safe. The tensors given to Attach must outlive the PsClient.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>

#include "net/client.h"
#include "ps/job/job_spec.h"
#include "report/worker_stats.h"
#include "util/result.h"
#include "wire/messages.h"
#include "worker/heartbeat_frame.h"
#include "worker/params_reply.h"
#include "worker/push_frames.h"
#include "worker/sparse_slot.h"

namespace pstrain::worker {

class ExchangeSpans;
class ParamArrivals;
class PushCompressor;

class PsClient : private net::ReplySink {
 public:
  /// `server_rank`: the rank this client talks to, for error messages.
  PsClient(std::chrono::milliseconds timeout, net::ConnectionOptions options,
           int server_rank = 0);

  /// Connects to the master, retrying until the timeout (it may start later),
  /// then, with a token set, authenticates both ways (net/auth.h).
  Status Connect(const std::string& host, int port);
  /// The same, retrying a refused connection for `timeout` only.
  Status Connect(const std::string& host, int port,
                 std::chrono::milliseconds timeout);
  /// The --auth_token_file token; "" (the default): none.
  void set_auth_token(std::string token) { auth_token_ = std::move(token); }
  /// The job's --dead_after, in seconds, once the handshake gave it
  /// (net::Client::set_dead_after).
  void set_dead_after(double seconds) { client_.set_dead_after(seconds); }
  /// Hello, then the job spec. kIncompatible / kInvalidArgument from the
  /// server for a world_size mismatch, a bad or duplicate rank;
  /// kInvalidArgument "the job spec from rank 0: ..." for a job spec that
  /// is not valid (ps::JobSpecFromPeer), is of another world_size, makes a
  /// worker's `rank` a server's, or lacks the addresses of the servers.
  /// After Handshake: moves the connection onto shared memory when
  /// `transport` (the job's --transport) allows and the server is on this
  /// host (net/shm_handover.h). Returns the line to log: which transport
  /// was chosen, and why not shared memory. Errors are the connection's.
  Result<std::string> UseTransport(const std::string& transport);
  Result<ps::JobSpec> Handshake(int rank, int world_size,
                                wire::Role role = wire::Role::kWorker);
  /// The job spec again, on a connection past its hello: a server's
  /// address may have changed since (a restarted server listens where the
  /// kernel put it). Errors as Handshake but for the world checks.
  Result<ps::JobSpec> GetJob();
  /// Rank 0's TorchScript module, whose SHA-256 is `sha256` (the job
  /// spec's model_sha256): ps::FetchModule.
  Result<std::shared_ptr<const std::string>> FetchModule(
      const std::string& sha256);
  /// Sends the model fingerprint; kIncompatible naming the first differing
  /// key when the server's model differs.
  Status Register(const std::vector<wire::KeySpec>& keys);

  /// Where pulled parameters land (contiguous CPU tensors, key order) and
  /// where pushed gradients come from (same shapes and dtypes).
  void Attach(std::vector<at::Tensor> params, std::vector<at::Tensor> grads);
  /// Pushes from now on wait on `gate` (net/send_gate.h): gradient k goes
  /// out once the gate has opened marks[k] (one per attached tensor), and
  /// gradients travel in ascending mark order, so those computed first go
  /// first. `gate` must outlive this client; nullptr: key order, no gate.
  void SetSendGate(net::SendGate* gate, std::vector<uint32_t> marks);
  /// --priority: pushes list the gradients in key order, the order the next
  /// forward needs them, and are tagged (wire::kFrameTagged), so that each
  /// goes out as soon as its mark opens, before any later one still
  /// waiting: a gradient backward makes last, but forward needs first,
  /// overtakes the rest of a large one made earlier (P3: Jayarajan et al.,
  /// SysML 2019, section 3). Over TCP a gradient is queued behind at most
  /// about `send_window` unsent bytes in the kernel
  /// (net::Connection::SetSendWindow). Pushes with row-sparse keys stay in
  /// mark order, untagged. `priority` false: none of this (the default).
  void SetPriority(bool priority, uint64_t send_window) {
    push_.SetPriority(priority);
    if (priority)
      client_.SetSendWindow(send_window);
  }
  /// The link order of this worker's host (net/link_turn.h): the words
  /// shared with a server of this host over shared memory (nullptr when
  /// this client is not on it), and, for a client of a server on another
  /// host, the words its pushes count into.
  std::shared_ptr<net::ShmLinkWords> shm_link_words() const {
    return client_.shm_link_words();
  }
  void CountPushesInto(std::shared_ptr<net::ShmLinkWords> words) {
    client_.CountPushesInto(std::move(words));
  }
  /// Replies report to `arrivals` (which must outlive this client) as they
  /// come in: their meta, then each attached tensor, as a slice of key
  /// slice_keys[i]. nullptr: none.
  void SetArrivals(ParamArrivals* arrivals, std::vector<int> slice_keys);

  /// The row-sparse keys among the attached tensors; `*slots` must outlive
  /// this client. From now on a push_pull carries their rows and asks for
  /// rows, and its reply's rows are written into the attached tensors
  /// (index_copy_) as they arrive. A pull still fetches them whole.
  /// nullptr: none.
  void SetSparse(std::vector<SparseSlot>* slots);

  /// Pushes carry the compressed keys of `compressor` (which must outlive
  /// this client, or until the next call) as its records, the others as
  /// raw gradients. nullptr: all raw.
  void SetCompressor(PushCompressor* compressor);
  /// Replies may carry float32 parameters in `codec` (--pull_compression:
  /// fp16 or bf16), decoded into the attached tensors as they arrive; a
  /// record that does not decode (wire::Validate) fails the call. Raw:
  /// none may.
  void SetPullCodec(wire::Codec codec) { reply_.set_pull_codec(codec); }
  /// --timeline: push-pulls report their keys' writes and arrivals to
  /// `spans` (which must outlive this client). nullptr: none.
  void SetSpans(ExchangeSpans* spans) { spans_ = spans; }

  /// Pulls parameters of at least `min_version`; returns the version.
  Result<uint64_t> Pull(uint64_t min_version);
  /// Pushes the gradients computed on `version` and receives the next
  /// parameters (sync: those of version+1); returns their version.
  Result<uint64_t> PushPull(uint64_t version);
  /// Pushes the gradients computed on `version` without waiting for new
  /// parameters (Pull fetches them).
  Status Push(uint64_t version);
  /// --placement server: sends one batch (x float32 [b, ...], y int64 [b]
  /// or float32 [b, ...], contiguous CPU) for the server's model, as of
  /// the server's `version`, and waits for the step it makes (batch_done).
  /// Returns the batch's loss; reply_version() and stop_requested() then
  /// say the server's version and whether the job stops. The server's
  /// errors as it sent them (a batch of the wrong shape: kInvalidArgument
  /// naming both shapes).
  Result<double> PushBatch(uint64_t version, const at::Tensor& x,
                           const at::Tensor& y);
  /// Reports the worker's stats and waits for the ack, then closes.
  Status Done(const report::WorkerStats& stats);

  /// From another thread, while this worker computes: tells the server it
  /// is alive, with `progress` (wire::Heartbeat::json; "" for none), unless
  /// a call is running, which the server hears anyway: then false, and
  /// nothing is sent. Errors are left for the next call to find.
  bool Heartbeat(std::string_view progress);

  /// Whether the connection was lost without an error from the server (a
  /// restarted or killed server), so reconnecting may help.
  bool lost() const {
    return !client_.connected() && !client_.error_from_peer();
  }
  /// Whether the connection is up.
  bool connected() const { return client_.connected(); }
  /// Whether the last call ended with an error the server sent (it refused
  /// the request, or ended the run).
  bool refused() const { return client_.error_from_peer(); }

  /// The address of this end of the connection ("" when not connected).
  std::string local_address() const { return client_.local_address(); }

  /// The last params reply's members (wire::Params::members), and its
  /// version: read them once the reply's meta is in (ParamArrivals).
  const std::vector<uint32_t>& members() const { return reply_.meta().members; }
  uint64_t reply_version() const { return reply_.meta().version; }
  /// Whether the last params reply said the job stops (wire::Params::stop).
  bool stop_requested() const { return reply_.meta().stop; }

  uint64_t bytes_pushed() const { return client_.bytes_written(); }
  uint64_t bytes_pulled() const { return client_.bytes_read(); }
  /// As bytes_pushed() and bytes_pulled(), as of the end of the last call
  /// or heartbeat; from any thread, even while a call runs.
  uint64_t bytes_pushed_seen() const {
    return pushed_seen_.load(std::memory_order_relaxed);
  }
  uint64_t bytes_pulled_seen() const {
    return pulled_seen_.load(std::memory_order_relaxed);
  }

 private:
  // REQUIRES: call_mu_ held.
  void NoteBytes() {
    pushed_seen_.store(client_.bytes_written(), std::memory_order_relaxed);
    pulled_seen_.store(client_.bytes_read(), std::memory_order_relaxed);
  }
  Status OnMeta(const wire::FrameHeader& header, std::string_view meta,
                uint64_t data_bytes,
                std::vector<asio::mutable_buffer>* dst) override;
  bool piecewise() const override { return arrivals_ != nullptr; }
  void OnPiece(size_t index) override;
  Status Expect(wire::MsgType got, wire::MsgType want) const;
  /// After a params reply is in whole: the rows and records not yet
  /// applied (without ParamArrivals, pieces are not reported), then the
  /// first of their failures.
  Status FinishReply();
  /// One request and its reply of type `want`; data goes to `sink`.
  Status Call(net::FrameBuffers& request, net::ReplySink* sink,
              wire::MsgType want);

  std::chrono::milliseconds timeout_;          // for replies
  std::chrono::milliseconds connect_timeout_;  // for the first connection
  int server_rank_;
  net::Client client_;
  std::vector<at::Tensor> params_;
  PushFrames push_;  // what pushes carry: the gradients, rows, descriptors
  ParamArrivals* arrivals_ = nullptr;
  std::vector<int> slice_keys_;                // by attached tensor
  std::vector<SparseSlot>* sparse_ = nullptr;  // the reply's rows land here
  ExchangeSpans* spans_ = nullptr;
  ParamsReply reply_;         // reused
  std::string meta_;          // reused
  std::mutex call_mu_;        // held by Call; Heartbeat only tries it
  HeartbeatFrame heartbeat_;  // Heartbeat's, under call_mu_
  // The connection's counters, copied under call_mu_ (NoteBytes).
  std::atomic<uint64_t> pushed_seen_{0};
  std::atomic<uint64_t> pulled_seen_{0};
  std::string auth_token_;
};

}  // namespace pstrain::worker
