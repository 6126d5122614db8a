#pragma once
// Connection: one connection that reads and writes pstrain frames with
// Asio, over TCP or, once moved there (UseShm), over shared memory
// (net/shm_stream.h); the TCP socket then stays open as the lifeline that
// tells when the peer is gone. Reads a frame in three steps (header + meta_len,
// meta, data), checks each with wire::FrameParser (the I/O-free parser the
// fuzzer runs), and asks its Handler where the data bytes go, so tensor bytes
// land straight in the storage that will use them. Writes are scatter-gather
// from FrameBuffers.
//
// Threading: all methods and all Handler callbacks run on the thread that
// runs the io_context. Lifetime: owned by shared_ptr (Asio handlers keep it
// alive); `*handler` must outlive the Connection or Close() must be called
// first.

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <asio/bind_allocator.hpp>
#include <asio/ip/tcp.hpp>

#include "net/asio_status.h"
#include "net/data_reads.h"
#include "net/frame_buffers.h"
#include "net/frame_pool.h"
#include "net/gated_writes.h"
#include "net/handler_memory.h"
#include "net/shm_stream.h"
#include "net/traffic.h"
#include "net/transport.h"
#include "net/write_pace.h"
#include "util/status.h"
#include "wire/frame.h"
#include "wire/frame_parser.h"

namespace pstrain::net {

struct ConnectionOptions {
  /// Largest body_len accepted, in bytes. Default: 4 GiB.
  uint64_t max_frame_bytes = wire::kDefaultMaxFrameBytes;
  /// Seconds (the job's --dead_after; <= 0: off) a peer may be silent.
  /// Over TCP the kernel probes an idle connection every second
  /// (SO_KEEPALIVE, TCP_KEEPIDLE and TCP_KEEPINTVL 1 s) and aborts it when
  /// the peer's host answers none for this long, so a host that goes
  /// silent without a FIN (its link down, its power off) ends an idle
  /// connection as a crash would. A Client waiting for a reply gives up on
  /// a peer it hears nothing from for this long (Client::Await), which
  /// also finds a stopped process, whose kernel answers probes. A live peer
  /// that does not read is not cut (no TCP_USER_TIMEOUT: since Linux 5.11
  /// it also ends a connection whose peer's window stays shut).
  double dead_after = 0;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  class Handler {
   public:
    virtual ~Handler() = default;
    /// A frame's header is in, before anything is allocated for its meta:
    /// an error refuses the frame (error frame, connection closed), so a
    /// peer not yet known cannot make us allocate up to kMaxMetaBytes.
    virtual Status OnHeader(Connection& conn, const wire::FrameHeader& header) {
      (void)conn;
      (void)header;
      return Status::Ok();
    }
    /// A frame's header and meta are in and passed wire::ValidateFrame:
    /// the meta decodes as header.type says, and `data_bytes` is what its
    /// descriptors add up to (0 for a message without tensors). Append to
    /// *dst the buffers the data section is read into, `data_bytes` bytes
    /// in all, or return an error: the peer then gets an error frame and
    /// the connection is closed.
    /// Calling conn.ReadPieceByPiece() here makes the connection read one
    /// buffer at a time and call OnPiece after each, so that buffers may
    /// share memory (a bounded chunk reused for a large tensor). A tagged
    /// frame (wire::kFrameTagged; `data_bytes` counts its tags) is read
    /// only once its descriptors' buffers are named by conn.ReadTagged:
    /// its descriptors then come in whatever order the sender chose.
    virtual Status OnMeta(Connection& conn, const wire::FrameHeader& header,
                          std::string_view meta, uint64_t data_bytes,
                          std::vector<asio::mutable_buffer>* dst) = 0;
    /// Buffer `index` of *dst is in (piece-by-piece reads only).
    virtual void OnPiece(Connection& conn, size_t index) {
      (void)conn;
      (void)index;
    }
    /// Buffer `index`'s bytes are in, at `data` in memory the peer shares
    /// (a frame read in place: conn.ReadInPlace() in OnMeta). Return true
    /// when they were taken from there; false to have them copied into
    /// the buffer, then OnPiece. They stay put until this returns, but
    /// are the peer's: do not keep the pointer, and read them as values
    /// that any bits leave safe (a peer may change them as we read).
    virtual bool OnPieceAt(Connection& conn, size_t index,
                           const uint8_t* data) {
      (void)conn;
      (void)index;
      (void)data;
      return false;
    }
    /// The whole frame is in (meta as passed to OnMeta, data in *dst).
    virtual void OnFrame(Connection& conn, const wire::FrameHeader& header,
                         std::string_view meta) = 0;
    /// A frame of `type` queued with Send has left (or failed to leave, on a
    /// closing connection): its borrowed data may change now.
    virtual void OnWritten(Connection& conn, wire::MsgType type) {
      (void)conn;
      (void)type;
    }
    /// The connection is closed: ok for an orderly close by the peer or us,
    /// else why (a bad frame, a reset). Called once.
    virtual void OnClose(Connection& conn, const Status& why) = 0;
  };

