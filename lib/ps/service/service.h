#pragma once
// Service: puts a server's Engine (ps/engine/engine.h) on the network. It
// accepts connections, hands the Engine what they read (headers, meta, pieces,
// frames), what was written and what closed, ticks it every Engine::kTick
// with the time from its clock, and carries out what the Engine asks
// through the Outbox: frames sent scatter-gather from the parameters'
// storage, errors, closes, timers. Everything the server decides is the
// Engine's; what is here is Asio.
//
// It also drops a connection whose frame stalls mid-way for longer than
// `timeout` (a peer that stopped sending or stopped reading).
// Threading: everything runs on the io_context's thread. `*io`, `*server`
// and `*log` must outlive the Service.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "net/listener.h"
#include "net/shm_handover.h"
#include "ps/engine/engine.h"
#include "ps/engine/read_plan.h"
#include "ps/service/await_beats.h"
#include "report/event_log.h"

namespace pstrain::trace {
class Timeline;
}  // namespace pstrain::trace

namespace pstrain::ps {

class ServerSpans;

struct ServiceOptions {
  std::string host = "localhost";
  int port = 29500;  // 0: the kernel picks; see port()
  /// The Engine's --timeout and token (EngineOptions); the timeout is also
  /// how long a connection may stall mid-frame.
  EngineOptions engine;
  uint64_t max_frame_bytes = wire::kDefaultMaxFrameBytes;
  /// The time the Engine is told. Default: std::chrono::steady_clock.
  std::function<Time()> clock = [] { return EngineClock::now(); };
  /// --timeline: where the Engine's spans go (ps/service/server_spans.h); it
  /// must outlive the Service. nullptr (the default): none.
  trace::Timeline* timeline = nullptr;
};

class Service : private net::Connection::Handler, private Outbox {
 public:
  /// `fingerprint`: the server model's keys, which every worker must match.
  Service(asio::io_context* io, const JobSpec& spec,
          std::vector<wire::KeySpec> fingerprint, ParameterServer* server,
          report::EventLog* log, ServiceOptions options);
  ~Service() override;
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  static constexpr std::chrono::milliseconds kTick = Engine::kTick;

  /// One round of the housekeeping the timer runs every kTick, now: drops
  /// connections stalled mid-frame and ticks the Engine with the clock's
  /// time. On the io thread.
  void TickNow();

  /// Binds host:port. kUnavailable when the port is taken.
  Status Listen();
  int port() const { return listener_.port(); }

  /// From any thread (the BatchRunner's): hands `result` to the Engine on
  /// the io thread. The keys it borrows must stay until then.
  void PostBatchDone(const BatchResult& result);
  using SnapshotDone = Engine::SnapshotDone;
  /// See Engine::RequestSnapshot; `done` runs on the io thread.
  /// REQUIRES: on the io thread.
  void RequestSnapshot(uint64_t min_version, bool with_optimizer_state,
                       SnapshotDone done) {
    engine_.RequestSnapshot(min_version, with_optimizer_state, std::move(done),
                            Now());
  }
  /// See Engine::StopTraining. REQUIRES: on the io thread.
  void StopTraining() { engine_.StopTraining(Now()); }
  /// The Engine, for the server's own code to set up its parts before Run
  /// (Engine::master, ::batches, ::snapshots, ::handshake, ::steps) and to
  /// read them. REQUIRES: before Run, or on the io thread.
  Engine& engine() { return engine_; }
  const Engine& engine() const { return engine_; }

  /// Serves until every worker is done (ok) or the job fails: kTimeout
  /// naming the ranks waited for, kUnavailable naming a lost server.
  Status Run();

  /// Totals for the summary (share/doc/output.md): bytes_pushed,
  /// bytes_pulled (bytes), samples, steps, wall_seconds (first registration
  /// to last done), workers_lost, dropped_pushes, timed_out_steps,
  /// refused_pushes, discarded_steps, max_clock_gap, the workers' mean
  /// compute_seconds, communication_seconds and waiting_seconds, the
  /// staleness histogram and each worker's own stats.
  report::ServerStats Stats() const;

 private:
  Time Now() const { return options_.clock(); }
  net::Connection* Find(PeerId id) const;
  // shm_offer: a ticket for the handover, or why not.
  void AnswerShmOffer(net::Connection& conn, uint64_t request_id,
                      std::string_view meta);
  // A heartbeat to each peer that waits on a reply (AwaitBeats).
  void SendBeats();

  // net::Connection::Handler
  Status OnHeader(net::Connection& conn,
                  const wire::FrameHeader& header) override;
  Status OnMeta(net::Connection& conn, const wire::FrameHeader& header,
                std::string_view meta, uint64_t data_bytes,
                std::vector<asio::mutable_buffer>* dst) override;
  void OnPiece(net::Connection& conn, size_t index) override;
  bool OnPieceAt(net::Connection& conn, size_t index,
                 const uint8_t* data) override;
  void OnFrame(net::Connection& conn, const wire::FrameHeader& header,
               std::string_view meta) override;
  void OnWritten(net::Connection& conn, wire::MsgType type) override;
  void OnClose(net::Connection& conn, const Status& why) override;

  // Outbox
  void Send(PeerId peer, const OutFrame& frame) override;
  // A frame's send window and its place in the host's link order.
  void PaceOverTcp(net::Connection& conn, const OutFrame& frame);
  bool LocalWorkers() const;
  bool LocalPush(net::LinkTurn::Clock::time_point now, uint64_t round) const;
  void ResumeWrite(PeerId peer) override;
  void SendErrorAndClose(PeerId peer, uint64_t request_id,
                         const Status& status) override;
  void Close(PeerId peer, const Status& why) override;
  void Post() override;
  void WakeAt(Time when) override;
  void Shutdown() override;
  void Info(const std::string& line) override { log_->Info(line); }
  bool tracing() const override { return spans_ != nullptr; }
  void Trace(const TraceMark& mark) override;

  void Tick();
  void DropStalledConnections();

  asio::io_context* io_;
  report::EventLog* log_;
  ServiceOptions options_;
  net::Listener listener_;
  // The shared-memory handover (net/shm_handover.h); null under
  // --transport tcp or when it could not be had (shm_refusal_ says why).
  std::unique_ptr<net::ShmAcceptor> shm_;
  std::string shm_refusal_;
  asio::steady_timer timer_;       // ticks, then the grace period
  asio::steady_timer wake_timer_;  // Outbox::WakeAt
  bool shut_down_ = false;
  std::unordered_map<PeerId, std::shared_ptr<net::Connection>> conns_;
  std::unordered_map<const net::Connection*, PeerId> ids_;
  AwaitBeats beats_;       // --dead_after: heartbeats to waiting peers
  std::string beat_meta_;  // an empty heartbeat's meta
  PeerId next_id_ = 1;
  ReadPlan plan_;                       // reused for every frame
  std::unique_ptr<ServerSpans> spans_;  // --timeline
  uint64_t closed_bytes_read_ = 0;
  uint64_t closed_bytes_written_ = 0;
  Engine engine_;  // last: its requests reach the members above
};

}  // namespace pstrain::ps
