#pragma once
// Client: a blocking request/reply client over one Connection, for workers
// and tools. Each call runs its own io_context until the reply with the same
// request id is in or the deadline passes (Asio's blocking-with-timeout
// pattern), so a silent peer can never hang the caller.
// Not thread-safe: one thread uses a Client at a time.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>

#include "net/connection.h"
#include "net/handler_memory.h"
#include "util/status.h"

namespace pstrain::net {

class SendGate;

/// Where a reply's data section goes; called once the reply's meta is in.
class ReplySink {
 public:
  virtual ~ReplySink() = default;
  /// Same contract as Connection::Handler::OnMeta.
  virtual Status OnMeta(const wire::FrameHeader& header, std::string_view meta,
                        uint64_t data_bytes,
                        std::vector<asio::mutable_buffer>* dst) = 0;
  /// Whether to hear of each buffer of *dst as soon as it is in (OnPiece).
  virtual bool piecewise() const { return false; }
  /// Buffer `index` of *dst is in (piecewise sinks only).
  virtual void OnPiece(size_t index) { (void)index; }
};

class Client : private Connection::Handler {
 public:
  explicit Client(ConnectionOptions options = {});
  ~Client() override;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Connects to host:port, retrying every 100 ms while the peer refuses
  /// (it may not be up yet) until `timeout`. kTimeout names host and port;
  /// kInvalidArgument for a host that does not resolve.
  Status Connect(const std::string& host, int port,
                 std::chrono::milliseconds timeout);

  /// From the next Await on, a peer silent for `seconds` is lost
  /// (ConnectionOptions::dead_after; <= 0: never): set once the job's own
  /// --dead_after is known, which comes on a connection made before.
  void set_dead_after(double seconds) { options_.dead_after = seconds; }

  /// The frame to fill for the next Call.
  FrameBuffers& NewRequest();

  /// Sends `request` (from NewRequest) and waits up to `timeout` for the
  /// reply. A kError reply is returned as its Status (code and message as
  /// the peer sent them). On ok, *reply_type is the reply's type and the
  /// reply's meta stays readable through reply_meta() until the next Call;
  /// its data went where `sink` said. kTimeout when no reply came in time,
  /// kUnavailable when the peer closed, or, with ConnectionOptions::
  /// dead_after, when nothing at all came from it for that many seconds
  /// (the connection is then closed: a server holding a reply sends
  /// heartbeats, request id 0, which are read and dropped).
  Status Call(FrameBuffers& request, ReplySink* sink,
              std::chrono::milliseconds timeout, wire::MsgType* reply_type);
  /// Call in two halves: Start sends `request` (what the socket takes at
  /// once leaves then, the rest in Await) and runs what is ready without
  /// waiting, which may read a reply already in; Await waits for the reply,
  /// as Call does. Between them the caller works while the peer answers,
  /// so `sink`'s buffers must be free from Start on. REQUIRES: Await after
  /// each Start.
  Status Start(FrameBuffers& request, ReplySink* sink);
  Status Await(std::chrono::milliseconds timeout, wire::MsgType* reply_type);

  /// Lets gated requests (FrameBuffers::SetGate) of this client wait on
  /// `gate`, which must outlive the Client or the next WatchGate; a Call
  /// then writes such a request as the gate opens. nullptr: none.
  void WatchGate(SendGate* gate);

  /// Connection::SetSendWindow (bytes) on this client's connection; does
  /// nothing when not connected.
  void SetSendWindow(uint64_t bytes);

  std::string_view reply_meta() const { return reply_meta_; }
  /// Whether the last Call's error is one the peer sent (an error frame),
  /// rather than our own timeout or a lost connection.
  bool error_from_peer() const { return error_from_peer_; }
  bool connected() const { return conn_ && !conn_->closed(); }
  /// This end's address (Connection::local_address); "" when not connected.
  std::string local_address() const {
    return conn_ ? conn_->local_address() : "";
  }
  /// Between calls: reads what has come in without waiting. Heartbeats
  /// are dropped; rank 0's error frame for the connection (request id 0)
  /// is returned as its Status (error_from_peer() then true), and a closed
  /// connection as kUnavailable or why it closed. Ok otherwise.
  Status Poll();
  /// Connection::WriteNow: a small frame, from a thread other than the one
  /// that calls Call, while no Call runs. kUnavailable when not connected.
  Status WriteNow(std::string_view bytes);
  /// Moves the connection onto shared memory (net/shm_handover.h's
  /// OfferShm, which makes `stream` on io()). kUnavailable when not
  /// connected.
  Status UseShm(std::unique_ptr<ShmStream> stream);
  bool on_shm() const { return conn_ && conn_->on_shm(); }
  /// On shared memory: the words shared with the server for the host's
  /// link order (Connection::shm_link_words), kept mapped by the pointer
  /// whatever becomes of this client; nullptr otherwise.
  std::shared_ptr<ShmLinkWords> shm_link_words() const;
  /// Over TCP: the bytes of every frame written from now on count into
  /// `words` as pushes to another host (LinkTurn::CountInto) until the
  /// connection ends; nothing when not connected.
  void CountPushesInto(std::shared_ptr<ShmLinkWords> words);
  /// The round of the next frames (LinkTurn::set_round); nothing when not
  /// connected.
  void SetRound(uint64_t round) {
    if (conn_)
      conn_->link_turn().set_round(round);
  }
  /// The io_context the connection runs on (between calls, no thread runs
  /// it).
  asio::io_context& io() { return io_; }
  uint64_t bytes_read() const;
  uint64_t bytes_written() const;
  void Close();

 private:
  void ConnectBy(asio::ip::tcp::socket& socket,
                 const asio::ip::tcp::resolver::results_type& endpoints,
                 std::chrono::steady_clock::time_point deadline,
                 std::error_code* ec);
  Status OnMeta(Connection& conn, const wire::FrameHeader& header,
                std::string_view meta, uint64_t data_bytes,
                std::vector<asio::mutable_buffer>* dst) override;
  void OnPiece(Connection& conn, size_t index) override;
  void OnFrame(Connection& conn, const wire::FrameHeader& header,
               std::string_view meta) override;
  void OnClose(Connection& conn, const Status& why) override;
  // Await's watch: the connection closed, its peer silent for dead_after.
  Status Silent();

  ConnectionOptions options_;
  asio::io_context io_;
  std::shared_ptr<Connection> conn_;
  uint64_t next_request_id_ = 1;
  uint64_t awaited_id_ = 0;
  ReplySink* sink_ = nullptr;
  bool reply_done_ = false;
  bool error_from_peer_ = false;
  wire::MsgType reply_type_ = wire::MsgType::kAck;
  std::string reply_meta_;
  std::vector<size_t> tag_groups_;  // a tagged reply's: buffer i, descriptor i
  Status close_status_;
  bool closed_ = false;
  SendGate* gate_ = nullptr;
  int gate_watch_ = -1;
  // At most one wake-up is posted at a time, so one block of handler
  // memory serves them all and opening the gate never allocates.
  std::atomic<bool> wake_pending_{false};
  HandlerMemory wake_memory_;
};

}  // namespace pstrain::net