  Connection(asio::ip::tcp::socket socket, Handler* handler,
             ConnectionOptions options = {});
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Sets TCP_NODELAY and starts reading frames.
  void Start();

  /// A frame to fill and pass to Send; taken from a per-connection pool.
  FrameBuffers& NewFrame() { return frames_.Take(); }
  /// Queues `frame` (from NewFrame) for writing; frames go out in order. A
  /// gated frame (FrameBuffers::SetGate) is written as its gate opens; the
  /// owner calls ResumeWrite when it does. An aborted gate closes the
  /// connection (the peer cannot be told which bytes were never sent).
  void Send(FrameBuffers& frame);
  /// The gate of the frame being written may have opened further.
  void ResumeWrite();
  /// Sends an error frame answering `request_id`, then closes.
  void SendErrorAndClose(uint64_t request_id, const Status& status);
  /// See Handler::OnMeta; applies to the frame being read.
  void ReadPieceByPiece() { reads_.ReadPieceByPiece(); }
  /// Over shared memory, for a frame read piece by piece: each buffer
  /// that fits the ring is offered where it lies (Handler::OnPieceAt)
  /// once all of it is in; one that wraps round the ring's end is copied,
  /// as over TCP. Applies to the frame being read; no effect on TCP.
  void ReadInPlace() {
    if (shm_)
      reads_.ReadInPlace(shm_->ring_bytes());
  }
  /// See Handler::OnMeta: descriptor i of a tagged frame's meta (tensors,
  /// then rows) is read into buffers [first[i], first[i + 1]) of *dst (the
  /// last to the end); `first` ascends. Applies to the frame being read.
  void ReadTagged(const std::vector<size_t>& first) { reads_.Name(first); }
  /// Writes `bytes` (a small frame) at once with one send() on the socket,
  /// from any thread, while no Send of this Connection is in flight and no
  /// other thread runs its io_context (the caller ensures both). A system
  /// call on the descriptor is safe from any thread where Asio's socket
  /// object is not. kUnavailable on an error or a short write.
  Status WriteNow(std::string_view bytes);
  /// Moves the connection onto `stream` (net/shm_handover.h): the frames
  /// after the one being handled go through it, both ways. kUnavailable
  /// when closed or in the middle of reading a frame (the peer must wait
  /// for the handover's answer before it sends again).
  Status UseShm(std::unique_ptr<ShmStream> stream);
  bool on_shm() const { return shm_ != nullptr; }
  /// On shared memory: the words this connection's two ends share for
  /// their host's link order; nullptr over TCP.
  ShmLinkWords* shm_link_words() const {
    return shm_ ? shm_->link_words() : nullptr;
  }
  /// Over TCP: this connection's place in its host's link order (counts
  /// its frames' bytes as pushes, or holds its tagged frames' groups).
  LinkTurn& link_turn() { return pace_.turn(); }
  /// Over TCP, from now on: a tagged frame's next group is chosen only
  /// once fewer than `bytes` of what was written are still unsent in the
  /// kernel (TCP_NOTSENT_LOWAT), so that a group that becomes ready
  /// overtakes all but about that many bytes; bytes on the wire are not
  /// bounded, so the link's rate is not. 0: chosen as soon as the last is
  /// written. Errors are ignored (no window then).
  void SetSendWindow(uint64_t bytes) { pace_.SetSendWindow(bytes); }
  /// Closes now; OnClose runs with an ok Status unless already closed.
  void Close();
  /// Closes now without telling the peer (it may not be listening);
  /// OnClose runs with `why` unless already closed.
  void CloseWith(const Status& why) { Finish(why); }

  bool closed() const { return closed_; }
  /// Whether a frame is being written (Send's queue is not yet drained).
  bool writing() const { return writing_; }
  /// "127.0.0.1:53124", or "?" when the socket is gone.
  const std::string& remote() const { return remote_; }
  /// This end's address ("127.0.0.1"), the interface that reaches the peer;
  /// "" when the socket is gone.
  std::string local_address() const;
  /// Whether a frame has been on its way for longer than `limit` at `now`:
  /// one whose first bytes came in but not yet its last (a peer that stopped
  /// mid-frame), or one being written that the peer does not take in. Idle
  /// time between frames never counts (a worker may compute for long). The
  /// owner's watchdog calls this and closes stalled connections; nothing
  /// else waits on them, as every read and write is asynchronous.
  bool StalledFor(std::chrono::steady_clock::time_point now,
                  std::chrono::milliseconds limit) const {
    return traffic_.StalledFor(now, limit);
  }

  /// Bytes read and written so far, headers included.
  uint64_t bytes_read() const { return traffic_.bytes_read(); }
  /// Traffic::arrivals: grows whenever bytes come in.
  uint64_t arrivals() const { return traffic_.arrivals(); }
  uint64_t bytes_written() const { return traffic_.bytes_written(); }

  /// Free for the Handler: which peer this is (e.g. a rank), -1 if unknown.
  int peer = -1;

 private:
  void ReadHead();
  void OnHeadBytes(const std::error_code& ec, size_t n);
  void OnHead(const std::error_code& ec);
  void OnMetaRead(const std::error_code& ec);
  void OnDataRead(const std::error_code& ec);
  void ReadData();
  void ReadBuffers(const DataReads::Step& step);
  void ReadPieceAt(const DataReads::Step& step);
  /// Binds `fn` to this connection's read (or write) handler memory.
  template <typename Fn>
  auto OnRead(Fn fn) {
    return asio::bind_allocator(HandlerAllocator<int>(&read_memory_),
                                std::move(fn));
  }
  template <typename Fn>
  auto OnWrite(Fn fn) {
    return asio::bind_allocator(HandlerAllocator<int>(&write_memory_),
                                std::move(fn));
  }
  // Reads and writes on whichever transport the connection is on.
  template <typename Buffers, typename Fn>
  void ReadAll(const Buffers& buffers, Fn fn);
  template <typename Buffers, typename Fn>
  void WriteAll(const Buffers& buffers, Fn fn);
  // Whether a read's completion ends here: the connection closed
  // meanwhile, or the read failed (and so does the connection).
  bool ReadEnded(const std::error_code& ec);
  Status ReadError(const std::error_code& ec) const;
  // A TCP read completed after the move to shared memory: the lifeline.
  void OnLifeline(const std::error_code& ec, size_t n);
  void WriteNext();
  // Writes what GatedWrites lets go of the front frame (all of an ungated
  // one), then the rest as the gate opens; while none is, no write is in
  // flight and the time is ours, not a stalled peer's. A write completes
  // once the kernel has taken its bytes: with a send window, a tagged
  // frame's next group is chosen only once the kernel has sent all but the
  // window of them.
  void WriteGated();
  void WriteOpen(FrameBuffers* frame);
  void FrameWritten(FrameBuffers* frame, const std::error_code& ec);
  void Fail(const Status& status, uint64_t request_id, bool tell_peer);
  void Finish(const Status& why);

  asio::ip::tcp::socket socket_;
  std::unique_ptr<ShmStream> shm_;  // set once moved to shared memory
  Handler* handler_;
  ConnectionOptions options_;
  std::string remote_;
  char head_[wire::FrameParser::kPrefixBytes];  // header and meta_len
  wire::FrameParser parser_;  // checks every frame; holds its header
  std::string meta_;
  std::vector<asio::mutable_buffer> data_dst_;
  DataReads reads_;  // the data section of the frame being read
  FramePool frames_;
  std::deque<FrameBuffers*> write_queue_;
  bool writing_ = false;
  GatedWrites gated_;              // the gated frame at the front
  WritePace pace_;                 // when its next group may go, over TCP
  bool waiting_for_gate_ = false;  // it waits for its gate, no write in flight
  bool close_after_write_ = false;
  bool closed_ = false;
  Status pending_failure_;      // reported by OnClose after the error frame
  HandlerMemory read_memory_;   // the one read in flight
  HandlerMemory write_memory_;  // the one write in flight
  Traffic traffic_;  // bytes moved, and since when a frame is on its way
};

}  // namespace pstrain::net
